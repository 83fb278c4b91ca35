//! OffsetForLeaderEpoch (KIP-101/KIP-320): the end offset of a leader epoch.
//!
//! Answered by the leader from its leader epoch cache (`log::leader_epochs`): the current epoch
//! ends at the log end, an older one where the next epoch began; epochs above ours are unknown.
//! Followers ask it before fetching from a new leader and truncate where their epoch ended.

use std::sync::Arc;

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::security::acl::Operation;

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    // A follower's request needs CLUSTER_ACTION, a client's DESCRIBE on each topic (Kafka).
    let follower = request.replica_id.0 >= 0;
    let follower_allowed = follower && access.allows_cluster(Operation::ClusterAction);
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let authorized = match follower {
                true => follower_allowed,
                false => access.allows_topic(Operation::Describe, topic.topic.as_str()),
            };
            let missing = match authorized {
                true => ResponseError::UnknownTopicOrPartition,
                false => ResponseError::TopicAuthorizationFailed,
            };
            let found = context
                .topics
                .get(topic.topic.as_str())
                .filter(|_| authorized);
            let partitions = topic
                .partitions
                .into_iter()
                .map(|requested| {
                    let result = EpochEndOffset::default()
                        .with_partition(requested.partition)
                        .with_leader_epoch(-1)
                        .with_end_offset(-1);
                    let partition = match &found {
                        Some(topic) => crate::handler::led_partition(topic, requested.partition),
                        None => Err(missing),
                    };
                    let checked = partition.and_then(|partition| {
                        partition.check_leader_epoch(requested.current_leader_epoch)?;
                        Ok(partition)
                    });
                    match checked {
                        Err(error) => result.with_error_code(error.code()),
                        Ok(partition) => {
                            let (epoch, end_offset) =
                                partition.end_offset_for_epoch(requested.leader_epoch);
                            result.with_leader_epoch(epoch).with_end_offset(end_offset)
                        }
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(topic.topic)
                .with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}
