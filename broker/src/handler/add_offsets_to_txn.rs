//! AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the open transaction, so
//! that TxnOffsetCommit can write there and the commit marker applies the offsets.

use std::sync::Arc;

use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse};

use crate::context::BrokerContext;
use crate::handler::errors::fenced_for_version;

/// The first version whose clients know PRODUCER_FENCED (KIP-588).
const PRODUCER_FENCED_VERSION: i16 = 2;

pub async fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
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
    let error = result
        .err()
        .map(|e| fenced_for_version(e.into(), version, PRODUCER_FENCED_VERSION));
    AddOffsetsToTxnResponse::default().with_error_code(super::errors::code(error))
}
