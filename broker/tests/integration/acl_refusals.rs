//! Every API a principal without ACLs sends is refused as Kafka refuses it, or needs no ACL —
//! one table over `SUPPORTED_APIS`: an API added without a row here fails the test.
//!
//! `bob` logs in over SASL PLAIN on a broker with Kafka's StandardAuthorizer and holds no ACL;
//! the admin (`User:ANONYMOUS` on the loopback PLAINTEXT listener, a super user) made the topic
//! `guarded` first, so that refusals are about ACLs, not existence.

use std::net::SocketAddr;

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use weir_broker::handler::SUPPORTED_APIS;

use crate::acls::{logged_in, secured_broker};
use crate::common::*;
use crate::raw::RawClient;

const TOPIC: i16 = 29; // TOPIC_AUTHORIZATION_FAILED
const GROUP: i16 = 30; // GROUP_AUTHORIZATION_FAILED
const CLUSTER: i16 = 31; // CLUSTER_AUTHORIZATION_FAILED
const TRANSACTIONAL_ID: i16 = 53; // TRANSACTIONAL_ID_AUTHORIZATION_FAILED

/// What a principal without ACLs gets for each API.
enum Expected {
    /// Refused with this code (where the API carries it: top level, per topic or partition).
    Refused(i16),
    /// Served: it needs no ACL, or answers only what the principal may see (why).
    NeedsNoAcl(&'static str),
}

fn expected(api: ApiKey) -> Option<Expected> {
    use Expected::*;
    Some(match api {
        ApiKey::Produce
        | ApiKey::Fetch
        | ApiKey::ListOffsets
        | ApiKey::Metadata
        | ApiKey::CreateTopics
        | ApiKey::DeleteTopics
        | ApiKey::DeleteRecords
        | ApiKey::OffsetForLeaderEpoch
        | ApiKey::DescribeConfigs
        | ApiKey::AlterConfigs
        | ApiKey::CreatePartitions
        | ApiKey::IncrementalAlterConfigs
        | ApiKey::DescribeProducers => Refused(TOPIC),
        ApiKey::FindCoordinator
        | ApiKey::JoinGroup
        | ApiKey::SyncGroup
        | ApiKey::Heartbeat
        | ApiKey::LeaveGroup
        | ApiKey::OffsetCommit
        | ApiKey::OffsetFetch
        | ApiKey::DescribeGroups
        | ApiKey::DeleteGroups
        | ApiKey::OffsetDelete => Refused(GROUP),
        ApiKey::InitProducerId
        | ApiKey::AddPartitionsToTxn
        | ApiKey::AddOffsetsToTxn
        | ApiKey::EndTxn
        | ApiKey::TxnOffsetCommit
        | ApiKey::DescribeTransactions => Refused(TRANSACTIONAL_ID),
        ApiKey::DescribeQuorum
        | ApiKey::WriteTxnMarkers
        | ApiKey::AlterPartitionReassignments
        | ApiKey::ListPartitionReassignments
        | ApiKey::DescribeUserScramCredentials
        | ApiKey::AlterUserScramCredentials
        | ApiKey::DescribeAcls
        | ApiKey::CreateAcls
        | ApiKey::DeleteAcls
        | ApiKey::DescribeClientQuotas
        | ApiKey::AlterClientQuotas => Refused(CLUSTER),
        ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate => {
            NeedsNoAcl("before and during authentication")
        }
        ApiKey::DescribeCluster => NeedsNoAcl(
            "brokers and controller, as Metadata; authorized operations only with DESCRIBE",
        ),
        ApiKey::ListGroups => NeedsNoAcl("lists only the groups the principal may describe"),
        ApiKey::ListTransactions => {
            NeedsNoAcl("lists only the transactional ids the principal may describe")
        }
        _ => return None,
    })
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn topic_name(s: &str) -> TopicName {
    TopicName(text(s))
}

/// The first error code of `api`'s answer to a request about `guarded`, the group `g`, the
/// transactional id `t`, or the cluster, at the highest version the test speaks.
#[allow(clippy::too_many_lines)] // one arm per API
async fn first_error(client: &mut RawClient, api: ApiKey) -> i16 {
    use kafka_protocol::messages::*;
    match api {
        ApiKey::Produce => {
            let partition = produce_request::PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(Bytes::new()));
            let topic = produce_request::TopicProduceData::default()
                .with_name(topic_name("guarded"))
                .with_partition_data(vec![partition]);
            let request = ProduceRequest::default()
                .with_acks(1)
                .with_timeout_ms(5000)
                .with_topic_data(vec![topic]);
            let r = client.call(9, &request).await;
            r.responses[0].partition_responses[0].error_code
        }
        ApiKey::Fetch => {
            let partition = fetch_request::FetchPartition::default().with_partition(0);
            let topic = fetch_request::FetchTopic::default()
                .with_topic(topic_name("guarded"))
                .with_partitions(vec![partition]);
            let request = FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(0)
                .with_topics(vec![topic]);
            let r = client.call(12, &request).await;
            r.responses[0].partitions[0].error_code
        }
        ApiKey::ListOffsets => {
            let partition = list_offsets_request::ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(-1);
            let topic = list_offsets_request::ListOffsetsTopic::default()
                .with_name(topic_name("guarded"))
                .with_partitions(vec![partition]);
            let request = ListOffsetsRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_topics(vec![topic]);
            let r = client.call(7, &request).await;
            r.topics[0].partitions[0].error_code
        }
        ApiKey::Metadata => {
            let topic = metadata_request::MetadataRequestTopic::default()
                .with_name(Some(topic_name("guarded")));
            let request = MetadataRequest::default().with_topics(Some(vec![topic]));
            client.call(12, &request).await.topics[0].error_code
        }
        ApiKey::CreateTopics => {
            let topic = create_topics_request::CreatableTopic::default()
                .with_name(topic_name("bobs"))
                .with_num_partitions(1)
                .with_replication_factor(1);
            let request = CreateTopicsRequest::default().with_topics(vec![topic]);
            client.call(7, &request).await.topics[0].error_code
        }
        ApiKey::DeleteTopics => {
            let topic = delete_topics_request::DeleteTopicState::default()
                .with_name(Some(topic_name("guarded")));
            let request = DeleteTopicsRequest::default()
                .with_timeout_ms(5000)
                .with_topics(vec![topic]);
            client.call(6, &request).await.responses[0].error_code
        }
        ApiKey::DeleteRecords => {
            let partition = delete_records_request::DeleteRecordsPartition::default()
                .with_partition_index(0)
                .with_offset(0);
            let topic = delete_records_request::DeleteRecordsTopic::default()
                .with_name(topic_name("guarded"))
                .with_partitions(vec![partition]);
            let request = DeleteRecordsRequest::default()
                .with_timeout_ms(5000)
                .with_topics(vec![topic]);
            client.call(2, &request).await.topics[0].partitions[0].error_code
        }
        ApiKey::OffsetForLeaderEpoch => {
            let partition = offset_for_leader_epoch_request::OffsetForLeaderPartition::default()
                .with_partition(0)
                .with_leader_epoch(0);
            let topic = offset_for_leader_epoch_request::OffsetForLeaderTopic::default()
                .with_topic(topic_name("guarded"))
                .with_partitions(vec![partition]);
            let request = OffsetForLeaderEpochRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_topics(vec![topic]);
            client.call(4, &request).await.topics[0].partitions[0].error_code
        }
        ApiKey::DescribeConfigs => {
            let resource = describe_configs_request::DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(text("guarded"));
            let request = DescribeConfigsRequest::default().with_resources(vec![resource]);
            client.call(4, &request).await.results[0].error_code
        }
        ApiKey::AlterConfigs => {
            let config = alter_configs_request::AlterableConfig::default()
                .with_name(text("retention.ms"))
                .with_value(Some(text("1000")));
            let resource = alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(text("guarded"))
                .with_configs(vec![config]);
            let request = AlterConfigsRequest::default().with_resources(vec![resource]);
            client.call(2, &request).await.responses[0].error_code
        }
        ApiKey::IncrementalAlterConfigs => {
            let config = incremental_alter_configs_request::AlterableConfig::default()
                .with_name(text("retention.ms"))
                .with_value(Some(text("1000")));
            let resource = incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(text("guarded"))
                .with_configs(vec![config]);
            let request = IncrementalAlterConfigsRequest::default().with_resources(vec![resource]);
            client.call(1, &request).await.responses[0].error_code
        }
        ApiKey::CreatePartitions => {
            let topic = create_partitions_request::CreatePartitionsTopic::default()
                .with_name(topic_name("guarded"))
                .with_count(2)
                .with_assignments(None);
            let request = CreatePartitionsRequest::default()
                .with_timeout_ms(5000)
                .with_topics(vec![topic]);
            client.call(3, &request).await.results[0].error_code
        }
        ApiKey::DescribeProducers => {
            let topic = describe_producers_request::TopicRequest::default()
                .with_name(topic_name("guarded"))
                .with_partition_indexes(vec![0]);
            let request = DescribeProducersRequest::default().with_topics(vec![topic]);
            client.call(0, &request).await.topics[0].partitions[0].error_code
        }
        ApiKey::FindCoordinator => {
            let request = FindCoordinatorRequest::default()
                .with_key_type(0)
                .with_coordinator_keys(vec![text("g")]);
            client.call(4, &request).await.coordinators[0].error_code
        }
        ApiKey::JoinGroup => {
            let protocol =
                join_group_request::JoinGroupRequestProtocol::default().with_name(text("range"));
            let request = JoinGroupRequest::default()
                .with_group_id(GroupId(text("g")))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(10_000)
                .with_protocol_type(text("consumer"))
                .with_protocols(vec![protocol]);
            client.call(9, &request).await.error_code
        }
        ApiKey::SyncGroup => {
            let request = SyncGroupRequest::default()
                .with_group_id(GroupId(text("g")))
                .with_member_id(text("m"));
            client.call(5, &request).await.error_code
        }
        ApiKey::Heartbeat => {
            let request = HeartbeatRequest::default()
                .with_group_id(GroupId(text("g")))
                .with_member_id(text("m"));
            client.call(4, &request).await.error_code
        }
        ApiKey::LeaveGroup => {
            let member = leave_group_request::MemberIdentity::default().with_member_id(text("m"));
            let request = LeaveGroupRequest::default()
                .with_group_id(GroupId(text("g")))
                .with_members(vec![member]);
            client.call(5, &request).await.error_code
        }
        ApiKey::OffsetCommit => {
            let partition = offset_commit_request::OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(0);
            let topic = offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(topic_name("guarded"))
                .with_partitions(vec![partition]);
            let request = OffsetCommitRequest::default()
                .with_group_id(GroupId(text("g")))
                .with_generation_id_or_member_epoch(-1)
                .with_topics(vec![topic]);
            client.call(8, &request).await.topics[0].partitions[0].error_code
        }
        ApiKey::OffsetFetch => {
            let group = offset_fetch_request::OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(text("g")))
                .with_topics(None);
            let request = OffsetFetchRequest::default().with_groups(vec![group]);
            client.call(8, &request).await.groups[0].error_code
        }
        ApiKey::DescribeGroups => {
            let request = DescribeGroupsRequest::default().with_groups(vec![GroupId(text("g"))]);
            client.call(5, &request).await.groups[0].error_code
        }
        ApiKey::DeleteGroups => {
            let request =
                DeleteGroupsRequest::default().with_groups_names(vec![GroupId(text("g"))]);
            client.call(2, &request).await.results[0].error_code
        }
        ApiKey::OffsetDelete => {
            let partition = offset_delete_request::OffsetDeleteRequestPartition::default()
                .with_partition_index(0);
            let topic = offset_delete_request::OffsetDeleteRequestTopic::default()
                .with_name(topic_name("guarded"))
                .with_partitions(vec![partition]);
            let request = OffsetDeleteRequest::default()
                .with_group_id(GroupId(text("g")))
                .with_topics(vec![topic]);
            client.call(0, &request).await.error_code
        }
        ApiKey::InitProducerId => {
            let request = InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(text("t"))))
                .with_transaction_timeout_ms(10_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            client.call(4, &request).await.error_code
        }
        ApiKey::AddPartitionsToTxn => {
            let topic = add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                .with_name(topic_name("guarded"))
                .with_partitions(vec![0]);
            let request = AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(TransactionalId(text("t")))
                .with_v3_and_below_producer_id(ProducerId(1))
                .with_v3_and_below_topics(vec![topic]);
            let r = client.call(3, &request).await;
            r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        }
        ApiKey::AddOffsetsToTxn => {
            let request = AddOffsetsToTxnRequest::default()
                .with_transactional_id(TransactionalId(text("t")))
                .with_producer_id(ProducerId(1))
                .with_group_id(GroupId(text("g")));
            client.call(3, &request).await.error_code
        }
        ApiKey::EndTxn => {
            let request = EndTxnRequest::default()
                .with_transactional_id(TransactionalId(text("t")))
                .with_producer_id(ProducerId(1));
            client.call(3, &request).await.error_code
        }
        ApiKey::TxnOffsetCommit => {
            let partition = txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                .with_partition_index(0);
            let topic = txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                .with_name(topic_name("guarded"))
                .with_partitions(vec![partition]);
            let request = TxnOffsetCommitRequest::default()
                .with_transactional_id(TransactionalId(text("t")))
                .with_group_id(GroupId(text("g")))
                .with_producer_id(ProducerId(1))
                .with_topics(vec![topic]);
            client.call(3, &request).await.topics[0].partitions[0].error_code
        }
        ApiKey::DescribeTransactions => {
            let request = DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![TransactionalId(text("t"))]);
            client.call(0, &request).await.transaction_states[0].error_code
        }
        ApiKey::DescribeQuorum => {
            let partition = describe_quorum_request::PartitionData::default();
            let topic = describe_quorum_request::TopicData::default()
                .with_topic_name(topic_name("__cluster_metadata"))
                .with_partitions(vec![partition]);
            let request = DescribeQuorumRequest::default().with_topics(vec![topic]);
            client.call(2, &request).await.error_code
        }
        ApiKey::WriteTxnMarkers => {
            let topic = write_txn_markers_request::WritableTxnMarkerTopic::default()
                .with_name(topic_name("guarded"))
                .with_partition_indexes(vec![0]);
            let marker = write_txn_markers_request::WritableTxnMarker::default()
                .with_producer_id(ProducerId(1))
                .with_topics(vec![topic]);
            let request = WriteTxnMarkersRequest::default().with_markers(vec![marker]);
            client.call(1, &request).await.markers[0].topics[0].partitions[0].error_code
        }
        ApiKey::AlterPartitionReassignments => {
            let request = AlterPartitionReassignmentsRequest::default().with_timeout_ms(5000);
            client.call(0, &request).await.error_code
        }
        ApiKey::ListPartitionReassignments => {
            let request = ListPartitionReassignmentsRequest::default()
                .with_timeout_ms(5000)
                .with_topics(None);
            client.call(0, &request).await.error_code
        }
        ApiKey::DescribeUserScramCredentials => {
            let request = DescribeUserScramCredentialsRequest::default().with_users(None);
            client.call(0, &request).await.error_code
        }
        ApiKey::AlterUserScramCredentials => {
            let deletion = alter_user_scram_credentials_request::ScramCredentialDeletion::default()
                .with_name(text("alice"))
                .with_mechanism(1);
            let request =
                AlterUserScramCredentialsRequest::default().with_deletions(vec![deletion]);
            client.call(0, &request).await.results[0].error_code
        }
        ApiKey::DescribeAcls => {
            let request = DescribeAclsRequest::default()
                .with_resource_type_filter(1)
                .with_pattern_type_filter(1)
                .with_operation(1)
                .with_permission_type(1);
            client.call(3, &request).await.error_code
        }
        ApiKey::CreateAcls => {
            let creation = create_acls_request::AclCreation::default()
                .with_resource_type(2)
                .with_resource_name(text("guarded"))
                .with_resource_pattern_type(3)
                .with_principal(text("User:bob"))
                .with_host(text("*"))
                .with_operation(2)
                .with_permission_type(3);
            let request = CreateAclsRequest::default().with_creations(vec![creation]);
            client.call(3, &request).await.results[0].error_code
        }
        ApiKey::DeleteAcls => {
            let filter = delete_acls_request::DeleteAclsFilter::default()
                .with_resource_type_filter(1)
                .with_pattern_type_filter(1)
                .with_operation(1)
                .with_permission_type(1);
            let request = DeleteAclsRequest::default().with_filters(vec![filter]);
            client.call(3, &request).await.filter_results[0].error_code
        }
        ApiKey::DescribeClientQuotas => {
            let request = DescribeClientQuotasRequest::default();
            client.call(1, &request).await.error_code
        }
        ApiKey::AlterClientQuotas => {
            let entity = alter_client_quotas_request::EntityData::default()
                .with_entity_type(StrBytes::from_static_str("client-id"))
                .with_entity_name(Some(StrBytes::from_static_str("app")));
            let op = alter_client_quotas_request::OpData::default()
                .with_key(StrBytes::from_static_str("producer_byte_rate"))
                .with_value(1024.0);
            let entry = alter_client_quotas_request::EntryData::default()
                .with_entity(vec![entity])
                .with_ops(vec![op]);
            let request = AlterClientQuotasRequest::default().with_entries(vec![entry]);
            client.call(1, &request).await.entries[0].error_code
        }
        ApiKey::DescribeCluster => {
            client
                .call(1, &DescribeClusterRequest::default())
                .await
                .error_code
        }
        ApiKey::ListGroups => {
            let r = client.call(5, &ListGroupsRequest::default()).await;
            assert!(
                r.groups.is_empty(),
                "bob may describe no group: {:?}",
                r.groups
            );
            r.error_code
        }
        ApiKey::ListTransactions => {
            let r = client.call(1, &ListTransactionsRequest::default()).await;
            assert!(
                r.transaction_states.is_empty(),
                "bob may describe no transactional id"
            );
            r.error_code
        }
        other => panic!("no request written for {other:?}: add one"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_api_refuses_a_principal_without_acls_as_kafka_does() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, admin, users): (_, SocketAddr, SocketAddr) = secured_broker(dir.path()).await;
    create_topic(&admin.to_string(), "guarded", 1, &[]).await;
    // A group and a transactional id that exist, so that a refusal is not about existence.
    commit(&admin.to_string(), "g", "guarded", &[(0, 0)]);
    let mut unlisted = Vec::new();
    let mut wrong = Vec::new();
    for (api, _, _) in SUPPORTED_APIS {
        let Some(expected) = expected(*api) else {
            unlisted.push(*api);
            continue;
        };
        if matches!(
            api,
            ApiKey::ApiVersions | ApiKey::SaslHandshake | ApiKey::SaslAuthenticate
        ) {
            continue; // the login itself: `logged_in` used them
        }
        let mut bob = logged_in(users, "bob", "bob-secret").await;
        let code = first_error(&mut bob, *api).await;
        let (want, why) = match expected {
            Expected::Refused(code) => (code, "refused"),
            Expected::NeedsNoAcl(why) => (0, why),
        };
        if code != want {
            wrong.push(format!("{api:?}: {code}, expected {want} ({why})"));
        }
    }
    assert!(
        unlisted.is_empty(),
        "APIs without a refusal case (add them to `expected`): {unlisted:?}"
    );
    assert!(wrong.is_empty(), "{wrong:#?}");
    broker.shutdown().await.unwrap();
}
