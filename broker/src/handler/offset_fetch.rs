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
use kafka_protocol::messages::{GroupId, OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::group::offsets::CommittedOffset;
use crate::group::FetchedOffset;
use crate::handler::access::Access;
use crate::security::acl::Operation;

type Found = Vec<FetchedOffset>;

/// The wanted partitions of a request's topics (`None`: all the group committed).
type Wanted = Option<Vec<(String, i32)>>;

fn wanted(topics: Option<impl IntoIterator<Item = (TopicName, Vec<i32>)>>) -> Wanted {
    topics.map(|topics| {
        topics
            .into_iter()
            .flat_map(|(name, indexes)| indexes.into_iter().map(move |p| (name.to_string(), p)))
            .collect()
    })
}

fn by_topic(found: Found) -> Vec<(String, Found)> {
    let mut topics: Vec<(String, Found)> = Vec::new();
    for fetched in found {
        match topics.iter_mut().find(|(name, _)| *name == fetched.topic) {
            Some((_, partitions)) => partitions.push(fetched),
            None => topics.push((fetched.topic.clone(), vec![fetched])),
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
        .filter_map(|mut fetched| {
            if access.allows_topic(Operation::Describe, &fetched.topic) {
                return Some(fetched);
            }
            refused.insert(fetched.topic.clone());
            fetched.offset = None;
            (!all_topics).then_some(fetched)
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

/// A partition's error: its topic refused, else UNSTABLE_OFFSET_COMMIT when asked for stable
/// offsets while a transaction commits one (KIP-447: the client retries).
fn partition_error(refused: &std::collections::HashSet<String>, fetched: &FetchedOffset) -> i16 {
    if refused.contains(&fetched.topic) {
        ResponseError::TopicAuthorizationFailed.code()
    } else if fetched.unstable {
        ResponseError::UnstableOffsetCommit.code()
    } else {
        0
    }
}

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    let require_stable = version >= 7 && request.require_stable;
    if version >= 8 {
        let groups = request
            .groups
            .into_iter()
            .map(|group| {
                let topics = group
                    .topics
                    .map(|topics| topics.into_iter().map(|t| (t.name, t.partition_indexes)));
                let wanted = wanted(topics);
                answer_group(context, access, group.group_id, wanted, require_stable)
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let topics = request
        .topics
        .map(|topics| topics.into_iter().map(|t| (t.name, t.partition_indexes)));
    let wanted = wanted(topics);
    answer_single_group(
        context,
        access,
        version,
        &request.group_id,
        wanted,
        require_stable,
    )
}

/// One group of a v8+ request.
fn answer_group(
    context: &Arc<BrokerContext>,
    access: &Access,
    group_id: GroupId,
    wanted: Wanted,
    require_stable: bool,
) -> OffsetFetchResponseGroup {
    if !access.allows_group(Operation::Describe, &group_id) {
        return OffsetFetchResponseGroup::default()
            .with_group_id(group_id)
            .with_error_code(ResponseError::GroupAuthorizationFailed.code());
    }
    if let Some(error) = context.groups.coordinator_error(&group_id) {
        return OffsetFetchResponseGroup::default()
            .with_group_id(group_id)
            .with_error_code(super::errors::code(Some(error)));
    }
    let all_topics = wanted.is_none();
    let found = context
        .groups
        .fetch_offsets(&group_id, wanted, require_stable);
    let (found, refused) = authorized(access, all_topics, found);
    let topics = by_topic(found)
        .into_iter()
        .map(|(topic, partitions)| {
            let partitions = partitions
                .iter()
                .map(|fetched| {
                    let (committed, epoch, metadata) = values(&fetched.offset);
                    OffsetFetchResponsePartitions::default()
                        .with_partition_index(fetched.partition)
                        .with_committed_offset(committed)
                        .with_committed_leader_epoch(epoch)
                        .with_metadata(Some(StrBytes::from_string(metadata)))
                        .with_error_code(partition_error(&refused, fetched))
                })
                .collect();
            OffsetFetchResponseTopics::default()
                .with_name(TopicName(StrBytes::from_string(topic)))
                .with_partitions(partitions)
        })
        .collect();
    OffsetFetchResponseGroup::default()
        .with_group_id(group_id)
        .with_topics(topics)
}

/// A v1–7 request's one group.
fn answer_single_group(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    group_id: &str,
    wanted: Wanted,
    require_stable: bool,
) -> OffsetFetchResponse {
    let group_refused = ResponseError::GroupAuthorizationFailed.code();
    let all_topics = wanted.is_none();
    let group_allowed = access.allows_group(Operation::Describe, group_id);
    let found = context
        .groups
        .fetch_offsets(group_id, wanted, require_stable);
    let (found, refused) = authorized(access, all_topics, found);
    // A refused group's offsets do not show (v2+ also says so at the top).
    let found = match group_allowed {
        true => found,
        false => found
            .into_iter()
            .filter(|_| !all_topics)
            .map(|fetched| FetchedOffset {
                offset: None,
                ..fetched
            })
            .collect(),
    };
    let error = |fetched: &FetchedOffset| match group_allowed {
        false => group_refused,
        true => partition_error(&refused, fetched),
    };
    let topics = by_topic(found)
        .into_iter()
        .map(|(topic, partitions)| {
            let partitions = partitions
                .iter()
                .map(|fetched| {
                    let (committed, epoch, metadata) = values(&fetched.offset);
                    let partition = OffsetFetchResponsePartition::default()
                        .with_partition_index(fetched.partition)
                        .with_committed_offset(committed)
                        .with_metadata(Some(StrBytes::from_string(metadata)))
                        .with_error_code(error(fetched));
                    match version >= 5 {
                        true => partition.with_committed_leader_epoch(epoch),
                        false => partition,
                    }
                })
                .collect();
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic)))
                .with_partitions(partitions)
        })
        .collect();
    let response = OffsetFetchResponse::default().with_topics(topics);
    match (group_allowed, version >= 2) {
        (false, true) => response.with_error_code(group_refused),
        _ => response,
    }
}
