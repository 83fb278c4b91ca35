//! CreatePartitions: grows a topic's partition count.

use std::sync::Arc;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::error::BrokerError;
use crate::handler::errors::error_for;
use crate::server::BrokerContext;

pub fn handle(
    context: &Arc<BrokerContext>,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let results = request
        .topics
        .into_iter()
        .map(|topic| {
            let result = CreatePartitionsTopicResult::default().with_name(topic.name.clone());
            let outcome = check_assignments(&topic).and_then(|()| {
                context.topics.create_partitions(
                    topic.name.as_str(),
                    topic.count,
                    request.validate_only,
                )
            });
            match outcome {
                Ok(()) => result,
                Err(error) => result
                    .with_error_code(error_for(&error).code())
                    .with_error_message(Some(StrBytes::from_string(error.to_string()))),
            }
        })
        .collect();
    CreatePartitionsResponse::default().with_results(results)
}

fn check_assignments(
    topic: &kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic,
) -> Result<(), BrokerError> {
    for assignment in topic.assignments.iter().flatten() {
        if assignment.broker_ids.len() != 1 {
            return Err(BrokerError::InvalidReplicationFactor {
                factor: assignment.broker_ids.len() as i32,
                reason: "this broker runs alone: only 1 replica is possible".into(),
            });
        }
    }
    Ok(())
}
