//! CreatePartitions: grows a topic's partition count — alone here, in a cluster through the
//! controller (which places the new partitions over the live brokers).

use std::sync::Arc;

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::cluster::controller::check_operation_records;
use crate::cluster::member::ClusterMember;
use crate::cluster::quorum::rpc::ControllerRequest;
use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::handler::access::Access;
use crate::handler::errors::error_for;
use crate::security::acl::Operation;

pub async fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let allowed =
        |topic: &CreatePartitionsTopic| access.allows_topic(Operation::Alter, topic.name.as_str());
    let records: u64 = request
        .topics
        .iter()
        .filter(|topic| allowed(topic))
        .map(|topic| partitions_added(context, topic))
        .sum();
    let too_large = check_operation_records(records).err();
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let result = CreatePartitionsTopicResult::default().with_name(topic.name.clone());
        // ALTER on the topic, as Kafka (before its existence is looked at).
        if !allowed(&topic) {
            results.push(
                result
                    .with_error_code(kafka_protocol::ResponseError::TopicAuthorizationFailed.code())
                    .with_error_message(None),
            );
            continue;
        }
        let outcome = match (&too_large, &context.cluster) {
            // Kafka's controller fails the whole request.
            (Some(error), _) => Err(BrokerError::from(error.clone())),
            (None, Some(cluster)) => {
                create_in_cluster(cluster, &topic, request.validate_only).await
            }
            (None, None) => check_assignments(context, &topic).and_then(|()| {
                context.topics.create_partitions(
                    topic.name.as_str(),
                    topic.count,
                    request.validate_only,
                )
            }),
        };
        results.push(match outcome {
            Ok(()) => result,
            Err(error) => result
                .with_error_code(error_for(&error).code())
                .with_error_message(Some(StrBytes::from_string(error.to_string()))),
        });
    }
    CreatePartitionsResponse::default().with_results(results)
}

/// How many partitions growing `topic` would add (a metadata record each); none for a topic
/// unknown or not growing, which is refused on its own.
fn partitions_added(context: &BrokerContext, topic: &CreatePartitionsTopic) -> u64 {
    let name = topic.name.as_str();
    let current = match &context.cluster {
        Some(cluster) => cluster
            .image()
            .image
            .topic_by_name(name)
            .map(|t| t.partitions.len() as i64),
        None => context
            .topics
            .get(name)
            .map(|t| i64::from(t.partition_count())),
    };
    current.map_or(0, |current| {
        (i64::from(topic.count) - current).max(0) as u64
    })
}

/// In a cluster the controller places the new partitions (or takes the given assignments);
/// the answer comes once this broker's image holds them.
async fn create_in_cluster(
    cluster: &Arc<ClusterMember>,
    topic: &CreatePartitionsTopic,
    validate_only: bool,
) -> Result<(), BrokerError> {
    let name = topic.name.as_str();
    let image = cluster.image().image;
    let current = image
        .topic_by_name(name)
        .ok_or_else(|| BrokerError::UnknownTopic {
            topic: name.to_string(),
        })?
        .partitions
        .len() as i32;
    if topic.count <= current {
        return Err(BrokerError::InvalidPartitions {
            count: topic.count,
            reason: format!(
                "topic {name} has {current} partitions; it can only grow (asked for {})",
                topic.count
            ),
        });
    }
    if validate_only {
        return Ok(());
    }
    let assignments = topic.assignments.as_ref().map(|assignments| {
        assignments
            .iter()
            .map(|a| a.broker_ids.iter().map(|id| id.0).collect())
            .collect()
    });
    let request = ControllerRequest::CreatePartitions {
        name: name.to_string(),
        count: topic.count,
        assignments,
    };
    cluster.request(request).await.map(|_| ())
}

/// As in Kafka: no assignments (null) lets the broker place the new partitions; otherwise there
/// must be one assignment per new partition, each naming only this broker.
fn check_assignments(
    context: &Arc<BrokerContext>,
    topic: &CreatePartitionsTopic,
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
