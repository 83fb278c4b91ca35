//! InitProducerId: a new producer id (epoch 0) for an idempotent producer. Ids are unique across
//! restarts (`producer::ProducerIdManager`). Like Kafka, a request without a transactional id
//! always gets a fresh id, also when it names its current id and epoch (KIP-360 epoch bump).

use std::sync::Arc;

use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use kafka_protocol::ResponseError;

use crate::handler::errors::log_error;
use crate::server::BrokerContext;

pub fn handle(
    context: &Arc<BrokerContext>,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let failed = |error: ResponseError| {
        InitProducerIdResponse::default()
            .with_error_code(error.code())
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    if let Some(transactional_id) = &request.transactional_id {
        tracing::warn!(
            transactional_id = %transactional_id.as_str(),
            "transactional producers are not supported yet"
        );
        return failed(ResponseError::InvalidRequest);
    }
    match context.producer_ids.next_id() {
        Ok(id) => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(0),
        Err(error) => {
            tracing::error!(%error, "cannot allocate a producer id");
            failed(log_error(&error))
        }
    }
}
