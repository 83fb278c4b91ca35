//! Transactions with rdkafka: committed records visible to read_committed consumers, aborted
//! ones not (but to read_uncommitted ones, as Kafka does), offsets committed in the transaction,
//! and a new producer with the same transactional id fencing the old one.

use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Message, Offset, TopicPartitionList};

use crate::common::{self, TIMEOUT};

fn transactional_producer(bootstrap: &str, transactional_id: &str) -> BaseProducer {
    let mut config = common::client_config(bootstrap);
    config
        .set("transactional.id", transactional_id)
        .set("linger.ms", "1")
        .set("message.timeout.ms", "20000");
    let producer: BaseProducer = config.create().expect("transactional producer");
    producer
        .init_transactions(TIMEOUT)
        .expect("init_transactions");
    producer
}

fn send(producer: &BaseProducer, topic: &str, values: &[String]) {
    for value in values {
        producer
            .send(
                BaseRecord::<(), String>::to(topic)
                    .partition(0)
                    .payload(value),
            )
            .expect("enqueue");
    }
    producer.flush(TIMEOUT).expect("flush");
}

/// Values read from partition 0 from the start until `expected` values or an idle second.
fn read_values(bootstrap: &str, topic: &str, isolation: &str, expected: usize) -> Vec<String> {
    let mut config = common::client_config(bootstrap);
    config
        .set("group.id", "txn-readers")
        .set("enable.auto.commit", "false")
        .set("isolation.level", isolation);
    let consumer: BaseConsumer = config.create().unwrap();
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let mut values = Vec::new();
    let deadline = std::time::Instant::now() + TIMEOUT;
    let mut idle_since = std::time::Instant::now();
    while std::time::Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(message)) => {
                values.push(
                    String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned(),
                );
                idle_since = std::time::Instant::now();
            }
            Some(Err(error)) => panic!("consume error: {error}"),
            None if values.len() >= expected && idle_since.elapsed() > Duration::from_secs(1) => {
                break
            }
            None => {}
        }
    }
    values
}

fn batch(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}-{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_transactions_are_visible_and_aborted_ones_only_to_read_uncommitted() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "txn-out", 1, &[]).await;
    let bootstrap_for_blocking = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let bootstrap = bootstrap_for_blocking;
        let producer = transactional_producer(&bootstrap, "txn-app");
        producer.begin_transaction().unwrap();
        send(&producer, "txn-out", &batch("first", 10));
        producer.commit_transaction(TIMEOUT).unwrap();
        producer.begin_transaction().unwrap();
        send(&producer, "txn-out", &batch("aborted", 5));
        producer.abort_transaction(TIMEOUT).unwrap();
        producer.begin_transaction().unwrap();
        send(&producer, "txn-out", &batch("second", 3));
        producer.commit_transaction(TIMEOUT).unwrap();

        let committed = read_values(&bootstrap, "txn-out", "read_committed", 13);
        let expected: Vec<String> = batch("first", 10)
            .into_iter()
            .chain(batch("second", 3))
            .collect();
        assert_eq!(committed, expected);
        let everything = read_values(&bootstrap, "txn-out", "read_uncommitted", 18);
        assert_eq!(
            everything.len(),
            18,
            "aborted records are returned to read_uncommitted"
        );

        // An open transaction holds read_committed consumers at its start.
        producer.begin_transaction().unwrap();
        send(&producer, "txn-out", &batch("open", 2));
        let while_open = read_values(&bootstrap, "txn-out", "read_committed", 13);
        assert_eq!(while_open.len(), 13);
        // A new incarnation with the same transactional id fences this one and aborts its
        // open transaction.
        let successor = transactional_producer(&bootstrap, "txn-app");
        let fenced = producer.commit_transaction(TIMEOUT);
        assert!(fenced.is_err(), "the old producer is fenced");
        successor.begin_transaction().unwrap();
        send(&successor, "txn-out", &batch("successor", 1));
        successor.commit_transaction(TIMEOUT).unwrap();
        let after = read_values(&bootstrap, "txn-out", "read_committed", 14);
        assert_eq!(after.last().map(String::as_str), Some("successor-0"));
        assert!(
            !after.iter().any(|v| v.starts_with("open")),
            "the fenced transaction was aborted"
        );
        std::mem::forget(producer);
    })
    .await
    .unwrap();
    let listed = broker.context().transactions.snapshot();
    assert_eq!(listed["txn-app"].state.name(), "CompleteCommit");
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_sent_to_a_transaction_commit_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[("group.initial.rebalance.delay.ms", "0")]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "etl-in", 1, &[]).await;
    common::create_topic(&bootstrap, "etl-out", 1, &[]).await;
    let producer = common::producer(&bootstrap, &[]);
    common::produce_values(&producer, "etl-in", 0, &batch("in", 20)).await;
    let bootstrap_for_blocking = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let bootstrap = bootstrap_for_blocking;
        let mut config = common::client_config(&bootstrap);
        config
            .set("group.id", "etl")
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("isolation.level", "read_committed");
        let consumer: BaseConsumer = config.create().unwrap();
        consumer.subscribe(&["etl-in"]).unwrap();
        let mut inputs = Vec::new();
        let deadline = std::time::Instant::now() + TIMEOUT;
        while inputs.len() < 20 && std::time::Instant::now() < deadline {
            if let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) {
                inputs.push((
                    message.offset(),
                    String::from_utf8_lossy(message.payload().unwrap()).into_owned(),
                ));
            }
        }
        assert_eq!(inputs.len(), 20);
        let producer = transactional_producer(&bootstrap, "etl-app");
        producer.begin_transaction().unwrap();
        let outputs: Vec<String> = inputs.iter().map(|(_, v)| v.to_uppercase()).collect();
        send(&producer, "etl-out", &outputs);
        let mut offsets = TopicPartitionList::new();
        offsets
            .add_partition_offset("etl-in", 0, Offset::Offset(20))
            .unwrap();
        let metadata = consumer.group_metadata().expect("group metadata");
        producer
            .send_offsets_to_transaction(&offsets, &metadata, TIMEOUT)
            .expect("send_offsets_to_transaction");
        producer.commit_transaction(TIMEOUT).unwrap();
        let mut query = TopicPartitionList::new();
        query.add_partition("etl-in", 0);
        let committed = consumer.committed_offsets(query, TIMEOUT).unwrap();
        assert_eq!(
            committed.find_partition("etl-in", 0).unwrap().offset(),
            Offset::Offset(20)
        );
        assert_eq!(
            read_values(&bootstrap, "etl-out", "read_committed", 20),
            outputs
        );
        consumer.unsubscribe();
        std::mem::forget(consumer);
    })
    .await
    .unwrap();
    broker.shutdown().await.unwrap();
}
