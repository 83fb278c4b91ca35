//! Dynamic broker configs with rdkafka's admin client and raw IncrementalAlterConfigs (the
//! cluster-wide default, which rdkafka cannot name): a running broker takes a new
//! `message.max.bytes` and `log.retention.ms` at once for topics that do not override them,
//! reports every source as Kafka does, refuses static properties, and still has them after a
//! restart. In a cluster, changes asked of any broker reach every broker through the
//! controller.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::{
    incremental_alter_configs_request, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{AlterConfig, ConfigSource, ResourceSpecifier};
use rdkafka::producer::FutureRecord;
use rdkafka::{Message, Offset};
use weir_broker::Broker;

use crate::cluster::TestCluster;
use crate::common::*;
use crate::raw::RawClient;

const BROKER_RESOURCE: i8 = 4;
const SET: i8 = 0;
const DELETE: i8 = 1;
const INVALID_REQUEST: i16 = 42;
/// Over the default `message.max.bytes` (1048588), under the dynamic value set below.
const LARGE_RECORD_BYTES: usize = 1_500_000;

/// IncrementalAlterConfigs on one BROKER resource ("" the cluster default).
async fn alter_broker(
    broker: std::net::SocketAddr,
    resource: &str,
    changes: &[(&str, i8, Option<&str>)],
) -> IncrementalAlterConfigsResponse {
    let configs = changes
        .iter()
        .map(|(name, operation, value)| {
            incremental_alter_configs_request::AlterableConfig::default()
                .with_name(StrBytes::from_string(name.to_string()))
                .with_config_operation(*operation)
                .with_value(value.map(|v| StrBytes::from_string(v.to_string())))
        })
        .collect();
    let resource = incremental_alter_configs_request::AlterConfigsResource::default()
        .with_resource_type(BROKER_RESOURCE)
        .with_resource_name(StrBytes::from_string(resource.to_string()))
        .with_configs(configs);
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![resource]);
    RawClient::connect(broker).await.call(1, &request).await
}

/// (value, source, read-only) of configs of one resource, as rdkafka describes them.
async fn describe(
    bootstrap: &str,
    resource: ResourceSpecifier<'_>,
) -> BTreeMap<String, (Option<String>, ConfigSource, bool)> {
    let described = admin(bootstrap)
        .describe_configs([&resource], &admin_options())
        .await
        .expect("describe call")
        .remove(0)
        .expect("described");
    described
        .entries
        .into_iter()
        .map(|entry| (entry.name, (entry.value, entry.source, entry.is_read_only)))
        .collect()
}

/// Produces one record of `size` bytes; the delivery error code if refused.
async fn produce_large(bootstrap: &str, topic: &str, id: &str, size: usize) -> Result<i64, String> {
    let producer = producer(bootstrap, &[("message.max.bytes", "5000000")]);
    let value = format!("{id}:{}", "x".repeat(size));
    let record = FutureRecord::<str, str>::to(topic).key(id).payload(&value);
    producer
        .send(record, Duration::from_secs(20))
        .await
        .map(|delivery| delivery.offset)
        .map_err(|(error, _)| error.to_string())
}

