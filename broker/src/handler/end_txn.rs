//! EndTxn: commit or abort the producer's open transaction; answered once every marker is
//! written (or, when markers take long, once the decision is persisted — the coordinator goes on
//! writing them, and meanwhile answers CONCURRENT_TRANSACTIONS for the id). From v5 (transaction version 2, KIP-890 part 2)
//! every EndTxn bumps the producer's epoch and the answer carries the id and epoch to go on with.

use std::sync::Arc;

use kafka_protocol::messages::{EndTxnRequest, EndTxnResponse, ProducerId};

use crate::context::BrokerContext;
use crate::handler::errors::fenced_for_version;

/// The first EndTxn version of transaction version 2.
const EPOCH_BUMP_VERSION: i16 = 5;
/// The first version whose clients know PRODUCER_FENCED (KIP-588).
const PRODUCER_FENCED_VERSION: i16 = 2;

pub async fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    request: EndTxnRequest,
) -> EndTxnResponse {
    let bump_epoch = version >= EPOCH_BUMP_VERSION;
    let result = context
        .transactions
        .end_txn(
            &context.txn_services(),
            request.transactional_id.as_str(),
            request.producer_id.0,
            request.producer_epoch,
            request.committed,
            bump_epoch,
        )
        .await;
    let response = EndTxnResponse::default()
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    match result {
        Ok((producer_id, epoch)) if bump_epoch => response
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(epoch),
        Ok(_) => response,
        Err(error) => response.with_error_code(
            fenced_for_version(error.into(), version, PRODUCER_FENCED_VERSION).code(),
        ),
    }
}
