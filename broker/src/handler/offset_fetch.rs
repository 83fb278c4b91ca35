//! OffsetFetch: committed offsets of one group (v1–7) or several (v8+). Partitions without a
//! commit answer offset -1. With `require_stable` (v7+, KIP-447) a partition whose offset an
//! open transaction is committing answers UNSTABLE_OFFSET_COMMIT, and the client retries.
//! Authorization as Kafka's: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED) and on
//! each topic (a named one answers TOPIC_AUTHORIZATION_FAILED, all-topics leaves it out).

use std::sync::Arc;

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::group::offsets::CommittedOffset;
use crate::handler::access::Access;
use crate::security::acl::Operation;

type Found = Vec<(String, i32, Option<CommittedOffset>)>;
/// (partition index, committed offset if any)
type PartitionOffsets = Vec<(i32, Option<CommittedOffset>)>;

fn by_topic(found: Found) -> Vec<(String, PartitionOffsets)> {
    let mut topics: Vec<(String, PartitionOffsets)> = Vec::new();
    for (topic, partition, offset) in found {
        match topics.iter_mut().find(|(name, _)| *name == topic) {
            Some((_, partitions)) => partitions.push((partition, offset)),
            None => topics.push((topic, vec![(partition, offset)])),
        }
    }
    topics
}

/// The offsets of the topics the principal may DESCRIBE; a named topic it may not is kept with
/// no offset and returned among the refused.
fn authorized(
    access: &Access,
    all_topics: bool,
    found: Found,
) -> (Found, std::collections::HashSet<String>) {
    let mut refused = std::collections::HashSet::new();
    let kept = found
        .into_iter()
        .filter_map(|(topic, partition, offset)| {
            if access.allows_topic(Operation::Describe, &topic) {
                return Some((topic, partition, offset));
            }
            refused.insert(topic.clone());
            (!all_topics).then_some((topic, partition, None))
        })
        .collect();
    (kept, refused)
}

fn values(offset: &Option<CommittedOffset>) -> (i64, i32, String) {
    match offset {
        Some(o) => (o.offset, o.leader_epoch, o.metadata.clone()),
        None => (-1, -1, String::new()),
    }
}

#[allow(clippy::too_many_lines)] // both request versions and their checks; to be split (#51)
pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    let require_stable = version >= 7 && request.require_stable;
    let group_refused = ResponseError::GroupAuthorizationFailed.code();
    // KIP-447: with require_stable, an offset an open transaction is changing is unstable.
    let unstable = |group: &str, topic: &str, partition: i32| -> i16 {
        if require_stable && context.groups.has_pending_offset(group, topic, partition) {
            ResponseError::UnstableOffsetCommit.code()
        } else {
            0
        }
    };
    if version >= 8 {
        let groups = request
            .groups
            .into_iter()
            .map(|group| {
                if !access.allows_group(Operation::Describe, &group.group_id) {
                    return OffsetFetchResponseGroup::default()
                        .with_group_id(group.group_id)
                        .with_error_code(group_refused);
                }
                if let Some(error) = context.groups.coordinator_error(&group.group_id) {
                    return OffsetFetchResponseGroup::default()
                        .with_group_id(group.group_id)
                        .with_error_code(super::errors::code(Some(error)));
                }
                let wanted = group.topics.map(|topics| {
                    topics
                        .into_iter()
                        .flat_map(|t| {
                            t.partition_indexes
                                .into_iter()
                                .map(move |p| (t.name.to_string(), p))
                        })
                        .collect()
                });
                let all_topics = wanted.is_none();
                let found = context.groups.fetch_offsets(&group.group_id, wanted);
                let (found, refused) = authorized(access, all_topics, found);
                let error = |topic: &str, index: i32| match refused.contains(topic) {
                    true => ResponseError::TopicAuthorizationFailed.code(),
                    false => unstable(&group.group_id, topic, index),
                };
                let topics = by_topic(found)
                    .into_iter()
                    .map(|(topic, partitions)| {
                        let partitions = partitions
                            .into_iter()
                            .map(|(index, offset)| {
                                let (committed, epoch, metadata) = values(&offset);
                                OffsetFetchResponsePartitions::default()
                                    .with_partition_index(index)
                                    .with_committed_offset(committed)
                                    .with_committed_leader_epoch(epoch)
                                    .with_metadata(Some(StrBytes::from_string(metadata)))
                                    .with_error_code(error(&topic, index))
                            })
                            .collect();
                        OffsetFetchResponseTopics::default()
                            .with_name(TopicName(StrBytes::from_string(topic)))
                            .with_partitions(partitions)
                    })
                    .collect();
                OffsetFetchResponseGroup::default()
                    .with_group_id(group.group_id)
                    .with_topics(topics)
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let wanted = request.topics.map(|topics| {
        topics
            .into_iter()
            .flat_map(|t| {
                t.partition_indexes
                    .into_iter()
                    .map(move |p| (t.name.to_string(), p))
            })
            .collect()
    });
    let all_topics = wanted.is_none();
    let group_allowed = access.allows_group(Operation::Describe, &request.group_id);
    let found = context.groups.fetch_offsets(&request.group_id, wanted);
    let (found, refused) = authorized(access, all_topics, found);
    let error = |topic: &str, index: i32| {
        if !group_allowed {
            group_refused
        } else if refused.contains(topic) {
            ResponseError::TopicAuthorizationFailed.code()
        } else {
            unstable(&request.group_id, topic, index)
        }
    };
    // A refused group's offsets do not show (v2+ also says so at the top).
    let found = match group_allowed {
        true => found,
        false => found
            .into_iter()
            .filter(|_| !all_topics)
            .map(|(topic, partition, _)| (topic, partition, None))
            .collect(),
    };
    let topics = by_topic(found)
        .into_iter()
        .map(|(topic, partitions)| {
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.clone())))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|(index, offset)| {
                            let (committed, epoch, metadata) = values(&offset);
                            let partition = OffsetFetchResponsePartition::default()
                                .with_partition_index(index)
                                .with_committed_offset(committed)
                                .with_metadata(Some(StrBytes::from_string(metadata)))
                                .with_error_code(error(&topic, index));
                            if version >= 5 {
                                partition.with_committed_leader_epoch(epoch)
                            } else {
                                partition
                            }
                        })
                        .collect(),
                )
        })
        .collect();
    let response = OffsetFetchResponse::default().with_topics(topics);
    match (group_allowed, version >= 2) {
        (false, true) => response.with_error_code(group_refused),
        _ => response,
    }
}
