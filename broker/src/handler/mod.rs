//! One file per Kafka API. Each handler translates a decoded request into calls on the topic
//! registry and partitions, and builds the response; errors become Kafka codes in `errors`.
//!
//! `SUPPORTED_APIS` is the single source of truth for ApiVersions and for which requests the
//! connection accepts.

pub mod access;
pub mod acl_requests;
pub mod add_offsets_to_txn;
pub mod add_partitions_to_txn;
pub mod alter_client_quotas;
pub mod alter_user_scram_credentials;
pub mod api_versions;
pub mod commit_order;
pub mod configs;
pub mod create_acls;
pub mod create_partitions;
pub mod create_topics;
pub mod delete_acls;
pub mod delete_groups;
pub mod delete_records;
pub mod delete_topics;
pub mod describe_acls;
pub mod describe_client_quotas;
pub mod describe_cluster;
pub mod describe_groups;
pub mod describe_producers;
pub mod describe_quorum;
pub mod describe_transactions;
pub mod describe_user_scram_credentials;
pub mod end_txn;
pub mod errors;
pub mod fetch;
pub mod find_coordinator;
pub mod group_routing;
pub mod heartbeat;
pub mod init_producer_id;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod list_offsets;
pub mod metadata;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod offset_for_leader_epoch;
pub mod partition_reassignments;
pub mod produce;
pub mod produce_txn;
pub mod quota_throttle;
pub mod request;
pub mod request_gate;
pub mod sasl_authenticate;
pub mod sasl_handshake;
pub mod sync_group;
pub mod txn_offset_commit;
pub mod unsupported;
pub mod write_txn_markers;

use std::sync::Arc;

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use crate::context::BrokerContext;
pub use request::{led_partition, ConnectionMute, HandlerOutput, RequestOrigin};

/// Kafka APIs this broker implements, with the version ranges it implements.
pub const SUPPORTED_APIS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 12),
    (ApiKey::Fetch, 4, 13),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 3),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::DescribeQuorum, 0, 2),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 8),
    (ApiKey::OffsetFetch, 1, 8),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::TxnOffsetCommit, 0, 5),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::WriteTxnMarkers, 1, 1),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
];

/// The version range implemented for an API, if any.
pub fn supported_versions(api_key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED_APIS
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .map(|(_, min, max)| (*min, *max))
}

