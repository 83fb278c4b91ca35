//! InitProducerId: a new producer id (epoch 0) for an idempotent producer. Ids are unique across
//! restarts (`producer::ProducerIdManager`). Like Kafka, a request without a transactional id
//! always gets a fresh id, also when it names its current id and epoch (KIP-360 epoch bump).
//! With a transactional id the transaction coordinator answers: the next epoch of the id's
//! producer, fencing the previous incarnation and aborting its open transaction.

use std::sync::Arc;

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::handler::errors::{fenced_for_version, producer_id_error};

/// The first version whose clients know PRODUCER_FENCED (KIP-588).
const PRODUCER_FENCED_VERSION: i16 = 4;

pub async fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let failed = |error: ResponseError| {
        InitProducerIdResponse::default()
            .with_error_code(error.code())
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    if let Some(transactional_id) = &request.transactional_id {
        let current =
            (request.producer_id.0 >= 0).then_some((request.producer_id.0, request.producer_epoch));
        let initialised = context
            .transactions
            .init_producer_id(
                &context.txn_services(),
                transactional_id.as_str(),
                request.transaction_timeout_ms,
                current,
            )
            .await;
        return match initialised {
            Ok((producer_id, epoch)) => InitProducerIdResponse::default()
                .with_producer_id(ProducerId(producer_id))
                .with_producer_epoch(epoch),
            Err(error) => failed(fenced_for_version(
                error.into(),
                version,
                PRODUCER_FENCED_VERSION,
            )),
        };
    }
    match context.producer_ids.next_id() {
        Ok(id) => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(0),
        Err(error) => {
            tracing::warn!(%error, "cannot hand out a producer id");
            failed(producer_id_error(&error))
        }
    }
}
