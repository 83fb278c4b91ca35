//! In a cluster, a group's requests go to the broker leading its partition of
//! `__consumer_offsets`; anywhere else they are answered NOT_COORDINATOR here, before any
//! handler runs (clients then ask FindCoordinator again). Requests naming several groups
//! (DescribeGroups, DeleteGroups, OffsetFetch v8+) are checked per group by their handlers.

use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::group::GroupCoordinator;

/// The NOT_COORDINATOR answer to `request` if it names one group this broker does not
/// coordinate.
pub fn not_coordinator(
    groups: &GroupCoordinator,
    version: i16,
    request: &RequestKind,
) -> Option<ResponseKind> {
    let group_id = single_group(version, request)?;
    let error = groups.coordinator_error(group_id)?.into();
    super::unsupported::top_level_error(version, request, error)
        .or_else(|| per_partition_error(request, error))
}

fn single_group(version: i16, request: &RequestKind) -> Option<&str> {
    let group = match request {
        RequestKind::JoinGroup(r) => &r.group_id,
        RequestKind::SyncGroup(r) => &r.group_id,
        RequestKind::Heartbeat(r) => &r.group_id,
        RequestKind::LeaveGroup(r) => &r.group_id,
        RequestKind::OffsetCommit(r) => &r.group_id,
        RequestKind::OffsetDelete(r) => &r.group_id,
        RequestKind::TxnOffsetCommit(r) => &r.group_id,
        RequestKind::OffsetFetch(r) if version < 8 => &r.group_id,
        _ => return None,
    };
    Some(group.as_str())
}

/// Responses for the group APIs `unsupported::top_level_error` does not build.
pub(super) fn per_partition_error(
    request: &RequestKind,
    error: ResponseError,
) -> Option<ResponseKind> {
    let code = error.code();
    let response = match request {
        RequestKind::OffsetDelete(_) => {
            ResponseKind::OffsetDelete(OffsetDeleteResponse::default().with_error_code(code))
        }
        RequestKind::OffsetFetch(_) => {
            ResponseKind::OffsetFetch(OffsetFetchResponse::default().with_error_code(code))
        }
        RequestKind::OffsetCommit(r) => {
            let topics = r
                .topics
                .iter()
                .map(|topic| {
                    let partitions = topic
                        .partitions
                        .iter()
                        .map(|p| {
                            OffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code)
                        })
                        .collect();
                    OffsetCommitResponseTopic::default()
                        .with_name(topic.name.clone())
                        .with_partitions(partitions)
                })
                .collect();
            ResponseKind::OffsetCommit(OffsetCommitResponse::default().with_topics(topics))
        }
        RequestKind::TxnOffsetCommit(r) => {
            let topics = r
                .topics
                .iter()
                .map(|topic| {
                    let partitions = topic
                        .partitions
                        .iter()
                        .map(|p| {
                            TxnOffsetCommitResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(code)
                        })
                        .collect();
                    TxnOffsetCommitResponseTopic::default()
                        .with_name(topic.name.clone())
                        .with_partitions(partitions)
                })
                .collect();
            ResponseKind::TxnOffsetCommit(TxnOffsetCommitResponse::default().with_topics(topics))
        }
        _ => return None,
    };
    Some(response)
}
