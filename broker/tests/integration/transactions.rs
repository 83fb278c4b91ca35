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
pub(crate) fn read_values(
    bootstrap: &str,
    topic: &str,
    isolation: &str,
    expected: usize,
) -> Vec<String> {
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

/// A producer that dies mid-transaction: the coordinator aborts it after its timeout, so
/// read_committed consumers are not held forever, and the zombie is fenced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_transaction_is_aborted_after_its_timeout_and_survives_a_crash_first() {
    let dir = tempfile::tempdir().unwrap();
    let properties = [(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "100",
    )];
    let broker = common::start(dir.path(), &properties).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "hanging", 1, &[]).await;
    let bootstrap_for_blocking = bootstrap.clone();
    let zombie = tokio::task::spawn_blocking(move || {
        let mut config = common::client_config(&bootstrap_for_blocking);
        config
            .set("transactional.id", "hanging-app")
            .set("transaction.timeout.ms", "3000")
            .set("linger.ms", "1");
        let producer: BaseProducer = config.create().unwrap();
        producer.init_transactions(TIMEOUT).unwrap();
        producer.begin_transaction().unwrap();
        send(&producer, "hanging", &batch("hanging", 4));
        producer
    })
    .await
    .unwrap();
    let lso = |broker: &weir_broker::Broker| {
        let topic = broker.context().topics.get("hanging").unwrap();
        topic.partition(0).unwrap().offsets()
    };
    let offsets = lso(&broker);
    assert_eq!(
        (offsets.last_stable_offset, offsets.high_watermark),
        (0, 4),
        "held by the open transaction"
    );
    let context = broker.context();
    let metrics = context
        .metrics
        .render(&context.topics, &context.groups, None);
    assert!(
        metrics.contains("weir_open_transactions{partition=\"0\",topic=\"hanging\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("weir_log_last_stable_offset{partition=\"0\",topic=\"hanging\"} 0"));

    // kill -9 with the transaction open: after the restart it is still open, then times out.
    broker.abort().await;
    let broker = common::start(dir.path(), &properties).await;
    assert_eq!(
        lso(&broker).last_stable_offset,
        0,
        "still open after the crash"
    );
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while lso(&broker).last_stable_offset == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the hanging transaction was never aborted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let offsets = lso(&broker);
    assert_eq!(
        offsets.last_stable_offset, offsets.high_watermark,
        "the abort marker ended it"
    );
    let state = broker.context().transactions.snapshot()["hanging-app"].clone();
    assert_eq!(state.state.name(), "CompleteAbort");
    assert_eq!(
        state.producer_epoch, 1,
        "the epoch was bumped: the zombie is fenced"
    );
    let bootstrap = common::bootstrap(&broker);
    let read = tokio::task::spawn_blocking(move || {
        read_values(&bootstrap, "hanging", "read_committed", 0)
    })
    .await
    .unwrap();
    assert!(
        read.is_empty(),
        "nothing of the aborted transaction is visible: {read:?}"
    );
    std::mem::forget(zombie);
    broker.shutdown().await.unwrap();
}

