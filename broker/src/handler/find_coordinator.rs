//! FindCoordinator: this broker coordinates every group and every transactional id (creating
//! `__consumer_offsets` / `__transaction_state` on first use, as Kafka does).

use std::sync::Arc;

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::handler::errors::error_for;
use crate::server::BrokerContext;

const GROUP_KEY_TYPE: i8 = 0;

const TRANSACTION_KEY_TYPE: i8 = 1;

fn answer(context: &Arc<BrokerContext>, key_type: i8) -> Result<(), (ResponseError, String)> {
    let ready = match key_type {
        GROUP_KEY_TYPE => context.groups.offsets_topic(&context.topics).map(|_| ()),
        TRANSACTION_KEY_TYPE => context
            .transactions
            .state_topic(&context.topics)
            .map(|_| ()),
        other => {
            return Err((
                ResponseError::InvalidRequest,
                format!("unknown coordinator key type {other}"),
            ))
        }
    };
    ready.map_err(|error| (error_for(&error), error.to_string()))
}

pub fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let host = StrBytes::from_string(context.advertised_host.clone());
    let port = context.advertised_port as i32;
    let node = BrokerId(context.node_id);
    if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .into_iter()
            .map(|key| match answer(context, request.key_type) {
                Ok(()) => Coordinator::default()
                    .with_key(key)
                    .with_node_id(node)
                    .with_host(host.clone())
                    .with_port(port),
                Err((error, message)) => Coordinator::default()
                    .with_key(key)
                    .with_node_id(BrokerId(-1))
                    .with_port(-1)
                    .with_error_code(error.code())
                    .with_error_message(Some(StrBytes::from_string(message))),
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    match answer(context, request.key_type) {
        Ok(()) => FindCoordinatorResponse::default()
            .with_node_id(node)
            .with_host(host)
            .with_port(port),
        Err((error, message)) => {
            let response = FindCoordinatorResponse::default()
                .with_error_code(error.code())
                .with_node_id(BrokerId(-1))
                .with_port(-1);
            if version >= 1 {
                response.with_error_message(Some(StrBytes::from_string(message)))
            } else {
                response
            }
        }
    }
}