/// Dispatches one decoded request to its handler.
#[allow(clippy::too_many_lines)] // one arm per Kafka API
pub async fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    origin: &RequestOrigin<'_>,
    request: RequestKind,
) -> HandlerOutput {
    let ready = |response: ResponseKind| HandlerOutput::Ready(Box::new(response));
    // Kafka refuses these while parsing, before anything else, and closes the connection.
    if let Some(reason) = acl_requests::unknown_element(&request) {
        tracing::warn!(peer = %origin.peer, reason, "closing connection: invalid ACL request");
        return HandlerOutput::Close;
    }
    // Authorization first, as Kafka: a refused client learns nothing of coordinators.
    let access = access::Access::of(context, origin);
    if let Some(response) = request_gate::refusal(&access, version, &request) {
        return ready(response);
    }
    if let Some(response) = group_routing::not_coordinator(&context.groups, version, &request) {
        return ready(response);
    }
    match request {
        RequestKind::ApiVersions(r) => {
            ready(ResponseKind::ApiVersions(api_versions::handle(version, r)))
        }
        RequestKind::Metadata(r) => ready(ResponseKind::Metadata(metadata::handle(
            context,
            &access,
            version,
            origin.listener,
            r,
        ))),
        RequestKind::Produce(r) => {
            let throttle_ms = quota_throttle::produce(context, origin, &r);
            let output = produce::handle(context, &access, version, origin, r).await;
            quota_throttle::with_produce_throttle(output, throttle_ms)
        }
        RequestKind::Fetch(r) => {
            let consumer = r.replica_id.0 < 0;
            let mut response = fetch::handle(context, &access, version, r).await;
            if consumer {
                let throttle_ms = quota_throttle::fetch(context, origin, &response);
                response.throttle_time_ms = response.throttle_time_ms.max(throttle_ms);
            }
            ready(ResponseKind::Fetch(response))
        }
        RequestKind::ListOffsets(r) => ready(ResponseKind::ListOffsets(list_offsets::handle(
            context, &access, version, r,
        ))),
        RequestKind::CreateTopics(r) => create_topics::handle(context, &access, version, r),
        RequestKind::DeleteTopics(r) => ready(ResponseKind::DeleteTopics(
            delete_topics::handle(context, &access, version, r).await,
        )),
        RequestKind::DeleteRecords(r) => ready(ResponseKind::DeleteRecords(
            delete_records::handle(context, &access, r),
        )),
        RequestKind::OffsetForLeaderEpoch(r) => ready(ResponseKind::OffsetForLeaderEpoch(
            offset_for_leader_epoch::handle(context, &access, r),
        )),
        RequestKind::DescribeConfigs(r) => ready(ResponseKind::DescribeConfigs(configs::describe(
            context, &access, version, r,
        ))),
        RequestKind::AlterConfigs(r) => ready(ResponseKind::AlterConfigs(
            configs::alter(context, &access, r).await,
        )),
        RequestKind::IncrementalAlterConfigs(r) => ready(ResponseKind::IncrementalAlterConfigs(
            configs::incremental_alter(context, &access, r).await,
        )),
        RequestKind::CreatePartitions(r) => ready(ResponseKind::CreatePartitions(
            create_partitions::handle(context, &access, r).await,
        )),
        RequestKind::DescribeCluster(r) => ready(ResponseKind::DescribeCluster(
            describe_cluster::handle(context, &access, origin.listener, r),
        )),
        RequestKind::DescribeQuorum(r) => ready(ResponseKind::DescribeQuorum(
            describe_quorum::handle(context, r).await,
        )),
        RequestKind::FindCoordinator(r) => ready(ResponseKind::FindCoordinator(
            find_coordinator::handle(context, &access, version, origin.listener, r),
        )),
        RequestKind::JoinGroup(r) => join_group::handle(context, version, origin, r),
        RequestKind::SyncGroup(r) => sync_group::handle(context, version, r),
        RequestKind::Heartbeat(r) => ready(ResponseKind::Heartbeat(heartbeat::handle(context, r))),
        RequestKind::LeaveGroup(r) => ready(ResponseKind::LeaveGroup(leave_group::handle(
            context, version, r,
        ))),
        RequestKind::OffsetCommit(r) => offset_commit::handle(context, &access, r),
        RequestKind::OffsetFetch(r) => ready(ResponseKind::OffsetFetch(offset_fetch::handle(
            context, &access, version, r,
        ))),
        RequestKind::ListGroups(r) => ready(ResponseKind::ListGroups(list_groups::handle(
            context, &access, version, r,
        ))),
        RequestKind::DescribeGroups(r) => ready(ResponseKind::DescribeGroups(
            describe_groups::handle(context, &access, r),
        )),
        RequestKind::DeleteGroups(r) => ready(ResponseKind::DeleteGroups(delete_groups::handle(
            context, &access, r,
        ))),
        RequestKind::OffsetDelete(r) => ready(ResponseKind::OffsetDelete(offset_delete::handle(
            context, &access, r,
        ))),
        RequestKind::InitProducerId(r) => ready(ResponseKind::InitProducerId(
            init_producer_id::handle(context, version, r).await,
        )),
        RequestKind::AddPartitionsToTxn(r) => ready(ResponseKind::AddPartitionsToTxn(
            add_partitions_to_txn::handle(context, &access, version, r).await,
        )),
        RequestKind::AddOffsetsToTxn(r) => ready(ResponseKind::AddOffsetsToTxn(
            add_offsets_to_txn::handle(context, version, r).await,
        )),
        RequestKind::EndTxn(r) => ready(ResponseKind::EndTxn(
            end_txn::handle(context, version, r).await,
        )),
        RequestKind::TxnOffsetCommit(r) => ready(ResponseKind::TxnOffsetCommit(
            txn_offset_commit::handle(context, &access, version, r).await,
        )),
        RequestKind::DescribeTransactions(r) => ready(ResponseKind::DescribeTransactions(
            describe_transactions::describe(context, &access, r),
        )),
        RequestKind::ListTransactions(r) => ready(ResponseKind::ListTransactions(
            describe_transactions::list(context, &access, r),
        )),
        RequestKind::DescribeProducers(r) => ready(ResponseKind::DescribeProducers(
            describe_producers::handle(context, &access, r),
        )),
        RequestKind::AlterPartitionReassignments(r) => {
            ready(ResponseKind::AlterPartitionReassignments(
                partition_reassignments::alter(context, r).await,
            ))
        }
        RequestKind::ListPartitionReassignments(r) => ready(
            ResponseKind::ListPartitionReassignments(partition_reassignments::list(context, r)),
        ),
        RequestKind::CreateAcls(r) => ready(ResponseKind::CreateAcls(
            create_acls::handle(context, &access, r).await,
        )),
        RequestKind::DescribeAcls(r) => ready(ResponseKind::DescribeAcls(describe_acls::handle(
            context, &access, version, r,
        ))),
        RequestKind::DeleteAcls(r) => ready(ResponseKind::DeleteAcls(
            delete_acls::handle(context, &access, r).await,
        )),
        RequestKind::SaslHandshake(_) => {
            ready(ResponseKind::SaslHandshake(sasl_handshake::handle()))
        }
        RequestKind::SaslAuthenticate(_) => {
            ready(ResponseKind::SaslAuthenticate(sasl_authenticate::handle()))
        }
        RequestKind::DescribeUserScramCredentials(r) => {
            ready(ResponseKind::DescribeUserScramCredentials(
                describe_user_scram_credentials::handle(context, &access, r),
            ))
        }
        RequestKind::AlterUserScramCredentials(r) => {
            ready(ResponseKind::AlterUserScramCredentials(
                alter_user_scram_credentials::handle(context, &access, r).await,
            ))
        }
        RequestKind::DescribeClientQuotas(r) => ready(ResponseKind::DescribeClientQuotas(
            describe_client_quotas::handle(context, r),
        )),
        RequestKind::AlterClientQuotas(r) => ready(ResponseKind::AlterClientQuotas(
            alter_client_quotas::handle(context, &access, r),
        )),
        RequestKind::WriteTxnMarkers(r) => ready(ResponseKind::WriteTxnMarkers(
            write_txn_markers::handle(context, r).await,
        )),
        other => {
            // The connection only passes requests listed in SUPPORTED_APIS.
            tracing::error!(request = ?std::mem::discriminant(&other), "request reached dispatch without a handler");
            HandlerOutput::Close
        }
    }
}
