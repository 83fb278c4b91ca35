//! EndTxn: commit or abort the producer's open transaction; answered once every marker is
//! written (the coordinator writes them itself).

use std::sync::Arc;

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse};

use crate::server::BrokerContext;

pub fn handle(context: &Arc<BrokerContext>, request: EndTxnRequest) -> EndTxnResponse {
    let result = context.transactions.end_txn(
        &context.txn_services(),
        request.transactional_id.as_str(),
        request.producer_id.0,
        request.producer_epoch,
        request.committed,
    );
    EndTxnResponse::default().with_error_code(result.err().map_or(0, |e| e.code()))
}
