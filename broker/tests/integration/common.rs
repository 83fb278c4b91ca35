//! Starting brokers and making clients for tests.

use std::path::Path;
use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::message::OwnedMessage;
use rdkafka::producer::FutureProducer;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use weir_broker::{Broker, BrokerConfig};

pub(crate) const TIMEOUT: Duration = Duration::from_secs(20);

pub(crate) fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_test_writer()
        .try_init();
}

pub(crate) fn config(dir: &Path, properties: &[(&str, &str)]) -> BrokerConfig {
    let mut config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.to_path_buf());
    for (name, value) in properties {
        config.set(name, value).expect("valid test property");
    }
    config
}

pub(crate) async fn start(dir: &Path, properties: &[(&str, &str)]) -> Broker {
    init_logging();
    Broker::start(config(dir, properties))
        .await
        .expect("broker starts")
}

pub(crate) fn bootstrap(broker: &Broker) -> String {
    broker.local_addr().to_string()
}

pub(crate) fn client_config(bootstrap: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("topic.metadata.refresh.interval.ms", "1000");
    config
}

pub(crate) fn producer(bootstrap: &str, extra: &[(&str, &str)]) -> FutureProducer {
    let mut config = client_config(bootstrap);
    config
        .set("linger.ms", "5")
        .set("message.timeout.ms", "20000");
    for (k, v) in extra {
        config.set(*k, *v);
    }
    config.create().expect("producer")
}

pub(crate) fn admin(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    client_config(bootstrap).create().expect("admin client")
}

pub(crate) fn admin_options() -> AdminOptions {
    AdminOptions::new().request_timeout(Some(TIMEOUT))
}

pub(crate) async fn create_topic(
    bootstrap: &str,
    name: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) {
    let mut topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        topic = topic.set(k, v);
    }
    let results = admin(bootstrap)
        .create_topics([&topic], &admin_options())
        .await
        .expect("create topics call");
    for result in results {
        result.expect("topic created");
    }
}

/// A consumer assigned to `partition` of `topic` from `offset`, outside any group.
pub(crate) fn assigned_consumer(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    offset: Offset,
    extra: &[(&str, &str)],
) -> StreamConsumer {
    let mut config = client_config(bootstrap);
    config
        .set("group.id", "weir-tests-unused")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "100");
    for (k, v) in extra {
        config.set(*k, *v);
    }
    let consumer: StreamConsumer = config.create().expect("consumer");
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, partition, offset)
        .expect("assignment");
    consumer.assign(&assignment).expect("assign");
    consumer
}

/// Reads exactly `count` records from one partition, failing after TIMEOUT.
pub(crate) async fn consume(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    offset: Offset,
    count: usize,
) -> Vec<OwnedMessage> {
    let consumer = assigned_consumer(bootstrap, topic, partition, offset, &[]);
    let mut messages = Vec::with_capacity(count);
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while messages.len() < count {
        let message = tokio::time::timeout_at(deadline, consumer.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "timed out after {} of {count} records from {topic}-{partition}",
                    messages.len()
                )
            })
            .expect("consume");
        messages.push(message.detach());
    }
    messages
}

pub(crate) fn payloads(messages: &[OwnedMessage]) -> Vec<String> {
    messages
        .iter()
        .map(|m| String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned())
        .collect()
}

/// Sends values to one partition and waits for every delivery; returns their offsets.
pub(crate) async fn produce_values(
    producer: &FutureProducer,
    topic: &str,
    partition: i32,
    values: &[String],
) -> Vec<i64> {
    let mut futures = Vec::new();
    for value in values {
        let record = rdkafka::producer::FutureRecord::<(), String>::to(topic)
            .partition(partition)
            .payload(value);
        futures.push(
            producer
                .send_result(record)
                .map_err(|(e, _)| e)
                .expect("enqueue"),
        );
    }
    let mut offsets = Vec::new();
    for future in futures {
        let delivery = future.await.expect("delivery future").expect("delivered");
        offsets.push(delivery.offset);
    }
    offsets
}

/// Commits `offsets` (partition, next offset) of `topic` for `group`, outside any membership.
pub(crate) fn commit(bootstrap: &str, group: &str, topic: &str, offsets: &[(i32, i64)]) {
    let consumer = assigned_consumer(
        bootstrap,
        topic,
        0,
        Offset::Beginning,
        &[("group.id", group)],
    );
    let mut list = TopicPartitionList::new();
    for (partition, offset) in offsets {
        list.add_partition_offset(topic, *partition, Offset::Offset(*offset))
            .unwrap();
    }
    consumer.commit(&list, CommitMode::Sync).unwrap();
}
