//! The requests Kafka authorizes as a whole against one resource, refused here before their
//! handler runs: the answer is the request's error response in the shape Kafka gives it (a
//! top-level error, or every partition's). Requests authorized per topic, group or id inside
//! them check in their handlers.
//!
//! | Request | Needs | Refused with |
//! |---|---|---|
//! | WriteTxnMarkers | CLUSTER_ACTION on the cluster | CLUSTER_AUTHORIZATION_FAILED |
//! | DescribeQuorum, ListPartitionReassignments | DESCRIBE on the cluster | 〃 |
//! | AlterPartitionReassignments | ALTER on the cluster | 〃 |
//! | DescribeClientQuotas | DESCRIBE_CONFIGS on the cluster | 〃 |
//! | JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit | READ on the group | GROUP_AUTHORIZATION_FAILED |
//! | InitProducerId with an id, EndTxn, AddOffsetsToTxn, TxnOffsetCommit | WRITE on the transactional id | TRANSACTIONAL_ID_AUTHORIZATION_FAILED |
//! | AddOffsetsToTxn, TxnOffsetCommit | then READ on the group | GROUP_AUTHORIZATION_FAILED |
//! | InitProducerId without an id | IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679) | CLUSTER_AUTHORIZATION_FAILED |

use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::handler::access::Access;
use crate::handler::acl_requests::CLUSTER_REFUSED;
use crate::security::acl::{Operation, ResourceType};

/// The refusal of `request`, when the principal lacks what the whole request needs.
pub fn refusal(access: &Access, version: i16, request: &RequestKind) -> Option<ResponseKind> {
    cluster_refusal(access, version, request)
        .or_else(|| transactional_refusal(access, version, request))
        .or_else(|| group_refusal(access, version, request))
}

fn cluster_refusal(access: &Access, version: i16, request: &RequestKind) -> Option<ResponseKind> {
    let needed = match request {
        RequestKind::WriteTxnMarkers(_) => Operation::ClusterAction,
        RequestKind::DescribeQuorum(_) | RequestKind::ListPartitionReassignments(_) => {
            Operation::Describe
        }
        RequestKind::AlterPartitionReassignments(_) => Operation::Alter,
        RequestKind::DescribeClientQuotas(_) => Operation::DescribeConfigs,
        RequestKind::InitProducerId(r) if r.transactional_id.is_none() => {
            let allowed = access.allows_cluster(Operation::IdempotentWrite)
                || access.allows_any(Operation::Write, ResourceType::Topic);
            return match allowed {
                true => None,
                false => {
                    error_response(version, request, ResponseError::ClusterAuthorizationFailed)
                }
            };
        }
        _ => return None,
    };
    if access.allows_cluster(needed) {
        return None;
    }
    let code = ResponseError::ClusterAuthorizationFailed.code();
    let message = || Some(StrBytes::from_static_str(CLUSTER_REFUSED));
    Some(match request {
        RequestKind::WriteTxnMarkers(request) => {
            ResponseKind::WriteTxnMarkers(every_marker_refused(request, code))
        }
        RequestKind::DescribeQuorum(_) => ResponseKind::DescribeQuorum(
            DescribeQuorumResponse::default()
                .with_error_code(code)
                .with_error_message(message()),
        ),
        RequestKind::ListPartitionReassignments(_) => ResponseKind::ListPartitionReassignments(
            ListPartitionReassignmentsResponse::default()
                .with_error_code(code)
                .with_error_message(message()),
        ),
        RequestKind::AlterPartitionReassignments(_) => ResponseKind::AlterPartitionReassignments(
            AlterPartitionReassignmentsResponse::default()
                .with_error_code(code)
                .with_error_message(message()),
        ),
        _ => ResponseKind::DescribeClientQuotas(
            DescribeClientQuotasResponse::default()
                .with_error_code(code)
                .with_error_message(message())
                .with_entries(None),
        ),
    })
}

/// Requests naming one transactional id (and maybe a group): WRITE on the id, then READ on
/// the group, as Kafka checks them.
fn transactional_refusal(
    access: &Access,
    version: i16,
    request: &RequestKind,
) -> Option<ResponseKind> {
    let (id, group) = match request {
        RequestKind::InitProducerId(r) => (r.transactional_id.as_deref()?.as_str(), None),
        RequestKind::EndTxn(r) => (r.transactional_id.as_str(), None),
        RequestKind::AddOffsetsToTxn(r) => (r.transactional_id.as_str(), Some(r.group_id.as_str())),
        RequestKind::TxnOffsetCommit(r) => (r.transactional_id.as_str(), Some(r.group_id.as_str())),
        _ => return None,
    };
    let error = if !access.allows_transactional_id(Operation::Write, id) {
        ResponseError::TransactionalIdAuthorizationFailed
    } else if group.is_some_and(|group| !access.allows_group(Operation::Read, group)) {
        ResponseError::GroupAuthorizationFailed
    } else {
        return None;
    };
    error_response(version, request, error)
}

/// Requests of one consumer group's members: READ on the group.
fn group_refusal(access: &Access, version: i16, request: &RequestKind) -> Option<ResponseKind> {
    let group = match request {
        RequestKind::JoinGroup(r) => r.group_id.as_str(),
        RequestKind::SyncGroup(r) => r.group_id.as_str(),
        RequestKind::Heartbeat(r) => r.group_id.as_str(),
        RequestKind::LeaveGroup(r) => r.group_id.as_str(),
        RequestKind::OffsetCommit(r) => r.group_id.as_str(),
        _ => return None,
    };
    if access.allows_group(Operation::Read, group) {
        return None;
    }
    error_response(version, request, ResponseError::GroupAuthorizationFailed)
}

/// `request`'s answer carrying only `error`: the shapes the NOT_COORDINATOR answers use.
fn error_response(
    version: i16,
    request: &RequestKind,
    error: ResponseError,
) -> Option<ResponseKind> {
    super::unsupported::top_level_error(version, request, error)
        .or_else(|| super::group_routing::per_partition_error(request, error))
}

/// Kafka's error response to WriteTxnMarkers: the error on every partition of every marker.
fn every_marker_refused(request: &WriteTxnMarkersRequest, code: i16) -> WriteTxnMarkersResponse {
    let markers = request
        .markers
        .iter()
        .map(|marker| {
            let topics = marker
                .topics
                .iter()
                .map(|topic| {
                    let partitions = topic
                        .partition_indexes
                        .iter()
                        .map(|index| {
                            WritableTxnMarkerPartitionResult::default()
                                .with_partition_index(*index)
                                .with_error_code(code)
                        })
                        .collect();
                    WritableTxnMarkerTopicResult::default()
                        .with_name(topic.name.clone())
                        .with_partitions(partitions)
                })
                .collect();
            WritableTxnMarkerResult::default()
                .with_producer_id(marker.producer_id)
                .with_topics(topics)
        })
        .collect();
    WriteTxnMarkersResponse::default().with_markers(markers)
}
