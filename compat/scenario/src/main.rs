//! A scripted client session for the differential test (`compat/run.sh`, compared by
//! `compat/compare.py`): the same requests go to Weir and to a real Apache Kafka broker, and
//! each prints a JSON transcript of what it observed (error codes, offsets, records, configs,
//! metadata shape). Values that legitimately differ between any two brokers (ids, ports, append
//! times) are left out.
//!
//! Usage: weir-compat-scenario HOST:PORT RUN_ID [SECTION]  (one section only, while developing it)
//!        weir-compat-scenario HOST:PORT RUN_ID security SASL_SSL_HOST:PORT CA_FILE
//!        (the security section alone: `compat/security/run.sh` configures the brokers for it)
//!        weir-compat-scenario HOST:PORT RUN_ID oauth SASL_SSL_HOST:PORT CA_FILE KEYS_DIR
//!        weir-compat-scenario oauth-keys DIR   (the JWKS and signing keys, before the brokers start)

// The session is a script: each section one sequence of steps, read top to bottom.
#![allow(clippy::too_many_lines)]

mod broker_configs;
mod compression;
mod fencing;
mod fetch_sessions;
mod oauth;
mod security;
mod static_members;
mod transactions;

use std::collections::BTreeMap;

use anyhow::Context;
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use serde_json::{json, Value};
use weir_wire::ProtocolClient;

const TOPIC_RESOURCE: i8 = 2;
/// Configs compared between the brokers (Weir implements these; Kafka has many more).
const COMPARED_CONFIGS: &[&str] = &[
    "cleanup.policy",
    "compression.type",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.zstd.level",
    "delete.retention.ms",
    "max.compaction.lag.ms",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "max.message.bytes",
    "message.timestamp.type",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.ms",
];

struct Scenario {
    client: ProtocolClient,
    transcript: BTreeMap<String, Value>,
    run: String,
}

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// A producer batch: (key, value, timestamp) per record, with one header each.
fn batch(records: &[(Option<&str>, &str, i64)], compression: Compression) -> Bytes {
    let records: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (key, value, timestamp))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: i as i32 - 1,
            timestamp: *timestamp,
            key: key.map(|k| Bytes::copy_from_slice(k.as_bytes())),
            value: Some(Bytes::copy_from_slice(value.as_bytes())),
            headers: [(text("n"), Some(Bytes::from(i.to_string())))]
                .into_iter()
                .collect(),
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        records.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .expect("encode batch");
    buf.freeze()
}

/// A batch of `count` records from an idempotent producer, sequences from `first_sequence`.
fn idempotent_batch(producer_id: i64, epoch: i16, first_sequence: i32, count: usize) -> Bytes {
    let records: Vec<Record> = (0..count)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id,
            producer_epoch: epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: first_sequence + i as i32,
            timestamp: 1_700_000_000_000 + i as i64,
            key: None,
            value: Some(Bytes::from(format!(
                "e{epoch}-s{}",
                first_sequence + i as i32
            ))),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options).expect("encode batch");
    buf.freeze()
}

impl Scenario {
    fn note(&mut self, step: &str, value: Value) {
        self.transcript.insert(step.to_string(), value);
    }

    /// A request sent again (up to 100 times, 100 ms apart) while `busy` says its answer is a
    /// passing state — a coordinator loading, markers still being written — as clients do.
    async fn call_retrying<R: kafka_protocol::protocol::Request>(
        &mut self,
        version: i16,
        request: &R,
        busy: impl Fn(&R::Response) -> bool,
    ) -> anyhow::Result<R::Response> {
        let mut response = self.client.call(version, request).await?;
        for _ in 0..100 {
            if !busy(&response) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            response = self.client.call(version, request).await?;
        }
        Ok(response)
    }

    fn topic(&self, base: &str) -> String {
        format!("{base}-{}", self.run)
    }

