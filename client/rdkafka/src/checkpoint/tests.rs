//! The checkpoint producer against Weir's broker (in-process), read back by a read_committed
//! rdkafka consumer: committed checkpoints are there exactly, aborted ones not at all; a newer
//! producer with the same transactional id fences the older one (`Fenced`, its open checkpoint
//! gone); an idempotent checkpoint with an undelivered record is an error, not a silent loss.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};
use weir_broker::{Broker, BrokerConfig};

use crate::{CheckpointProducer, ClientError, ClientSettings, Outgoing};

const PARTITIONS: i32 = 3;
const TIMEOUT: Duration = Duration::from_secs(30);

async fn start_broker(
    dir: &std::path::Path,
    settings: &[(&str, &str)],
) -> (Broker, ClientSettings) {
    let mut config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.to_path_buf());
    for (name, value) in settings {
        config.set(name, value).unwrap();
    }
    let broker = Broker::start(config).await.expect("broker starts");
    let client = ClientSettings::new(broker.local_addr().to_string());
    (broker, client)
}

async fn create_topic(client: &ClientSettings, name: &str) {
    let admin: AdminClient<DefaultClientContext> = client.config(&[]).create().unwrap();
    let topic = NewTopic::new(name, PARTITIONS, TopicReplication::Fixed(1));
    for result in admin
        .create_topics(&[topic], &AdminOptions::new())
        .await
        .unwrap()
    {
        result.expect("topic created");
    }
}

/// Every record of `topic` a read_committed consumer sees up to each partition's end: value →
/// (how many times, its headers).
fn read_committed(client: &ClientSettings, topic: &str) -> BTreeMap<String, (usize, Vec<String>)> {
    let consumer: BaseConsumer = client
        .config(&[
            ("group.id", "checkpoint-test-reader"),
            ("isolation.level", "read_committed"),
            ("enable.partition.eof", "true"),
            ("enable.auto.commit", "false"),
        ])
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    for partition in 0..PARTITIONS {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let mut at_end = 0;
    let mut seen = BTreeMap::new();
    let deadline = Instant::now() + TIMEOUT;
    while at_end < PARTITIONS {
        assert!(Instant::now() < deadline, "{topic} not read to its end");
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Err(KafkaError::PartitionEOF(_))) => at_end += 1,
            Some(Err(error)) => panic!("consuming {topic}: {error}"),
            Some(Ok(message)) => {
                let value = String::from_utf8(message.payload().unwrap().to_vec()).unwrap();
                let headers = message
                    .headers()
                    .map(|headers| {
                        headers
                            .iter()
                            .map(|h| {
                                format!("{}={}", h.key, String::from_utf8_lossy(h.value.unwrap()))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let entry: &mut (usize, Vec<String>) = seen.entry(value).or_default();
                entry.0 += 1;
                entry.1 = headers;
            }
        }
    }
    seen
}

fn send_ids(producer: &CheckpointProducer, topic: &str, ids: std::ops::Range<usize>) {
    for id in ids {
        let value = format!("record-{id}");
        let key = format!("key-{}", id % 7);
        let record = Outgoing::new(topic, Some(key.as_bytes()), Some(value.as_bytes()));
        producer.send(&record).unwrap();
    }
}

fn once_each(ids: impl Iterator<Item = usize>) -> BTreeMap<String, (usize, Vec<String>)> {
    ids.map(|id| (format!("record-{id}"), (1, Vec::new())))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_checkpoints_are_read_exactly_and_aborted_ones_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let (_broker, client) = start_broker(dir.path(), &[]).await;
    create_topic(&client, "checkpoints").await;
    let writer = client.clone();
    tokio::task::spawn_blocking(move || {
        let mut producer =
            CheckpointProducer::transactional(&writer, "tx-exact", 60_000, &[]).unwrap();
        assert!(producer.is_transactional());
        producer.begin().unwrap();
        assert!(producer.in_transaction());
        send_ids(&producer, "checkpoints", 0..500);
        producer
            .send(&Outgoing {
                partition: Some(2),
                headers: &[("weir.error", b"not a log line")],
                ..Outgoing::new("checkpoints", None, Some(b"with-header"))
            })
            .unwrap();
        producer.commit().unwrap();
        assert!(!producer.in_transaction());
        producer.begin().unwrap();
        send_ids(&producer, "checkpoints", 500..1000);
        producer.abort().unwrap();
        producer.begin().unwrap();
        send_ids(&producer, "checkpoints", 1000..1500);
        producer.commit().unwrap();
    })
    .await
    .unwrap();
    let reader = client.clone();
    let seen = tokio::task::spawn_blocking(move || read_committed(&reader, "checkpoints"))
        .await
        .unwrap();
    let mut expected = once_each((0..500).chain(1000..1500));
    expected.insert(
        "with-header".into(),
        (1, vec!["weir.error=not a log line".into()]),
    );
    assert_eq!(seen, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_producer_with_the_same_id_fences_the_older_one() {
    let dir = tempfile::tempdir().unwrap();
    let (_broker, client) = start_broker(dir.path(), &[]).await;
    create_topic(&client, "fenced").await;
    let writer = client.clone();
    tokio::task::spawn_blocking(move || {
        let mut older =
            CheckpointProducer::transactional(&writer, "tx-fence", 60_000, &[]).unwrap();
        older.begin().unwrap();
        send_ids(&older, "fenced", 0..100);
        // Initialising the newer one aborts the older one's open checkpoint.
        let mut newer =
            CheckpointProducer::transactional(&writer, "tx-fence", 60_000, &[]).unwrap();
        let error = older.commit().unwrap_err();
        assert!(error.is_fenced(), "{error}");
        newer.begin().unwrap();
        send_ids(&newer, "fenced", 100..200);
        newer.commit().unwrap();
    })
    .await
    .unwrap();
    let reader = client.clone();
    let seen = tokio::task::spawn_blocking(move || read_committed(&reader, "fenced"))
        .await
        .unwrap();
    assert_eq!(seen, once_each(100..200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_checkpoint_with_an_undelivered_record_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (_broker, client) =
        start_broker(dir.path(), &[("auto.create.topics.enable", "false")]).await;
    create_topic(&client, "delivered").await;
    let writer = client
        .clone()
        .with_properties([("message.timeout.ms", "1000")]);
    tokio::task::spawn_blocking(move || {
        let mut producer = CheckpointProducer::idempotent(&writer, &[]).unwrap();
        assert!(!producer.is_transactional());
        producer.begin().unwrap();
        send_ids(&producer, "delivered", 0..50);
        send_ids(&producer, "no-such-topic", 50..51);
        match producer.commit() {
            Err(ClientError::Undelivered { failed, last_error }) => {
                assert_eq!(failed, 1, "{last_error}");
            }
            other => panic!("expected an undelivered record, got {other:?}"),
        }
        // The failure belongs to the dropped checkpoint, not to the next one.
        producer.abort().unwrap();
        producer.begin().unwrap();
        send_ids(&producer, "delivered", 100..150);
        producer.commit().unwrap();
    })
    .await
    .unwrap();
    let reader = client.clone();
    let seen = tokio::task::spawn_blocking(move || read_committed(&reader, "delivered"))
        .await
        .unwrap();
    // Idempotent checkpoints are not transactions: the first one's delivered records stay.
    assert_eq!(seen, once_each((0..50).chain(100..150)));
}
