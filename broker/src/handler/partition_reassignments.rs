//! AlterPartitionReassignments and ListPartitionReassignments (KIP-455): moving a partition's
//! replicas to other brokers. The controller adds the new replicas, which catch up like any
//! follower; once all are in the ISR it drops the old ones (`cluster::Controller::reassign`).
//! Alone, a broker has nowhere to move a replica to.

use std::sync::Arc;

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::quorum::rpc::ControllerRequest;
use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::handler::errors::error_for;

pub async fn alter(
    context: &Arc<BrokerContext>,
    request: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let mut responses = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for partition in &topic.partitions {
            let target: Option<Vec<i32>> = partition
                .replicas
                .as_ref()
                .map(|replicas| replicas.iter().map(|id| id.0).collect());
            let index = partition.partition_index;
            let outcome = reassign(
                context,
                topic.name.as_str(),
                index,
                target,
                request.allow_replication_factor_change,
            )
            .await;
            let response = ReassignablePartitionResponse::default().with_partition_index(index);
            partitions.push(match outcome {
                Ok(()) => response,
                Err((error, message)) => response
                    .with_error_code(error.code())
                    .with_error_message(Some(StrBytes::from_string(message))),
            });
        }
        responses.push(
            ReassignableTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(request.allow_replication_factor_change)
        .with_responses(responses)
}

async fn reassign(
    context: &Arc<BrokerContext>,
    topic: &str,
    partition: i32,
    target: Option<Vec<i32>>,
    allow_replication_factor_change: bool,
) -> Result<(), (ResponseError, String)> {
    let failed = |error: BrokerError| (error_for(&error), error.to_string());
    let Some(cluster) = &context.cluster else {
        return Err((
            ResponseError::InvalidReplicaAssignment,
            "this broker runs alone: there is no other broker to move a replica to".into(),
        ));
    };
    if let Some(target) = &target {
        let image = cluster.image().image;
        let current = image
            .topic_by_name(topic)
            .and_then(|t| t.partitions.get(partition as usize))
            .ok_or_else(|| {
                failed(BrokerError::UnknownTopicOrPartition {
                    topic: topic.into(),
                    partition,
                })
            })?;
        let current_factor = current.target_replicas().len();
        if !allow_replication_factor_change && target.len() != current_factor {
            return Err((
                ResponseError::InvalidReplicationFactor,
                format!(
                    "{topic}-{partition} has {current_factor} replicas; the request keeps the replication factor"
                ),
            ));
        }
    }
    let request = ControllerRequest::Reassign {
        name: topic.to_string(),
        partition,
        target,
    };
    cluster.request(request).await.map(|_| ()).map_err(failed)
}

pub fn list(
    context: &Arc<BrokerContext>,
    request: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let Some(cluster) = &context.cluster else {
        return ListPartitionReassignmentsResponse::default();
    };
    let image = cluster.image().image;
    let wanted = |topic: &str, partition: i32| match &request.topics {
        None => true,
        Some(topics) => topics
            .iter()
            .any(|t| t.name.as_str() == topic && t.partition_indexes.contains(&partition)),
    };
    let ids = |brokers: &[i32]| brokers.iter().map(|id| BrokerId(*id)).collect::<Vec<_>>();
    let mut topics = Vec::new();
    for topic in image.topics.values() {
        let partitions: Vec<OngoingPartitionReassignment> = topic
            .partitions
            .iter()
            .enumerate()
            .filter(|(index, state)| state.is_reassigning() && wanted(&topic.name, *index as i32))
            .map(|(index, state)| {
                OngoingPartitionReassignment::default()
                    .with_partition_index(index as i32)
                    .with_replicas(ids(&state.replicas))
                    .with_adding_replicas(ids(&state.adding_replicas))
                    .with_removing_replicas(ids(&state.removing_replicas))
            })
            .collect();
        if !partitions.is_empty() {
            topics.push(
                OngoingTopicReassignment::default()
                    .with_name(TopicName(StrBytes::from_string(topic.name.clone())))
                    .with_partitions(partitions),
            );
        }
    }
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    ListPartitionReassignmentsResponse::default().with_topics(topics)
}
