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
            let outcome = refuse_in_cluster(context)
                .and_then(|()| check_assignments(context, &topic))
                .and_then(|()| {
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

/// Partitions are added by the controller in cluster mode, which does not take them yet.
fn refuse_in_cluster(context: &Arc<BrokerContext>) -> Result<(), BrokerError> {
    match context.cluster {
        Some(_) => Err(BrokerError::InvalidRequest(
            "adding partitions in cluster mode is not supported yet".into(),
        )),
        None => Ok(()),
    }
}

/// As in Kafka: no assignments (null) lets the broker place the new partitions; otherwise there
/// must be one assignment per new partition, each naming only this broker.
fn check_assignments(
    context: &Arc<BrokerContext>,
    topic: &kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic,
) -> Result<(), BrokerError> {
    let Some(assignments) = &topic.assignments else {
        return Ok(());
    };
    let current = context
        .topics
        .get(topic.name.as_str())
        .map_or(0, |t| t.partition_count());
    let new_partitions = topic.count - current;
    if new_partitions > 0 && assignments.len() as i32 != new_partitions {
        return Err(BrokerError::InvalidReplicaAssignment(format!(
            "increasing the partition count by {new_partitions} needs {new_partitions} assignments, {} given",
            assignments.len()
        )));
    }
    for assignment in assignments {
        if assignment.broker_ids.len() != 1 {
            return Err(BrokerError::InvalidReplicationFactor {
                factor: assignment.broker_ids.len() as i32,
                reason: "this broker runs alone: only 1 replica is possible".into(),
            });
        }
        if assignment.broker_ids[0].0 != context.node_id {
            return Err(BrokerError::InvalidReplicaAssignment(format!(
                "broker {} does not exist",
                assignment.broker_ids[0].0
            )));
        }
    }
    Ok(())
}