    async fn create_topic(
        &mut self,
        topic: &str,
        partitions: i32,
        factor: i16,
        configs: &[(&str, &str)],
    ) -> anyhow::Result<Value> {
        let configs = configs
            .iter()
            .map(|(k, v)| {
                create_topics_request::CreatableTopicConfig::default()
                    .with_name(text(k))
                    .with_value(Some(text(v)))
            })
            .collect();
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![create_topics_request::CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(partitions)
                .with_replication_factor(factor)
                .with_configs(configs)]);
        let response = self.client.call(7, &request).await?;
        let result = &response.topics[0];
        Ok(json!({"error": result.error_code, "partitions": result.num_partitions}))
    }

    /// CreateTopics with `validate_only`: what would be answered, nothing created.
    async fn validate_topic(&mut self, topic: &str, partitions: i32) -> anyhow::Result<Value> {
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_validate_only(true)
            .with_topics(vec![create_topics_request::CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(partitions)
                .with_replication_factor(1)]);
        let response = self.client.call(7, &request).await?;
        Ok(json!({"error": response.topics[0].error_code}))
    }

    /// Waits until a new topic's partitions have a leader (Kafka publishes topics through its
    /// metadata log, so a request right after CreateTopics may not find it yet).
    async fn wait_ready(&mut self, topic: &str) -> anyhow::Result<()> {
        for _ in 0..50 {
            let step = self.metadata(topic, false).await?;
            let partitions = step["partitions"].as_array().cloned().unwrap_or_default();
            if step["error"] == 0
                && !partitions.is_empty()
                && partitions.iter().all(|p| p["error"] == 0)
                && self.every_partition_led(topic, partitions.len()).await?
            {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// Whether every partition answers ListOffsets: a broker can name a partition's leader in
    /// its metadata a moment before that leader serves it (Kafka answers
    /// NOT_LEADER_OR_FOLLOWER until then).
    async fn every_partition_led(&mut self, topic: &str, count: usize) -> anyhow::Result<bool> {
        for partition in 0..count as i32 {
            if self.list_offset(topic, partition, -1).await?["error"] != 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    async fn metadata(&mut self, topic: &str, auto_create: bool) -> anyhow::Result<Value> {
        let request = MetadataRequest::default()
            .with_allow_auto_topic_creation(auto_create)
            .with_topics(Some(vec![metadata_request::MetadataRequestTopic::default(
            )
            .with_name(Some(name(topic)))]));
        let response = self.client.call(12, &request).await?;
        let topic = &response.topics[0];
        let mut partitions: Vec<Value> = topic
            .partitions
            .iter()
            .map(|p| json!({"index": p.partition_index, "error": p.error_code, "replicas": p.replica_nodes.len(), "isr": p.isr_nodes.len()}))
            .collect();
        partitions.sort_by_key(|p| p["index"].as_i64());
        Ok(json!({
            "error": topic.error_code,
            "partitions": partitions,
            "has_topic_id": !topic.topic_id.is_nil(),
            "brokers": response.brokers.len(),
            "has_cluster_id": response.cluster_id.is_some(),
        }))
    }

    async fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        acks: i16,
        records: Bytes,
    ) -> anyhow::Result<Value> {
        self.produce_as(None, topic, partition, acks, records).await
    }

    async fn produce_as(
        &mut self,
        transactional_id: Option<&str>,
        topic: &str,
        partition: i32,
        acks: i16,
        records: Bytes,
    ) -> anyhow::Result<Value> {
        self.produce_at(9, transactional_id, topic, partition, acks, records)
            .await
    }

    /// Produce as a client of `version` sends it (v12+: transaction version 2).
    async fn produce_at(
        &mut self,
        version: i16,
        transactional_id: Option<&str>,
        topic: &str,
        partition: i32,
        acks: i16,
        records: Bytes,
    ) -> anyhow::Result<Value> {
        let request = ProduceRequest::default()
            .with_transactional_id(
                transactional_id.map(|id| TransactionalId(StrBytes::from_string(id.to_string()))),
            )
            .with_acks(acks)
            .with_timeout_ms(10_000)
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(vec![
                    produce_request::PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(records)),
                ])]);
        let mut response = self.client.call(version, &request).await?;
        // NOT_LEADER_OR_FOLLOWER while Kafka's new partition elects its leader: nothing was
        // written, so sending again is safe.
        for _ in 0..50 {
            if response.responses[0].partition_responses[0].error_code != 6 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            response = self.client.call(version, &request).await?;
        }
        let result = &response.responses[0].partition_responses[0];
        Ok(json!({
            "error": result.error_code,
            "base_offset": result.base_offset,
            "log_start_offset": result.log_start_offset,
            "record_errors": result.record_errors.iter().map(|e| e.batch_index).collect::<Vec<_>>(),
        }))
    }

    async fn fetch(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
        max_bytes: i32,
    ) -> anyhow::Result<Value> {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(max_bytes)
            .with_topics(vec![fetch_request::FetchTopic::default()
                .with_topic(name(topic))
                .with_partitions(vec![fetch_request::FetchPartition::default()
                    .with_partition(partition)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(max_bytes)])]);
        let response = self.client.call(12, &request).await?;
        let data = &response.responses[0].partitions[0];
        let mut records = Vec::new();
        let mut first_batch_base = None;
        if let Some(bytes) = &data.records {
            let mut bytes = bytes.clone();
            for set in RecordBatchDecoder::decode_all(&mut bytes)? {
                for record in set.records {
                    first_batch_base.get_or_insert(record.offset);
                    if record.offset < offset {
                        continue;
                    }
                    let header = record.headers.get(&text("n")).cloned().flatten();
                    records.push(json!({
                        "offset": record.offset,
                        "key": record.key.map(|k| String::from_utf8_lossy(&k).into_owned()),
                        "value": record.value.map(|v| String::from_utf8_lossy(&v).into_owned()),
                        "timestamp": record.timestamp,
                        "header_n": header.map(|h| String::from_utf8_lossy(&h).into_owned()),
                    }));
                }
            }
        }
        Ok(json!({
            "error": data.error_code,
            "high_watermark": data.high_watermark,
            "last_stable_offset": data.last_stable_offset,
            "log_start_offset": data.log_start_offset,
            "first_returned_offset": first_batch_base,
            "records": records,
        }))
    }

    async fn list_offset(
        &mut self,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> anyhow::Result<Value> {
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![list_offsets_request::ListOffsetsTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![
                    list_offsets_request::ListOffsetsPartition::default()
                        .with_partition_index(partition)
                        .with_timestamp(timestamp),
                ])]);
        let response = self.client.call(7, &request).await?;
        let result = &response.topics[0].partitions[0];
        Ok(
            json!({"error": result.error_code, "offset": result.offset, "timestamp": result.timestamp}),
        )
    }

    async fn describe_configs(&mut self, topic: &str) -> anyhow::Result<Value> {
        let request = DescribeConfigsRequest::default().with_resources(vec![
            describe_configs_request::DescribeConfigsResource::default()
                .with_resource_type(TOPIC_RESOURCE)
                .with_resource_name(text(topic))
                .with_configuration_keys(None),
        ]);
        let response = self.client.call(4, &request).await?;
        let result = &response.results[0];
        let configs: BTreeMap<String, Value> = result
            .configs
            .iter()
            .filter(|c| COMPARED_CONFIGS.contains(&c.name.as_str()))
            .map(|c| {
                let value = c.value.as_ref().map(|v| v.to_string());
                (
                    c.name.to_string(),
                    json!({"value": value, "source": c.config_source, "type": c.config_type}),
                )
            })
            .collect();
        Ok(json!({"error": result.error_code, "configs": configs}))
    }

    async fn incremental_alter(
        &mut self,
        topic: &str,
        key: &str,
        value: &str,
    ) -> anyhow::Result<Value> {
        let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
            incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(TOPIC_RESOURCE)
                .with_resource_name(text(topic))
                .with_configs(vec![
                    incremental_alter_configs_request::AlterableConfig::default()
                        .with_name(text(key))
                        .with_config_operation(0)
                        .with_value(Some(text(value))),
                ]),
        ]);
        let response = self.client.call(1, &request).await?;
        Ok(json!({"error": response.responses[0].error_code}))
    }

    async fn create_partitions(
        &mut self,
        topic: &str,
        count: i32,
        assignments: Option<usize>,
    ) -> anyhow::Result<Value> {
        let assignments = assignments.map(|n| {
            (0..n)
                .map(|_| {
                    create_partitions_request::CreatePartitionsAssignment::default()
                        .with_broker_ids(vec![BrokerId(1)])
                })
                .collect()
        });
        let request = CreatePartitionsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![
                create_partitions_request::CreatePartitionsTopic::default()
                    .with_name(name(topic))
                    .with_count(count)
                    .with_assignments(assignments),
            ]);
        let response = self.client.call(3, &request).await?;
        Ok(json!({"error": response.results[0].error_code}))
    }

    async fn delete_records(
        &mut self,
        topic: &str,
        partition: i32,
        offset: i64,
    ) -> anyhow::Result<Value> {
        let request = DeleteRecordsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![delete_records_request::DeleteRecordsTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![
                    delete_records_request::DeleteRecordsPartition::default()
                        .with_partition_index(partition)
                        .with_offset(offset),
                ])]);
        let response = self.client.call(2, &request).await?;
        let result = &response.topics[0].partitions[0];
        Ok(json!({"error": result.error_code, "low_watermark": result.low_watermark}))
    }

    async fn delete_topic(&mut self, topic: &str) -> anyhow::Result<Value> {
        let request = DeleteTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_topics(vec![
                delete_topics_request::DeleteTopicState::default().with_name(Some(name(topic)))
            ]);
        let response = self.client.call(6, &request).await?;
        Ok(json!({"error": response.responses[0].error_code}))
    }

    /// A one-member group session: join (KIP-394 round trip), sync, heartbeats, commits, offset
    /// fetches, list/describe/delete, with the error cases. Member ids are random, so only their
    /// shape is recorded.
    async fn group_session(&mut self, topic: &str) -> anyhow::Result<()> {
        let group = GroupId(text(&self.topic("compat-group")));
        // As clients do: find the coordinator first (Kafka creates __consumer_offsets then, and
        // answers COORDINATOR_NOT_AVAILABLE until it is ready).
        let find = FindCoordinatorRequest::default().with_key(group.0.clone());
        let mut found = self.client.call(3, &find).await?;
        for _ in 0..100 {
            if found.error_code == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            found = self.client.call(3, &find).await?;
        }
        self.note(
            "group/find_coordinator",
            json!({"error": found.error_code, "has_node": found.node_id.0 >= 0}),
        );
        let protocol = join_group_request::JoinGroupRequestProtocol::default()
            .with_name(text("range"))
            .with_metadata(Bytes::from_static(b"subscription"));
        let join = JoinGroupRequest::default()
            .with_group_id(group.clone())
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_protocol_type(text("consumer"))
            .with_protocols(vec![protocol]);
        // Clients retry while the coordinator loads its partition (Kafka answers NOT_COORDINATOR
        // or COORDINATOR_LOAD_IN_PROGRESS for a moment after creating __consumer_offsets).
        let mut first = self.client.call(5, &join).await?;
        for _ in 0..100 {
            if ![14, 15, 16].contains(&first.error_code) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            first = self.client.call(5, &join).await?;
        }
        self.note(
            "group/join_without_member_id",
            json!({"error": first.error_code, "has_member_id": !first.member_id.is_empty()}),
        );
        let member = first.member_id.clone();
        let joined = self
            .client
            .call(5, &join.clone().with_member_id(member.clone()))
            .await?;
        self.note(
            "group/join",
            json!({
                "error": joined.error_code,
                "generation": joined.generation_id,
                "is_leader": joined.leader == member,
                "members": joined.members.len(),
                "protocol": joined.protocol_name.as_ref().map(|p| p.to_string()),
            }),
        );
        let sync = |generation: i32, member: &StrBytes| {
            SyncGroupRequest::default()
                .with_group_id(group.clone())
                .with_generation_id(generation)
                .with_member_id(member.clone())
                .with_assignments(vec![
                    sync_group_request::SyncGroupRequestAssignment::default()
                        .with_member_id(member.clone())
                        .with_assignment(Bytes::from_static(b"assignment")),
                ])
        };
        let synced = self
            .client
            .call(3, &sync(joined.generation_id, &member))
            .await?;
        self.note("group/sync", json!({"error": synced.error_code, "assignment": String::from_utf8_lossy(&synced.assignment)}));
        let stale = self
            .client
            .call(3, &sync(joined.generation_id + 7, &member))
            .await?;
        self.note(
            "group/sync_wrong_generation",
            json!({"error": stale.error_code}),
        );
        let heartbeat = |generation: i32, member: StrBytes| {
            HeartbeatRequest::default()
                .with_group_id(group.clone())
                .with_generation_id(generation)
                .with_member_id(member)
        };
        let ok = self
            .client
            .call(3, &heartbeat(joined.generation_id, member.clone()))
            .await?;
        let wrong_generation = self
            .client
            .call(3, &heartbeat(joined.generation_id + 1, member.clone()))
            .await?;
        let unknown = self
            .client
            .call(3, &heartbeat(joined.generation_id, text("nobody")))
            .await?;
        self.note(
            "group/heartbeats",
            json!([
                ok.error_code,
                wrong_generation.error_code,
                unknown.error_code
            ]),
        );

        let commit = |generation: i32, member: StrBytes, offset: i64| {
            OffsetCommitRequest::default()
                .with_group_id(group.clone())
                .with_generation_id_or_member_epoch(generation)
                .with_member_id(member)
                .with_topics(vec![
                    offset_commit_request::OffsetCommitRequestTopic::default()
                        .with_name(name(topic))
                        .with_partitions(vec![
                            offset_commit_request::OffsetCommitRequestPartition::default()
                                .with_partition_index(0)
                                .with_committed_offset(offset)
                                .with_committed_metadata(Some(text("meta"))),
                        ]),
                ])
        };
        let committed = self
            .client
            .call(8, &commit(joined.generation_id, member.clone(), 4))
            .await?;
        let fenced = self
            .client
            .call(8, &commit(joined.generation_id + 1, member.clone(), 5))
            .await?;
        let outsider = self.client.call(8, &commit(-1, text(""), 6)).await?;
        self.note(
            "group/commits",
            json!([
                committed.topics[0].partitions[0].error_code,
                fenced.topics[0].partitions[0].error_code,
                outsider.topics[0].partitions[0].error_code,
            ]),
        );
        let fetch = OffsetFetchRequest::default()
            .with_group_id(group.clone())
            .with_topics(Some(vec![
                offset_fetch_request::OffsetFetchRequestTopic::default()
                    .with_name(name(topic))
                    .with_partition_indexes(vec![0, 1]),
            ]));
        let fetched = self.client.call(7, &fetch).await?;
        let offsets: BTreeMap<i32, Value> = fetched
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .map(|p| (p.partition_index, json!({"offset": p.committed_offset, "metadata": p.metadata.as_ref().map(|m| m.to_string()), "error": p.error_code})))
            .collect();
        self.note(
            "group/offset_fetch",
            json!({"error": fetched.error_code, "offsets": offsets}),
        );

        let listed = self.client.call(4, &ListGroupsRequest::default()).await?;
        let mine: Vec<Value> = listed
            .groups
            .iter()
            .filter(|g| g.group_id == group)
            .map(|g| json!({"state": g.group_state.to_string(), "protocol_type": g.protocol_type.to_string()}))
            .collect();
        self.note(
            "group/list",
            json!({"error": listed.error_code, "this_group": mine}),
        );
        let described = self
            .client
            .call(
                5,
                &DescribeGroupsRequest::default()
                    .with_groups(vec![group.clone(), GroupId(text("never-seen"))]),
            )
            .await?;
        // Brokers may answer batched groups in any order: key the results by group.
        let label = |id: &GroupId| {
            if *id == group {
                "this_group"
            } else {
                "unknown_group"
            }
        };
        let shapes: BTreeMap<&str, Value> = described
            .groups
            .iter()
            .map(|g| (label(&g.group_id), json!({
                "error": g.error_code,
                "state": g.group_state.to_string(),
                "protocol": g.protocol_data.to_string(),
                "members": g.members.len(),
                "client_hosts": g.members.iter().map(|m| m.client_host.to_string()).collect::<Vec<_>>(),
            })))
            .collect();
        self.note("group/describe", json!(shapes));
        let busy = self
            .client
            .call(
                2,
                &DeleteGroupsRequest::default()
                    .with_groups_names(vec![group.clone(), GroupId(text("never-seen"))]),
            )
            .await?;
        self.note(
            "group/delete_non_empty_and_unknown",
            json!(busy
                .results
                .iter()
                .map(|r| (label(&r.group_id), r.error_code))
                .collect::<BTreeMap<_, _>>()),
        );
        let leave = LeaveGroupRequest::default()
            .with_group_id(group.clone())
            .with_members(vec![
                leave_group_request::MemberIdentity::default().with_member_id(member.clone())
            ]);
        let left = self.client.call(3, &leave).await?;
        self.note(
            "group/leave",
            json!({"error": left.error_code, "member_errors": left.members.iter().map(|m| m.error_code).collect::<Vec<_>>()}),
        );
        let deleted = self
            .client
            .call(
                2,
                &DeleteGroupsRequest::default().with_groups_names(vec![group.clone()]),
            )
            .await?;
        self.note("group/delete_empty", json!(deleted.results[0].error_code));
        let after = self.client.call(7, &fetch).await?;
        self.note(
            "group/offset_fetch_after_delete",
            json!({
                "error": after.error_code,
                "offsets": after
                    .topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| (p.partition_index, p.committed_offset)))
                    .collect::<BTreeMap<_, _>>(),
            }),
        );
        Ok(())
    }

    /// InitProducerId for an idempotent producer (no transactional id). Kafka's first one waits
    /// for its transaction coordinator to load: the retriable errors (COORDINATOR_LOAD_IN_PROGRESS,
    /// COORDINATOR_NOT_AVAILABLE) are retried, as clients do.
    async fn init_idempotent(&mut self) -> anyhow::Result<InitProducerIdResponse> {
        let request = InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        self.call_retrying(4, &request, |r| matches!(r.error_code, 14 | 15))
            .await
    }

    /// Idempotent producers: InitProducerId, in-sequence batches, a retried batch (answered with
    /// its first offset), a gap, a new epoch, a stale epoch, an unknown producer.
    async fn idempotence_section(&mut self) -> anyhow::Result<()> {
        let topic = self.topic("compat-idempotent");
        self.create_topic(&topic, 1, 1, &[]).await?;
        self.wait_ready(&topic).await?;
        let response = self.init_idempotent().await?;
        self.note(
            "idempotence/init_producer_id",
            json!({"error": response.error_code, "epoch": response.producer_epoch, "has_id": response.producer_id.0 >= 0}),
        );
        let producer = response.producer_id.0;
        let steps: [(&str, i64, i16, i32, usize); 8] = [
            ("first", producer, 0, 0, 3),
            ("second", producer, 0, 3, 2),
            ("retry_of_first", producer, 0, 0, 3),
            ("retry_of_second", producer, 0, 3, 2),
            ("gap", producer, 0, 9, 1),
            ("new_epoch", producer, 1, 0, 1),
            ("stale_epoch", producer, 0, 5, 1),
            ("new_epoch_not_from_zero", producer, 2, 4, 1),
        ];
        for (label, producer_id, epoch, first_sequence, count) in steps {
            let records = idempotent_batch(producer_id, epoch, first_sequence, count);
            let step = self.produce(&topic, 0, -1, records).await?;
            self.note(&format!("idempotence/{label}"), step);
        }
        let step = self.fetch(&topic, 0, 0, 1 << 20).await?;
        self.note("idempotence/fetch", step);
        let unknown = idempotent_batch(producer + 1_000_000, 0, 7, 1);
        let step = self.produce(&topic, 0, -1, unknown).await?;
        self.note("idempotence/unknown_producer_not_from_zero", step);
        self.delete_topic(&topic).await?;
        Ok(())
    }

    /// Compacted topics: their configs, keyless records refused, DeleteRecords not allowed.
    async fn compaction_section(&mut self) -> anyhow::Result<()> {
        let compacted = self.topic("compat-compacted");
        let configs = [
            ("cleanup.policy", "compact"),
            ("min.cleanable.dirty.ratio", "0.2"),
            ("delete.retention.ms", "1000"),
            ("min.compaction.lag.ms", "5"),
        ];
        let step = self.create_topic(&compacted, 1, 1, &configs).await?;
        self.note("compaction/create", step);
        // Kafka publishes a new topic's configs through its metadata log: wait until they show.
        let mut step = self.describe_configs(&compacted).await?;
        for _ in 0..50 {
            if step["error"] == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            step = self.describe_configs(&compacted).await?;
        }
        self.note("compaction/describe_configs", step);
        for (label, name, value) in [
            ("ratio_above_one", "min.cleanable.dirty.ratio", "1.5"),
            ("unknown_policy", "cleanup.policy", "archive"),
        ] {
            let topic = self.topic(&format!("compat-bad-{label}"));
            let step = self.create_topic(&topic, 1, 1, &[(name, value)]).await?;
            self.note(&format!("compaction/create_{label}"), step);
        }
        let step = self
            .produce(
                &compacted,
                0,
                -1,
                batch(&[(None, "v", 1)], Compression::None),
            )
            .await?;
        self.note("compaction/produce_keyless", step);
        let mixed = [(Some("k1"), "v1", 1), (None, "v2", 2)];
        let step = self
            .produce(&compacted, 0, -1, batch(&mixed, Compression::Lz4))
            .await?;
        self.note("compaction/produce_one_keyless_in_batch", step);
        let keyed = [
            (Some("k1"), "v1", 1),
            (Some("k2"), "v2", 2),
            (Some("k1"), "v3", 3),
        ];
        let step = self
            .produce(&compacted, 0, -1, batch(&keyed, Compression::Zstd))
            .await?;
        self.note("compaction/produce_keyed", step);
        let step = self.delete_records(&compacted, 0, 1).await?;
        self.note("compaction/delete_records", step);
        let step = self
            .incremental_alter(&compacted, "cleanup.policy", "compact,delete")
            .await?;
        self.note("compaction/alter_to_compact_delete", step);
        // A topic created compact,delete (Kafka applies altered configs asynchronously).
        let both = self.topic("compat-compact-delete");
        let configs = [("cleanup.policy", "compact,delete")];
        let step = self.create_topic(&both, 1, 1, &configs).await?;
        self.note("compaction/create_compact_delete", step);
        self.wait_ready(&both).await?;
        let keyed = [(Some("k1"), "v1", 1), (Some("k2"), "v2", 2)];
        self.produce(&both, 0, -1, batch(&keyed, Compression::None))
            .await?;
        let step = self.delete_records(&both, 0, 1).await?;
        self.note("compaction/delete_records_compact_delete", step);
        self.delete_topic(&both).await?;
        let step = self.delete_topic(&compacted).await?;
        self.note("compaction/delete_topic", step);
        Ok(())
    }

    async fn run(&mut self) -> anyhow::Result<()> {
        let main = self.topic("compat-main");
        let step = self
            .create_topic(
                &main,
                3,
                1,
                &[("retention.ms", "3600000"), ("max.message.bytes", "2000")],
            )
            .await?;
        self.note("create_topic/ok", step);
        let step = self.create_topic(&main, 3, 1, &[]).await?;
        self.note("create_topic/exists", step);
        let step = self.create_topic("bad name!", 1, 1, &[]).await?;
        self.note("create_topic/invalid_name", step);
        let step = self.create_topic(&self.topic("rf3"), 1, 3, &[]).await?;
        self.note("create_topic/replication_factor_3", step);
        let step = self.create_topic(&self.topic("zero"), 0, 1, &[]).await?;
        self.note("create_topic/zero_partitions", step);
        let step = self
            .create_topic(
                &self.topic("unknown-config"),
                1,
                1,
                &[("retention.mss", "1")],
            )
            .await?;
        self.note("create_topic/unknown_config", step);
        let step = self
            .create_topic(&self.topic("bad-value"), 1, 1, &[("retention.ms", "soon")])
            .await?;
        self.note("create_topic/bad_config_value", step);
        let step = self
            .create_topic(&self.topic("defaults"), -1, -1, &[])
            .await?;
        self.note("create_topic/broker_defaults", step);
        // Kafka's bound on one request's metadata records (a topic, and one per partition).
        let step = self
            .create_topic(&self.topic("huge"), i32::MAX, 1, &[])
            .await?;
        self.note("create_topic/excessive_partitions", step);
        let step = self.validate_topic(&self.topic("largest"), 9_999).await?;
        self.note("create_topic/validate_9999_partitions", step);
        let step = self.validate_topic(&self.topic("largest"), 10_000).await?;
        self.note("create_topic/validate_10000_partitions", step);

        let step = self.metadata(&main, false).await?;
        self.note("metadata/topic", step);
        let step = self.metadata(&self.topic("missing"), false).await?;
        self.note("metadata/unknown_no_autocreate", step);
        let step = self.metadata("bad name!", false).await?;
        self.note("metadata/invalid_name", step);

        // Produce: every codec into partition 0, keyed, headers, explicit timestamps.
        let mut timestamp = 1_700_000_000_000i64;
        for (codec, compression) in [
            ("none", Compression::None),
            ("gzip", Compression::Gzip),
            ("snappy", Compression::Snappy),
            ("lz4", Compression::Lz4),
            ("zstd", Compression::Zstd),
        ] {
            let values: Vec<String> = (0..4).map(|i| format!("{codec}-{i}")).collect();
            let records: Vec<(Option<&str>, &str, i64)> = values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    (
                        if i % 2 == 0 { Some("key-a") } else { None },
                        v.as_str(),
                        timestamp + i as i64 * 10,
                    )
                })
                .collect();
            timestamp += 100;
            let step = self
                .produce(&main, 0, -1, batch(&records, compression))
                .await?;
            self.note(&format!("produce/{codec}"), step);
        }
        let big = "x".repeat(3000);
        let step = self
            .produce(
                &main,
                0,
                1,
                batch(&[(None, &big, timestamp)], Compression::None),
            )
            .await?;
        self.note("produce/over_max_message_bytes", step);
        let step = self
            .produce(
                &main,
                7,
                1,
                batch(&[(None, "v", timestamp)], Compression::None),
            )
            .await?;
        self.note("produce/unknown_partition", step);
        let step = self
            .produce(
                &main,
                0,
                2,
                batch(&[(None, "v", timestamp)], Compression::None),
            )
            .await?;
        self.note("produce/invalid_acks", step);
        let mut corrupt = BytesMut::from(&batch(&[(None, "v", timestamp)], Compression::None)[..]);
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0xff;
        let step = self.produce(&main, 0, 1, corrupt.freeze()).await?;
        self.note("produce/corrupt_crc", step);
        let step = self
            .produce(
                &self.topic("never-created"),
                0,
                1,
                batch(&[(None, "v", timestamp)], Compression::None),
            )
            .await?;
        self.note("produce/unknown_topic", step);

        // Fetch from the start, from the middle of a compressed batch, at the end, past the end.
        for (label, offset) in [
            ("start", 0),
            ("mid_batch", 9),
            ("end", 20),
            ("past_end", 25),
        ] {
            let step = self.fetch(&main, 0, offset, 1 << 20).await?;
            self.note(&format!("fetch/{label}"), step);
        }
        let step = self.fetch(&main, 0, 0, 10).await?;
        self.note("fetch/max_bytes_below_one_batch", step);

        for (label, target) in [
            ("latest", -1),
            ("earliest", -2),
            ("max_timestamp", -3),
            ("time_before_all", 0),
            ("time_exact", 1_700_000_000_210),
            ("time_between", 1_700_000_000_215),
            ("time_after_all", 1_800_000_000_000),
        ] {
            let step = self.list_offset(&main, 0, target).await?;
            self.note(&format!("list_offsets/{label}"), step);
        }
        let step = self.list_offset(&main, 9, -1).await?;
        self.note("list_offsets/unknown_partition", step);

        let step = self.describe_configs(&main).await?;
        self.note("describe_configs/created", step);
        let step = self
            .incremental_alter(&main, "retention.ms", "7200000")
            .await?;
        self.note("alter_configs/set", step);
        let step = self
            .incremental_alter(&main, "retention.ms", "soon")
            .await?;
        self.note("alter_configs/bad_value", step);
        let step = self.incremental_alter(&main, "no.such.config", "1").await?;
        self.note("alter_configs/unknown_name", step);
        let step = self.describe_configs(&main).await?;
        self.note("describe_configs/altered", step);
        let step = self.describe_configs(&self.topic("missing")).await?;
        self.note("describe_configs/unknown_topic", step);

        let step = self.create_partitions(&main, 5, Some(1)).await?;
        self.note("create_partitions/assignments_do_not_match", step);
        let step = self.create_partitions(&main, 5, None).await?;
        self.note("create_partitions/grow", step);
        let step = self.create_partitions(&main, 6, Some(1)).await?;
        self.note("create_partitions/grow_with_assignment", step);
        let step = self.create_partitions(&main, 2, None).await?;
        self.note("create_partitions/shrink", step);
        let step = self
            .create_partitions(&self.topic("missing"), 2, None)
            .await?;
        self.note("create_partitions/unknown_topic", step);
        let step = self.create_partitions(&main, i32::MAX, None).await?;
        self.note("create_partitions/excessive", step);
        // Kafka publishes new partitions through its metadata log: wait until they show.
        let mut step = self.metadata(&main, false).await?;
        for _ in 0..50 {
            if step["partitions"].as_array().map_or(0, Vec::len) == 6 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            step = self.metadata(&main, false).await?;
        }
        self.note("metadata/after_grow", step);

        let step = self.delete_records(&main, 0, 6).await?;
        self.note("delete_records/ok", step);
        let step = self.delete_records(&main, 0, 100).await?;
        self.note("delete_records/beyond_high_watermark", step);
        // librdkafka's "offset not set" and the other negative offsets but -1 (high watermark).
        let step = self.delete_records(&main, 0, -1001).await?;
        self.note("delete_records/offset_not_set", step);
        let step = self.delete_records(&main, 0, -2).await?;
        self.note("delete_records/offset_minus_two", step);
        let step = self.delete_records(&main, 0, 2).await?;
        self.note("delete_records/below_log_start", step);
        let step = self.list_offset(&main, 0, -2).await?;
        self.note("list_offsets/earliest_after_delete", step);
        let step = self.fetch(&main, 0, 2, 1 << 20).await?;
        self.note("fetch/below_log_start", step);

        self.group_session(&main).await?;
        self.static_members_section().await?;
        self.compaction_section().await?;
        self.compression_section().await?;
        self.idempotence_section().await?;
        self.transactions_section().await?;
        self.fencing_section().await?;
        self.fetch_sessions_section().await?;
        self.broker_configs_section().await?;

        let step = self.delete_topic(&main).await?;
        self.note("delete_topics/ok", step);
        let step = self.delete_topic(&self.topic("missing")).await?;
        self.note("delete_topics/unknown", step);
        Ok(())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    if std::env::args().nth(1).as_deref() == Some("oauth-keys") {
        let dir = std::env::args()
            .nth(2)
            .context("usage: weir-compat-scenario oauth-keys DIR")?;
        return oauth::write_keys(std::path::Path::new(&dir));
    }
    let bootstrap = args
        .next()
        .context("usage: weir-compat-scenario HOST:PORT RUN_ID")?;
    let run = args
        .next()
        .context("usage: weir-compat-scenario HOST:PORT RUN_ID")?;
    let only = args.next();
    let client = ProtocolClient::connect(&bootstrap).await?;
    let mut scenario = Scenario {
        client,
        transcript: BTreeMap::new(),
        run,
    };
    match only.as_deref() {
        None => scenario.run().await?,
        Some("fencing") => scenario.fencing_section().await?,
        Some("fetch_sessions") => scenario.fetch_sessions_section().await?,
        Some("static_members") => scenario.static_members_section().await?,
        Some("compression") => scenario.compression_section().await?,
        Some("broker_configs") => scenario.broker_configs_section().await?,
        Some("security") => {
            let usage = "usage: weir-compat-scenario HOST:PORT RUN_ID security SASL_SSL_ADDRESS CA_FILE";
            let secure = security::SecureListener {
                address: args.next().context(usage)?,
                ca: args.next().context(usage)?,
            };
            scenario.security_section(&secure).await?
        }
        Some("oauth") => {
            let usage = "usage: weir-compat-scenario HOST:PORT RUN_ID oauth SASL_SSL_ADDRESS CA_FILE KEYS_DIR";
            let secure = security::SecureListener {
                address: args.next().context(usage)?,
                ca: args.next().context(usage)?,
            };
            let keys = oauth::SigningKeys::read(std::path::Path::new(&args.next().context(usage)?))?;
            scenario.oauth_section(&secure, &keys).await?
        }
        Some(other) => anyhow::bail!(
            "no section {other} (sections: fencing, fetch_sessions, static_members, compression, broker_configs, security, oauth)"
        ),
    }
    println!("{}", serde_json::to_string_pretty(&scenario.transcript)?);
    Ok(())
}
