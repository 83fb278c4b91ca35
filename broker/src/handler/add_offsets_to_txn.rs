//! AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the open transaction, so
//! that TxnOffsetCommit can write there and the commit marker applies the offsets.

use std::sync::Arc;

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

use crate::context::BrokerContext;

pub async fn handle(
    context: &Arc<BrokerContext>,
    request: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    let result = context
        .transactions
        .add_offsets(
            &context.txn_services(),
            request.transactional_id.as_str(),
            request.producer_id.0,
            request.producer_epoch,
            request.group_id.as_str(),
        )
        .await;
    AddOffsetsToTxnResponse::default().with_error_code(super::errors::code(result.err()))
}