fn configured(broker: &Broker, topic: &str) -> (usize, i64) {
    let topic = broker.context().topics.get(topic).expect("topic");
    let partition = topic.partition(0).expect("partition 0");
    let log = partition.log();
    let config = log.config();
    (config.max_message_bytes, config.retention_ms)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_broker_configs_change_a_running_broker_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    let bootstrap = bootstrap(&broker);
    create_topic(&bootstrap, "plain", 1, &[]).await;
    create_topic(&bootstrap, "pinned", 1, &[("max.message.bytes", "1048588")]).await;
    let refused = produce_large(&bootstrap, "plain", "before", LARGE_RECORD_BYTES).await;
    assert!(
        refused.is_err(),
        "a record over the default limit was taken"
    );

    // rdkafka's AlterConfigs on broker 1, and the cluster default through raw requests.
    let change = AlterConfig::new(ResourceSpecifier::Broker(1)).set("message.max.bytes", "2000000");
    admin(&bootstrap)
        .alter_configs([&change], &admin_options())
        .await
        .unwrap()[0]
        .as_ref()
        .expect("altered");
    let response = alter_broker(
        broker.local_addr(),
        "",
        &[("log.retention.ms", SET, Some("7200000"))],
    )
    .await;
    assert_eq!(response.responses[0].error_code, 0);
    assert_eq!(configured(&broker, "plain"), (2_000_000, 7_200_000));
    assert_eq!(configured(&broker, "pinned"), (1_048_588, 7_200_000));

    let node = describe(&bootstrap, ResourceSpecifier::Broker(1)).await;
    assert_eq!(
        node["message.max.bytes"],
        (Some("2000000".into()), ConfigSource::DynamicBroker, false)
    );
    assert_eq!(
        node["log.retention.ms"],
        (
            Some("7200000".into()),
            ConfigSource::DynamicDefaultBroker,
            false
        )
    );
    assert_eq!(
        node["socket.request.max.bytes"],
        (Some("104857600".into()), ConfigSource::Default, true)
    );
    let topic = describe(&bootstrap, ResourceSpecifier::Topic("plain")).await;
    assert_eq!(
        topic["max.message.bytes"],
        (Some("2000000".into()), ConfigSource::DynamicBroker, false)
    );
    assert_eq!(
        topic["retention.ms"],
        (
            Some("7200000".into()),
            ConfigSource::DynamicDefaultBroker,
            false
        )
    );

    // Refused whole: a static property, a bad value; nothing of either is applied.
    for changes in [
        vec![
            ("log.segment.bytes", SET, Some("1048576")),
            ("num.partitions", SET, Some("3")),
        ],
        vec![("log.retention.ms", SET, Some("soon"))],
    ] {
        let response = alter_broker(broker.local_addr(), "1", &changes).await;
        assert_eq!(
            response.responses[0].error_code, INVALID_REQUEST,
            "{changes:?}"
        );
    }
    let message = alter_broker(
        broker.local_addr(),
        "1",
        &[("socket.request.max.bytes", SET, Some("1"))],
    )
    .await
    .responses[0]
        .error_message
        .clone();
    assert_eq!(
        message.as_deref(),
        Some("Cannot update these configs dynamically: [socket.request.max.bytes]")
    );
    let node = describe(&bootstrap, ResourceSpecifier::Broker(1)).await;
    assert_eq!(node["log.segment.bytes"].1, ConfigSource::Default);

    let first = produce_large(&bootstrap, "plain", "first", LARGE_RECORD_BYTES).await;
    let first = first.expect("under the dynamic limit");
    let pinned = produce_large(&bootstrap, "pinned", "pinned", LARGE_RECORD_BYTES).await;
    assert!(
        pinned.is_err(),
        "the topic's own limit wins over the broker's"
    );

    broker.shutdown().await.unwrap();
    let broker = start(dir.path(), &[]).await;
    let bootstrap = crate::common::bootstrap(&broker);
    assert_eq!(configured(&broker, "plain"), (2_000_000, 7_200_000));
    let second = produce_large(&bootstrap, "plain", "second", LARGE_RECORD_BYTES).await;
    let second = second.expect("the limit survived the restart");
    let records = consume(&bootstrap, "plain", 0, Offset::Beginning, 2).await;
    let seen: Vec<(i64, String)> = records
        .iter()
        .map(|m| {
            let key = String::from_utf8_lossy(m.key().unwrap_or_default()).into_owned();
            assert_eq!(
                m.payload().map(<[u8]>::len),
                Some(key.len() + 1 + LARGE_RECORD_BYTES)
            );
            (m.offset(), key)
        })
        .collect();
    assert_eq!(
        seen,
        vec![(first, "first".into()), (second, "second".into())]
    );

    // Deleted again: the topic falls back to the static defaults at once.
    let response = alter_broker(
        broker.local_addr(),
        "",
        &[("log.retention.ms", DELETE, None)],
    )
    .await;
    assert_eq!(response.responses[0].error_code, 0);
    let response = alter_broker(
        broker.local_addr(),
        "1",
        &[("message.max.bytes", DELETE, None)],
    )
    .await;
    assert_eq!(response.responses[0].error_code, 0);
    assert_eq!(configured(&broker, "plain"), (1_048_588, 604_800_000));
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_configs_reach_every_broker_through_the_controller() {
    let cluster = TestCluster::start_all_registered(3).await;
    let topic = "configured";
    let new_topic =
        rdkafka::admin::NewTopic::new(topic, 3, rdkafka::admin::TopicReplication::Fixed(3));
    admin(&cluster.bootstrap(1))
        .create_topics([&new_topic], &admin_options())
        .await
        .unwrap()[0]
        .as_ref()
        .expect("created");
    // The default asked of broker 2, broker 3's own value asked of broker 1.
    let via_two = cluster.brokers[&2].local_addr();
    let response = alter_broker(via_two, "", &[("log.retention.ms", SET, Some("3600000"))]).await;
    assert_eq!(response.responses[0].error_code, 0);
    let via_one = cluster.brokers[&1].local_addr();
    let response = alter_broker(via_one, "3", &[("message.max.bytes", SET, Some("2000000"))]).await;
    assert_eq!(response.responses[0].error_code, 0);
    let refused = alter_broker(via_one, "2", &[("num.partitions", SET, Some("2"))]).await;
    assert_eq!(refused.responses[0].error_code, INVALID_REQUEST);

    for node_id in 1..=3 {
        let expected_max = if node_id == 3 { 2_000_000 } else { 1_048_588 };
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let applied = cluster.brokers[&node_id]
                .context()
                .topics
                .get(topic)
                .map(|local| {
                    local.hosted().count() == 3
                        && local.hosted().all(|partition| {
                            let log = partition.log();
                            let config = log.config();
                            config.retention_ms == 3_600_000
                                && config.max_message_bytes == expected_max
                        })
                });
            if applied == Some(true) {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "broker {node_id} never applied the dynamic configs"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let seen = describe(
            &cluster.bootstrap(node_id),
            ResourceSpecifier::Broker(node_id),
        )
        .await;
        assert_eq!(
            seen["log.retention.ms"],
            (
                Some("3600000".into()),
                ConfigSource::DynamicDefaultBroker,
                false
            ),
            "broker {node_id}"
        );
        let source = if node_id == 3 {
            ConfigSource::DynamicBroker
        } else {
            ConfigSource::Default
        };
        assert_eq!(
            seen["message.max.bytes"],
            (Some(expected_max.to_string()), source, false),
            "broker {node_id}"
        );
    }
}

/// librdkafka's own admin test (0081 `do_test_AlterConfigs`) alters Kafka's dynamic broker config
/// `sasl.kerberos.min.time.before.relogin`: Weir accepts it as Kafka does (without effect: no
/// Kerberos) and describes it; a value asking for a missing feature is refused with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_only_configs_are_accepted_and_described_as_kafka_does() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("num.network.threads", "8")]).await;
    let bootstrap = bootstrap(&broker);
    let change = AlterConfig::new(ResourceSpecifier::Broker(1))
        .set("sasl.kerberos.min.time.before.relogin", "58000");
    admin(&bootstrap)
        .alter_configs([&change], &admin_options())
        .await
        .unwrap()[0]
        .as_ref()
        .expect("altered as on Kafka");
    let node = describe(&bootstrap, ResourceSpecifier::Broker(1)).await;
    assert_eq!(
        node["sasl.kerberos.min.time.before.relogin"],
        (Some("58000".into()), ConfigSource::DynamicBroker, false)
    );
    assert_eq!(
        node["num.network.threads"],
        (Some("8".into()), ConfigSource::StaticBroker, false)
    );
    assert_eq!(
        node["remote.log.storage.system.enable"],
        (Some("false".into()), ConfigSource::Default, true)
    );
    let response = alter_broker(
        broker.local_addr(),
        "1",
        &[("principal.builder.class", SET, Some("com.example.Builder"))],
    )
    .await;
    let refused = &response.responses[0];
    assert_ne!(refused.error_code, 0, "a Java class is not accepted");
    let message = refused.error_message.as_deref().unwrap_or_default();
    assert!(message.contains("loads no Java classes"), "{message}");
    // A topic config Kafka has and Weir lacks: accepted with its default, another value of a
    // default-only one refused.
    let created = admin(&bootstrap)
        .create_topics(
            [&rdkafka::admin::NewTopic::new(
                "tiered",
                1,
                rdkafka::admin::TopicReplication::Fixed(1),
            )
            .set("remote.storage.enable", "true")],
            &admin_options(),
        )
        .await
        .unwrap();
    assert!(
        created[0].is_err(),
        "tiered storage was asked for: {created:?}"
    );
    create_topic(&bootstrap, "described", 1, &[("segment.jitter.ms", "1000")]).await;
    let topic = describe(&bootstrap, ResourceSpecifier::Topic("described")).await;
    assert_eq!(topic["segment.jitter.ms"].0.as_deref(), Some("1000"));
    assert_eq!(topic["preallocate"].0.as_deref(), Some("false"));
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_weir_would_ignore_dangerously_stop_it_at_start_up() {
    for (name, value, reason) in [
        ("log.dirs", "/var/lib/kafka", "--data-dir"),
        (
            "controller.quorum.bootstrap.servers",
            "localhost:9093",
            "controller.quorum.voters",
        ),
        (
            "transaction.two.phase.commit.enable",
            "true",
            "two-phase commit",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut config =
            weir_broker::BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().into());
        let error = config.set(name, value).expect_err(name).to_string();
        assert!(error.contains(reason), "{name}: {error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_with_metadata_over_offset_metadata_max_bytes_are_refused() {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[("offset.metadata.max.bytes", "10")]).await;
    create_topic(&bootstrap(&broker), "committed", 1, &[]).await;
    let commit = |metadata: &str| {
        let partition = OffsetCommitRequestPartition::default()
            .with_partition_index(0)
            .with_committed_offset(1)
            .with_committed_metadata(Some(StrBytes::from_string(metadata.to_string())));
        let topic = OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("committed")))
            .with_partitions(vec![partition]);
        OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("metadata")))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![topic])
    };
    let mut client = RawClient::connect(broker.local_addr()).await;
    for (metadata, expected) in [("ten bytes!", 0), ("eleven byte", 12)] {
        let response = client.call(8, &commit(metadata)).await;
        assert_eq!(
            response.topics[0].partitions[0].error_code, expected,
            "{metadata}"
        );
    }
    broker.shutdown().await.unwrap();
}
