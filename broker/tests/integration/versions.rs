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
    let broker = common::start(dir.path(), &[]).await;
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
    for v in range(ApiKey::DescribeCluster) {
        let r = client.call(v, &DescribeClusterRequest::default()).await;
        assert_eq!(r.error_code, 0, "DescribeCluster v{v}");
        assert_eq!(r.brokers.len(), 1, "DescribeCluster v{v}");
    }
    broker.shutdown().await.unwrap();
}
