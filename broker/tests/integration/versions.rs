//! Every advertised version of every API answers with a response that decodes in that version
//! (kafka-protocol refuses to encode fields a version lacks, so this catches version slips).

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;

use crate::common;
use crate::raw::RawClient;

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn batch() -> bytes::Bytes {
    crate::records::encode_batch(&[b"v"], Compression::None).freeze()
}

fn range(api: ApiKey) -> std::ops::RangeInclusive<i16> {
    let (min, max) = weir_broker::handler::supported_versions(api).unwrap();
    min..=max
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_api_answers_every_advertised_version() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[("group.initial.rebalance.delay.ms", "0")]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "versions", 1, &[]).await;
    let topic_id = broker.context().topics.get("versions").unwrap().id;
    let mut client = RawClient::connect(broker.local_addr()).await;

    for v in range(ApiKey::ApiVersions) {
        let r = client.call(v, &ApiVersionsRequest::default()).await;
        assert_eq!(r.error_code, 0, "ApiVersions v{v}");
    }
    for v in range(ApiKey::Metadata) {
        let topic =
            metadata_request::MetadataRequestTopic::default().with_name(Some(name("versions")));
        let r = client
            .call(
                v,
                &MetadataRequest::default().with_topics(Some(vec![topic])),
            )
            .await;
        assert_eq!(r.topics[0].error_code, 0, "Metadata v{v}");
        assert_eq!(r.topics[0].partitions.len(), 1, "Metadata v{v}");
        assert_eq!(r.brokers.len(), 1, "Metadata v{v}");
        if v >= 10 {
            assert_eq!(r.topics[0].topic_id, topic_id, "Metadata v{v}");
        }
    }
    for v in range(ApiKey::Produce) {
        let partition = produce_request::PartitionProduceData::default()
            .with_index(0)
            .with_records(Some(batch()));
        let topic = produce_request::TopicProduceData::default()
            .with_name(name("versions"))
            .with_partition_data(vec![partition]);
        let r = client
            .call(
                v,
                &ProduceRequest::default()
                    .with_acks(-1)
                    .with_timeout_ms(1000)
                    .with_topic_data(vec![topic]),
            )
            .await;
        assert_eq!(
            r.responses[0].partition_responses[0].error_code, 0,
            "Produce v{v}"
        );
    }
    for v in range(ApiKey::Fetch) {
        let partition = fetch_request::FetchPartition::default()
            .with_partition(0)
            .with_fetch_offset(0)
            .with_partition_max_bytes(1 << 20);
        let mut topic = fetch_request::FetchTopic::default().with_partitions(vec![partition]);
        if v >= 13 {
            topic.topic_id = topic_id;
        } else {
            topic.topic = name("versions");
        }
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_topics(vec![topic]);
        let r = client.call(v, &request).await;
        let partition = &r.responses[0].partitions[0];
        assert_eq!(partition.error_code, 0, "Fetch v{v}");
        assert!(
            !partition.records.as_ref().unwrap().is_empty(),
            "Fetch v{v} returns data"
        );
    }
    for v in range(ApiKey::ListOffsets) {
        let partition = list_offsets_request::ListOffsetsPartition::default()
            .with_partition_index(0)
            .with_timestamp(-1);
        let topic = list_offsets_request::ListOffsetsTopic::default()
            .with_name(name("versions"))
            .with_partitions(vec![partition]);
        let r = client
            .call(
                v,
                &ListOffsetsRequest::default()
                    .with_replica_id(BrokerId(-1))
                    .with_topics(vec![topic]),
            )
            .await;
        assert_eq!(r.topics[0].partitions[0].error_code, 0, "ListOffsets v{v}");
        assert!(r.topics[0].partitions[0].offset > 0, "ListOffsets v{v}");
    }
    for v in range(ApiKey::CreateTopics) {
        let topic = create_topics_request::CreatableTopic::default()
            .with_name(name(&format!("created-v{v}")))
            .with_num_partitions(1)
            .with_replication_factor(1);
        let r = client
            .call(
                v,
                &CreateTopicsRequest::default()
                    .with_timeout_ms(1000)
                    .with_topics(vec![topic]),
            )
            .await;
        assert_eq!(r.topics[0].error_code, 0, "CreateTopics v{v}");
    }
    for v in range(ApiKey::DeleteTopics) {
        let target = format!("created-v{}", (v + 1).clamp(2, 7));
        let mut request = DeleteTopicsRequest::default().with_timeout_ms(1000);
        if v >= 6 {
            request.topics =
                vec![delete_topics_request::DeleteTopicState::default()
                    .with_name(Some(name(&target)))];
        } else {
            request.topic_names = vec![name(&target)];
        }
        let r = client.call(v, &request).await;
        assert_eq!(r.responses[0].error_code, 0, "DeleteTopics v{v} ({target})");
    }
    for v in range(ApiKey::DeleteRecords) {
        let partition = delete_records_request::DeleteRecordsPartition::default()
            .with_partition_index(0)
            .with_offset(v as i64);
        let topic = delete_records_request::DeleteRecordsTopic::default()
            .with_name(name("versions"))
            .with_partitions(vec![partition]);
        let r = client
            .call(
                v,
                &DeleteRecordsRequest::default()
                    .with_timeout_ms(1000)
                    .with_topics(vec![topic]),
            )
            .await;
        assert_eq!(
            r.topics[0].partitions[0].error_code, 0,
            "DeleteRecords v{v}"
        );
        assert_eq!(
            r.topics[0].partitions[0].low_watermark, v as i64,
            "DeleteRecords v{v}"
        );
    }
    for v in range(ApiKey::OffsetForLeaderEpoch) {
        let partition = offset_for_leader_epoch_request::OffsetForLeaderPartition::default()
            .with_partition(0)
            .with_leader_epoch(0)
            .with_current_leader_epoch(0);
        let topic = offset_for_leader_epoch_request::OffsetForLeaderTopic::default()
            .with_topic(name("versions"))
            .with_partitions(vec![partition]);
        let r = client
            .call(
                v,
                &OffsetForLeaderEpochRequest::default()
                    .with_replica_id(BrokerId(-1))
                    .with_topics(vec![topic]),
            )
            .await;
        let answer = &r.topics[0].partitions[0];
        assert_eq!(
            (answer.error_code, answer.leader_epoch),
            (0, 0),
            "OffsetForLeaderEpoch v{v}"
        );
        assert!(answer.end_offset > 0, "OffsetForLeaderEpoch v{v}");
    }
    for v in range(ApiKey::DescribeConfigs) {
        let resource = describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("versions"));
        let r = client
            .call(
                v,
                &DescribeConfigsRequest::default().with_resources(vec![resource]),
            )
            .await;
        assert_eq!(r.results[0].error_code, 0, "DescribeConfigs v{v}");
        assert!(r.results[0].configs.len() > 10, "DescribeConfigs v{v}");
        let broker_resource = describe_configs_request::DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(StrBytes::from_static_str("1"));
        let r = client
            .call(
                v,
                &DescribeConfigsRequest::default().with_resources(vec![broker_resource]),
            )
            .await;
        assert_eq!(r.results[0].error_code, 0, "DescribeConfigs broker v{v}");
    }
    for v in range(ApiKey::AlterConfigs) {
        let config = alter_configs_request::AlterableConfig::default()
            .with_name(StrBytes::from_static_str("retention.ms"))
            .with_value(Some(StrBytes::from_string(format!(
                "{}",
                100_000 + v as i64
            ))));
        let resource = alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("versions"))
            .with_configs(vec![config]);
        let r = client
            .call(
                v,
                &AlterConfigsRequest::default().with_resources(vec![resource]),
            )
            .await;
        assert_eq!(r.responses[0].error_code, 0, "AlterConfigs v{v}");
    }
    for v in range(ApiKey::IncrementalAlterConfigs) {
        let config = incremental_alter_configs_request::AlterableConfig::default()
            .with_name(StrBytes::from_static_str("segment.ms"))
            .with_config_operation(0)
            .with_value(Some(StrBytes::from_static_str("60000")));
        let resource = incremental_alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("versions"))
            .with_configs(vec![config]);
        let r = client
            .call(
                v,
                &IncrementalAlterConfigsRequest::default().with_resources(vec![resource]),
            )
            .await;
        assert_eq!(r.responses[0].error_code, 0, "IncrementalAlterConfigs v{v}");
    }
    for v in range(ApiKey::CreatePartitions) {
        let topic = create_partitions_request::CreatePartitionsTopic::default()
            .with_name(name("versions"))
            .with_count(2 + v as i32)
            .with_assignments(None);
        let r = client
            .call(
                v,
                &CreatePartitionsRequest::default()
                    .with_timeout_ms(1000)
                    .with_topics(vec![topic]),
            )
            .await;
        assert_eq!(r.results[0].error_code, 0, "CreatePartitions v{v}");
    }
    for v in range(ApiKey::FindCoordinator) {
        let mut request = FindCoordinatorRequest::default();
        if v >= 4 {
            request.coordinator_keys = vec![StrBytes::from_static_str("group-v")];
        } else {
            request.key = StrBytes::from_static_str("group-v");
        }
        let r = client.call(v, &request).await;
        let (error, node) = if v >= 4 {
            (r.coordinators[0].error_code, r.coordinators[0].node_id)
        } else {
            (r.error_code, r.node_id)
        };
        assert_eq!((error, node), (0, BrokerId(1)), "FindCoordinator v{v}");
    }
    for v in range(ApiKey::JoinGroup) {
        let group = format!("join-v{v}");
        let protocol = join_group_request::JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(bytes::Bytes::from_static(b"m"));
        let request = JoinGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.clone())))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![protocol]);
        let mut r = client.call(v, &request).await;
        if v >= 4 {
            assert_eq!(
                r.error_code,
                kafka_protocol::ResponseError::MemberIdRequired.code(),
                "JoinGroup v{v}"
            );
            r = client
                .call(v, &request.clone().with_member_id(r.member_id.clone()))
                .await;
        }
        assert_eq!(r.error_code, 0, "JoinGroup v{v}");
        assert_eq!(
            (r.generation_id, &r.leader),
            (1, &r.member_id),
            "JoinGroup v{v}"
        );
        let member = r.member_id.clone();
        let sync_version = v.min(5);
        let assignment = sync_group_request::SyncGroupRequestAssignment::default()
            .with_member_id(member.clone())
            .with_assignment(bytes::Bytes::from_static(b"a"));
        let mut sync = SyncGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.clone())))
            .with_generation_id(1)
            .with_member_id(member.clone())
            .with_assignments(vec![assignment]);
        if sync_version >= 5 {
            sync.protocol_type = Some(StrBytes::from_static_str("consumer"));
            sync.protocol_name = Some(StrBytes::from_static_str("range"));
        }
        let s = client.call(sync_version, &sync).await;
        assert_eq!(
            (s.error_code, s.assignment.as_ref()),
            (0, &b"a"[..]),
            "SyncGroup v{sync_version}"
        );
        let heartbeat_version = v.min(4);
        let h = client
            .call(
                heartbeat_version,
                &HeartbeatRequest::default()
                    .with_group_id(GroupId(StrBytes::from_string(group.clone())))
                    .with_generation_id(1)
                    .with_member_id(member.clone()),
            )
            .await;
        assert_eq!(h.error_code, 0, "Heartbeat v{heartbeat_version}");
        let leave_version = v.min(5);
        let mut leave = LeaveGroupRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.clone())));
        if leave_version >= 3 {
            leave.members =
                vec![leave_group_request::MemberIdentity::default().with_member_id(member.clone())];
        } else {
            leave.member_id = member.clone();
        }
        let l = client.call(leave_version, &leave).await;
        let leave_error = if leave_version >= 3 {
            l.members[0].error_code
        } else {
            l.error_code
        };
        assert_eq!(leave_error, 0, "LeaveGroup v{leave_version}");
    }
    for v in range(ApiKey::OffsetCommit) {
        let partition = offset_commit_request::OffsetCommitRequestPartition::default()
            .with_partition_index(0)
            .with_committed_offset(10 + v as i64);
        let topic = offset_commit_request::OffsetCommitRequestTopic::default()
            .with_name(name("versions"))
            .with_partitions(vec![partition]);
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("committer")))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![topic]);
        let r = client.call(v, &request).await;
        assert_eq!(r.topics[0].partitions[0].error_code, 0, "OffsetCommit v{v}");
    }
    for v in range(ApiKey::OffsetFetch) {
        let committed = if v >= 8 {
            let group = offset_fetch_request::OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(StrBytes::from_static_str("committer")))
                .with_topics(Some(vec![
                    offset_fetch_request::OffsetFetchRequestTopics::default()
                        .with_name(name("versions"))
                        .with_partition_indexes(vec![0]),
                ]));
            let r = client
                .call(v, &OffsetFetchRequest::default().with_groups(vec![group]))
                .await;
            r.groups[0].topics[0].partitions[0].committed_offset
        } else {
            let topic = offset_fetch_request::OffsetFetchRequestTopic::default()
                .with_name(name("versions"))
                .with_partition_indexes(vec![0]);
            let r = client
                .call(
                    v,
                    &OffsetFetchRequest::default()
                        .with_group_id(GroupId(StrBytes::from_static_str("committer")))
                        .with_topics(Some(vec![topic])),
                )
                .await;
            r.topics[0].partitions[0].committed_offset
        };
        assert_eq!(committed, 18, "OffsetFetch v{v}: the last commit (v8) wins");
    }
    for v in range(ApiKey::ListGroups) {
        let r = client.call(v, &ListGroupsRequest::default()).await;
        assert_eq!(r.error_code, 0, "ListGroups v{v}");
        assert!(
            r.groups.iter().any(|g| g.group_id.as_str() == "committer"),
            "ListGroups v{v}"
        );
    }
    for v in range(ApiKey::DescribeGroups) {
        let r = client
            .call(
                v,
                &DescribeGroupsRequest::default()
                    .with_groups(vec![GroupId(StrBytes::from_static_str("committer"))]),
            )
            .await;
        assert_eq!(
            (r.groups[0].error_code, r.groups[0].group_state.as_str()),
            (0, "Empty"),
            "DescribeGroups v{v}"
        );
    }
    for v in range(ApiKey::OffsetDelete) {
        let topic = offset_delete_request::OffsetDeleteRequestTopic::default()
            .with_name(name("versions"))
            .with_partitions(vec![
                offset_delete_request::OffsetDeleteRequestPartition::default()
                    .with_partition_index(0),
            ]);
        let request = OffsetDeleteRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("committer")))
            .with_topics(vec![topic]);
        let r = client.call(v, &request).await;
        assert_eq!(
            (r.error_code, r.topics[0].partitions[0].error_code),
            (0, 0),
            "OffsetDelete v{v}"
        );
    }
    for v in range(ApiKey::DeleteGroups) {
        let group = GroupId(StrBytes::from_string(format!("join-v{v}")));
        let r = client
            .call(
                v,
                &DeleteGroupsRequest::default().with_groups_names(vec![group]),
            )
            .await;
        assert_eq!(r.results[0].error_code, 0, "DeleteGroups v{v}");
    }
    for v in range(ApiKey::DescribeCluster) {
        let r = client.call(v, &DescribeClusterRequest::default()).await;
        assert_eq!(r.error_code, 0, "DescribeCluster v{v}");
        assert_eq!(r.brokers.len(), 1, "DescribeCluster v{v}");
    }
    let mut producer_ids = Vec::new();
    for v in range(ApiKey::InitProducerId) {
        let r = client
            .call(
                v,
                &InitProducerIdRequest::default()
                    .with_transactional_id(None)
                    .with_transaction_timeout_ms(60_000)
                    .with_producer_id(ProducerId(-1))
                    .with_producer_epoch(-1),
            )
            .await;
        assert_eq!(r.error_code, 0, "InitProducerId v{v}");
        assert_eq!(r.producer_epoch, 0, "InitProducerId v{v}");
        producer_ids.push(r.producer_id.0);
    }
    producer_ids.dedup();
    assert_eq!(
        producer_ids.len(),
        range(ApiKey::InitProducerId).count(),
        "a new producer id each time"
    );

    // Transactions: a transactional id per version, through a whole transaction.
    for v in range(ApiKey::AddPartitionsToTxn) {
        let id = TransactionalId(StrBytes::from_string(format!("versions-{v}")));
        let init = client
            .call(
                4,
                &InitProducerIdRequest::default()
                    .with_transactional_id(Some(id.clone()))
                    .with_transaction_timeout_ms(60_000)
                    .with_producer_id(ProducerId(-1))
                    .with_producer_epoch(-1),
            )
            .await;
        assert_eq!(
            init.error_code, 0,
            "InitProducerId (transactional) for v{v}"
        );
        let topic = add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
            .with_name(name("versions"))
            .with_partitions(vec![0]);
        let request = if v <= 3 {
            AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(id.clone())
                .with_v3_and_below_producer_id(init.producer_id)
                .with_v3_and_below_producer_epoch(init.producer_epoch)
                .with_v3_and_below_topics(vec![topic])
        } else {
            let txn = add_partitions_to_txn_request::AddPartitionsToTxnTransaction::default()
                .with_transactional_id(id.clone())
                .with_producer_id(init.producer_id)
                .with_producer_epoch(init.producer_epoch)
                .with_topics(vec![topic]);
            AddPartitionsToTxnRequest::default().with_transactions(vec![txn])
        };
        let r = client.call(v, &request).await;
        let results = if v <= 3 {
            r.results_by_topic_v3_and_below
        } else {
            r.results_by_transaction[0].topic_results.clone()
        };
        assert_eq!(
            results[0].results_by_partition[0].partition_error_code, 0,
            "AddPartitionsToTxn v{v}"
        );
        let av = v.min(*range(ApiKey::AddOffsetsToTxn).end());
        let r = client
            .call(
                av,
                &AddOffsetsToTxnRequest::default()
                    .with_transactional_id(id.clone())
                    .with_producer_id(init.producer_id)
                    .with_producer_epoch(init.producer_epoch)
                    .with_group_id(GroupId(StrBytes::from_static_str("versions-group"))),
            )
            .await;
        assert_eq!(r.error_code, 0, "AddOffsetsToTxn v{av}");
        let tv = v.min(*range(ApiKey::TxnOffsetCommit).end());
        let partition = txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
            .with_partition_index(0)
            .with_committed_offset(1);
        let topic = txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
            .with_name(name("versions"))
            .with_partitions(vec![partition]);
        let r = client
            .call(
                tv,
                &TxnOffsetCommitRequest::default()
                    .with_transactional_id(id.clone())
                    .with_group_id(GroupId(StrBytes::from_static_str("versions-group")))
                    .with_producer_id(init.producer_id)
                    .with_producer_epoch(init.producer_epoch)
                    .with_generation_id(-1)
                    .with_topics(vec![topic]),
            )
            .await;
        assert_eq!(
            r.topics[0].partitions[0].error_code, 0,
            "TxnOffsetCommit v{tv}"
        );
        let ev = v.min(*range(ApiKey::EndTxn).end());
        let r = client
            .call(
                ev,
                &EndTxnRequest::default()
                    .with_transactional_id(id)
                    .with_producer_id(init.producer_id)
                    .with_producer_epoch(init.producer_epoch)
                    .with_committed(v % 2 == 0),
            )
            .await;
        assert_eq!(r.error_code, 0, "EndTxn v{ev}");
        // v5+ (transaction version 2): the answer carries the bumped epoch.
        let expected = if ev >= 5 {
            (init.producer_id.0, init.producer_epoch + 1)
        } else {
            (-1, -1)
        };
        assert_eq!(
            (r.producer_id.0, r.producer_epoch),
            expected,
            "EndTxn v{ev}"
        );
    }
    for v in range(ApiKey::DescribeTransactions) {
        let ids = vec![
            TransactionalId(StrBytes::from_static_str("versions-0")),
            TransactionalId(StrBytes::from_static_str("nobody")),
        ];
        let r = client
            .call(
                v,
                &DescribeTransactionsRequest::default().with_transactional_ids(ids),
            )
            .await;
        assert_eq!(
            r.transaction_states[0].error_code, 0,
            "DescribeTransactions v{v}"
        );
        assert_eq!(
            r.transaction_states[0].transaction_state.as_str(),
            "CompleteCommit"
        );
        assert_eq!(
            r.transaction_states[1].error_code,
            kafka_protocol::ResponseError::TransactionalIdNotFound.code()
        );
    }
    for v in range(ApiKey::DescribeProducers) {
        let topic = describe_producers_request::TopicRequest::default()
            .with_name(name("versions"))
            .with_partition_indexes(vec![0, 9]);
        let r = client
            .call(
                v,
                &DescribeProducersRequest::default().with_topics(vec![topic]),
            )
            .await;
        let partitions = &r.topics[0].partitions;
        assert_eq!(partitions[0].error_code, 0, "DescribeProducers v{v}");
        assert!(
            partitions[0].active_producers.len() >= 5,
            "the transactional producers that wrote markers: {:?}",
            partitions[0].active_producers
        );
        assert_eq!(
            partitions[1].error_code,
            kafka_protocol::ResponseError::UnknownTopicOrPartition.code()
        );
    }
    for v in range(ApiKey::WriteTxnMarkers) {
        let marker = write_txn_markers_request::WritableTxnMarker::default()
            .with_producer_id(ProducerId(999_999))
            .with_producer_epoch(0)
            .with_transaction_result(false)
            .with_topics(vec![
                write_txn_markers_request::WritableTxnMarkerTopic::default()
                    .with_name(name("versions"))
                    .with_partition_indexes(vec![0, 9]),
            ]);
        let r = client
            .call(
                v,
                &WriteTxnMarkersRequest::default().with_markers(vec![marker]),
            )
            .await;
        let partitions = &r.markers[0].topics[0].partitions;
        assert_eq!(partitions[0].error_code, 0, "WriteTxnMarkers v{v}");
        assert_eq!(
            partitions[1].error_code,
            kafka_protocol::ResponseError::UnknownTopicOrPartition.code()
        );
    }
    for v in range(ApiKey::ListTransactions) {
        let r = client
            .call(
                v,
                &ListTransactionsRequest::default().with_duration_filter(-1),
            )
            .await;
        assert_eq!(r.error_code, 0, "ListTransactions v{v}");
        let ids = range(ApiKey::AddPartitionsToTxn).count();
        assert_eq!(r.transaction_states.len(), ids, "ListTransactions v{v}");
    }
    // On a PLAINTEXT listener both SASL APIs are ILLEGAL_SASL_STATE (sasl.rs runs the exchange).
    for v in range(ApiKey::SaslHandshake) {
        let request =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
        let r = client.call(v, &request).await;
        assert_eq!(r.error_code, 34, "SaslHandshake v{v}");
    }
    for v in range(ApiKey::SaslAuthenticate) {
        let r = client.call(v, &SaslAuthenticateRequest::default()).await;
        assert_eq!(r.error_code, 34, "SaslAuthenticate v{v}");
    }
    for v in range(ApiKey::AlterUserScramCredentials) {
        let upsertion = alter_user_scram_credentials_request::ScramCredentialUpsertion::default()
            .with_name(StrBytes::from_string(format!("user-v{v}")))
            .with_mechanism(1)
            .with_iterations(4096)
            .with_salt(bytes::Bytes::from_static(b"salt"))
            .with_salted_password(bytes::Bytes::from(vec![1u8; 32]));
        let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![upsertion]);
        let r = client.call(v, &request).await;
        assert_eq!(r.results[0].error_code, 0, "AlterUserScramCredentials v{v}");
    }
    for v in range(ApiKey::DescribeUserScramCredentials) {
        let r = client
            .call(v, &DescribeUserScramCredentialsRequest::default())
            .await;
        assert_eq!(r.error_code, 0, "DescribeUserScramCredentials v{v}");
        assert_eq!(r.results.len(), 1, "DescribeUserScramCredentials v{v}");
    }
    for v in range(ApiKey::DescribeClientQuotas) {
        let user = describe_client_quotas_request::ComponentData::default()
            .with_entity_type(StrBytes::from_static_str("user"))
            .with_match_type(2)
            .with_match(None);
        let request = DescribeClientQuotasRequest::default().with_components(vec![user]);
        let r = client.call(v, &request).await;
        assert_eq!(
            (r.error_code, r.entries),
            (0, Some(Vec::new())),
            "DescribeClientQuotas v{v}"
        );
    }
    for v in range(ApiKey::AlterClientQuotas) {
        // validate_only: checked whole, nothing set (DescribeClientQuotas above stays empty).
        let entity = alter_client_quotas_request::EntityData::default()
            .with_entity_type(StrBytes::from_static_str("user"))
            .with_entity_name(None);
        let op = alter_client_quotas_request::OpData::default()
            .with_key(StrBytes::from_static_str("consumer_byte_rate"))
            .with_value(1_048_576.0);
        let entry = alter_client_quotas_request::EntryData::default()
            .with_entity(vec![entity])
            .with_ops(vec![op]);
        let request = AlterClientQuotasRequest::default()
            .with_entries(vec![entry])
            .with_validate_only(true);
        let r = client.call(v, &request).await;
        assert_eq!(r.entries[0].error_code, 0, "AlterClientQuotas v{v}");
    }
    // No authorizer configured: the ACL APIs answer SECURITY_DISABLED, as Kafka's do.
    for v in range(ApiKey::DescribeAcls) {
        let request = DescribeAclsRequest::default()
            .with_resource_type_filter(1)
            .with_pattern_type_filter(1)
            .with_operation(1)
            .with_permission_type(1);
        let r = client.call(v, &request).await;
        assert_eq!(r.error_code, 54, "DescribeAcls v{v}");
    }
    for v in range(ApiKey::CreateAcls) {
        let creation = create_acls_request::AclCreation::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("versions"))
            .with_resource_pattern_type(3)
            .with_principal(StrBytes::from_static_str("User:alice"))
            .with_host(StrBytes::from_static_str("*"))
            .with_operation(3)
            .with_permission_type(3);
        let r = client
            .call(
                v,
                &CreateAclsRequest::default().with_creations(vec![creation]),
            )
            .await;
        assert_eq!(r.results[0].error_code, 54, "CreateAcls v{v}");
    }
    for v in range(ApiKey::DeleteAcls) {
        let filter = delete_acls_request::DeleteAclsFilter::default()
            .with_resource_type_filter(1)
            .with_pattern_type_filter(1)
            .with_operation(1)
            .with_permission_type(1);
        let r = client
            .call(v, &DeleteAclsRequest::default().with_filters(vec![filter]))
            .await;
        assert_eq!(r.filter_results[0].error_code, 54, "DeleteAcls v{v}");
    }
    broker.shutdown().await.unwrap();
}