/// A crash after the coordinator persisted its decision but before it wrote the markers: the
/// restarted broker finishes the transaction (the records become visible, all of them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_decided_before_a_crash_is_finished_after_the_restart() {
    use kafka_protocol::messages::*;
    use kafka_protocol::protocol::StrBytes;
    use weir_broker::transaction::records;
    use weir_broker::transaction::state::TxnState;

    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "decided", 1, &[]).await;
    let mut client = crate::raw::RawClient::connect(broker.local_addr()).await;
    let id = TransactionalId(StrBytes::from_static_str("decided-app"));
    let init = client
        .call(
            4,
            &InitProducerIdRequest::default()
                .with_transactional_id(Some(id.clone()))
                .with_transaction_timeout_ms(600_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        )
        .await;
    assert_eq!(init.error_code, 0);
    let topic = add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
        .with_name(TopicName(StrBytes::from_static_str("decided")))
        .with_partitions(vec![0]);
    let added = client
        .call(
            3,
            &AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(id)
                .with_v3_and_below_producer_id(init.producer_id)
                .with_v3_and_below_producer_epoch(init.producer_epoch)
                .with_v3_and_below_topics(vec![topic]),
        )
        .await;
    assert_eq!(
        added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        0
    );
    let values: Vec<&[u8]> = vec![b"one", b"two", b"three"];
    let batch = crate::records::encode_producer_batch(
        &values,
        init.producer_id.0,
        init.producer_epoch,
        0,
        true,
    );
    let partition = produce_request::PartitionProduceData::default()
        .with_index(0)
        .with_records(Some(batch.freeze()));
    let produced = client
        .call(
            9,
            &ProduceRequest::default()
                .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str(
                    "decided-app",
                ))))
                .with_acks(-1)
                .with_timeout_ms(5000)
                .with_topic_data(vec![produce_request::TopicProduceData::default()
                    .with_name(TopicName(StrBytes::from_static_str("decided")))
                    .with_partition_data(vec![partition])]),
        )
        .await;
    assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);

    // The coordinator's decision, persisted as it would be just before a crash: PrepareCommit.
    let mut decided = broker.context().transactions.snapshot()["decided-app"].clone();
    decided.state = TxnState::PrepareCommit;
    let state_topic = broker
        .context()
        .transactions
        .state_topic(&broker.context().topics)
        .unwrap();
    let index = weir_broker::group::offsets::partition_for(
        "decided-app",
        state_topic.partitions.len() as i32,
    );
    let record = (
        records::encode_key("decided-app"),
        Some(records::encode_value(&decided)),
    );
    let batch = weir_broker::topic::internal::key_value_batch(vec![record], None, 0).unwrap();
    state_topic.partition(index).unwrap().append(batch).unwrap();
    drop(client);
    broker.abort().await;

    let broker = common::start(dir.path(), &[]).await;
    // Loading queues the decided transaction; the settling task writes its markers.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while broker.context().transactions.snapshot()["decided-app"].state != TxnState::CompleteCommit
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the decided commit is finished after the restart"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let offsets = broker
        .context()
        .topics
        .get("decided")
        .unwrap()
        .partition(0)
        .unwrap()
        .offsets();
    assert_eq!(
        offsets.high_watermark, 4,
        "three records and the commit marker"
    );
    assert_eq!(offsets.last_stable_offset, 4);
    assert_eq!(
        broker.context().transactions.snapshot()["decided-app"].state,
        TxnState::CompleteCommit
    );
    let bootstrap = common::bootstrap(&broker);
    let read = tokio::task::spawn_blocking(move || {
        read_values(&bootstrap, "decided", "read_committed", 3)
    })
    .await
    .unwrap();
    assert_eq!(read, vec!["one", "two", "three"]);
    broker.shutdown().await.unwrap();
}

/// Two producers' transactions interleaved on the same partitions: read_committed consumers
/// see exactly the committed one's records, in offset order, whatever the interleaving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interleaved_transactions_of_two_producers_on_the_same_partition() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "interleaved", 1, &[]).await;
    let bootstrap_for_blocking = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let bootstrap = bootstrap_for_blocking;
        let alice = transactional_producer(&bootstrap, "alice");
        let bob = transactional_producer(&bootstrap, "bob");
        for round in 0..3 {
            alice.begin_transaction().unwrap();
            bob.begin_transaction().unwrap();
            for i in 0..4 {
                send(&alice, "interleaved", &[format!("alice-{round}-{i}")]);
                send(&bob, "interleaved", &[format!("bob-{round}-{i}")]);
            }
            // Alice commits every round; Bob aborts rounds 0 and 2 and commits round 1, and
            // ends first in round 1 so that the markers interleave both ways.
            if round == 1 {
                bob.commit_transaction(TIMEOUT).unwrap();
                alice.commit_transaction(TIMEOUT).unwrap();
            } else {
                alice.commit_transaction(TIMEOUT).unwrap();
                bob.abort_transaction(TIMEOUT).unwrap();
            }
        }
        let committed = read_values(&bootstrap, "interleaved", "read_committed", 16);
        let mut expected = Vec::new();
        for round in 0..3 {
            for i in 0..4 {
                expected.push(format!("alice-{round}-{i}"));
                if round == 1 {
                    expected.push(format!("bob-{round}-{i}"));
                }
            }
        }
        assert_eq!(committed, expected);
        let everything = read_values(&bootstrap, "interleaved", "read_uncommitted", 24);
        assert_eq!(
            everything.len(),
            24,
            "aborted records too for read_uncommitted"
        );
    })
    .await
    .unwrap();
    broker.shutdown().await.unwrap();
}
