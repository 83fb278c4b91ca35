//! Transactions across a three-broker cluster, with rdkafka's transactional producer: the
//! coordinator is the leader of the id's `__transaction_state` partition, markers go to
//! partition leaders on other brokers, offsets sent to the transaction commit with it at the
//! group's coordinator — and a transaction open when its coordinator dies commits through the
//! next one, exactly once. A producer fenced by a newer incarnation fails fatally on every path,
//! wherever its partitions lead.

use std::collections::BTreeSet;
use std::sync::mpsc;
use std::time::Duration;

use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Message, Offset, TopicPartitionList};

use crate::cluster::{find_coordinator, wait_for_metadata, TestCluster};
use crate::common::*;

const OUT: &str = "spanning-out";
const IN: &str = "spanning-in";
const TRANSACTIONAL_ID: &str = "spanning-app";
const GROUP: &str = "spanning-group";
const TRANSACTION_KEY_TYPE: i8 = 1;
/// Generous: a call may span a coordinator's failover (session timeout and election).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

fn values(prefix: &str) -> Vec<String> {
    (0..3)
        .flat_map(|partition| (0..5).map(move |i| format!("{prefix}-p{partition}-{i}")))
        .collect()
}

/// One transaction: `prefix`'s values to every partition of OUT, offsets for IN up to
/// `input_offset` — committed or aborted.
fn transaction(
    producer: &BaseProducer,
    consumer: &BaseConsumer,
    prefix: &str,
    input_offset: i64,
    then: impl FnOnce(),
    commit: bool,
) {
    producer.begin_transaction().expect("begin");
    for value in values(prefix) {
        let partition: i32 = value.split("-p").nth(1).unwrap()[..1].parse().unwrap();
        producer
            .send(
                BaseRecord::<(), String>::to(OUT)
                    .partition(partition)
                    .payload(&value),
            )
            .expect("enqueue");
    }
    producer.flush(CALL_TIMEOUT).expect("flush");
    let mut offsets = TopicPartitionList::new();
    offsets
        .add_partition_offset(IN, 0, Offset::Offset(input_offset))
        .unwrap();
    let metadata = consumer.group_metadata().expect("group metadata");
    producer
        .send_offsets_to_transaction(&offsets, &metadata, CALL_TIMEOUT)
        .expect("send_offsets_to_transaction");
    then();
    match commit {
        true => producer.commit_transaction(CALL_TIMEOUT).expect("commit"),
        false => producer.abort_transaction(CALL_TIMEOUT).expect("abort"),
    }
}

/// Creates each (topic, partitions) with replication factor 3.
async fn create_replicated_topics(cluster: &TestCluster, topics: &[(&str, i32)]) {
    let admin = admin(&cluster.bootstrap(1));
    let topics: Vec<NewTopic> = topics
        .iter()
        .map(|(name, partitions)| NewTopic::new(name, *partitions, TopicReplication::Fixed(3)))
        .collect();
    for created in admin
        .create_topics(topics.iter(), &admin_options())
        .await
        .unwrap()
    {
        created.expect("topic created");
    }
}

/// Every value read_committed consumers see in OUT (through `bootstrap`).
fn read_committed(bootstrap: &str, expected: usize) -> Vec<String> {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", "spanning-readers")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    for partition in 0..3 {
        assignment
            .add_partition_offset(OUT, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let mut read = Vec::new();
    let deadline = std::time::Instant::now() + CALL_TIMEOUT;
    let mut idle_since = std::time::Instant::now();
    while std::time::Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(message)) => {
                read.push(String::from_utf8_lossy(message.payload().unwrap()).into_owned());
                idle_since = std::time::Instant::now();
            }
            Some(Err(error)) => eprintln!("consume error (retried): {error}"),
            None if read.len() >= expected && idle_since.elapsed() > Duration::from_secs(2) => {
                break
            }
            None => {}
        }
    }
    read
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_span_brokers_and_commit_through_their_coordinators_death() {
    let mut cluster = TestCluster::start_all_registered(3).await;
    create_replicated_topics(&cluster, &[(OUT, 3), (IN, 1)]).await;
    let leaders: BTreeSet<i32> =
        wait_for_metadata(&cluster.bootstrap(1), Some(OUT), "leaders", |m| {
            m.topics()[0].partitions().len() == 3
                && m.topics()[0].partitions().iter().all(|p| p.leader() > 0)
        })
        .await
        .topics()[0]
            .partitions()
            .iter()
            .map(|p| p.leader())
            .collect();
    assert_eq!(leaders.len(), 3, "each broker leads a partition of {OUT}");

    let all = (1..=3)
        .map(|id| cluster.bootstrap(id))
        .collect::<Vec<_>>()
        .join(",");
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let (killed_tx, killed_rx) = mpsc::channel::<()>();
    let client_bootstrap = all.clone();
    let client = tokio::task::spawn_blocking(move || {
        let producer: BaseProducer = client_config(&client_bootstrap)
            .set("transactional.id", TRANSACTIONAL_ID)
            .set("linger.ms", "1")
            .set("message.timeout.ms", "60000")
            .set("transaction.timeout.ms", "60000")
            .create()
            .expect("transactional producer");
        producer
            .init_transactions(CALL_TIMEOUT)
            .expect("init_transactions");
        let consumer: BaseConsumer = client_config(&client_bootstrap)
            .set("group.id", GROUP)
            .set("enable.auto.commit", "false")
            .create()
            .unwrap();
        transaction(&producer, &consumer, "c1", 10, || {}, true);
        transaction(&producer, &consumer, "a2", 20, || {}, false);
        transaction(&producer, &consumer, "c3", 30, || {}, true);
        // The fourth is open, its records written, when its coordinator dies.
        let kill_coordinator = || {
            ready_tx.send(()).unwrap();
            killed_rx.recv().unwrap();
        };
        transaction(&producer, &consumer, "c4", 40, kill_coordinator, true);
        let mut query = TopicPartitionList::new();
        query.add_partition(IN, 0);
        let committed = consumer.committed_offsets(query, CALL_TIMEOUT).unwrap();
        committed.find_partition(IN, 0).unwrap().offset()
    });

    tokio::task::block_in_place(|| ready_rx.recv()).expect("the fourth transaction is open");
    let coordinator = find_coordinator(&cluster, 1, TRANSACTION_KEY_TYPE, TRANSACTIONAL_ID).await;
    assert!(coordinator > 0, "a transaction coordinator");
    for node_id in 2..=3 {
        let seen = find_coordinator(&cluster, node_id, TRANSACTION_KEY_TYPE, TRANSACTIONAL_ID);
        assert_eq!(seen.await, coordinator, "every broker names the same one");
    }
    eprintln!("phase: transaction coordinator {coordinator} dies with a transaction open");
    cluster.brokers.remove(&coordinator).unwrap().abort().await;
    killed_tx.send(()).unwrap();
    let committed_input = client.await.expect("the client's transactions");
    assert_eq!(
        committed_input,
        Offset::Offset(40),
        "the offsets of the last committed transaction"
    );

    let live = (1..=3)
        .filter(|id| *id != coordinator)
        .map(|id| cluster.bootstrap(id))
        .collect::<Vec<_>>()
        .join(",");
    let expected: Vec<String> = ["c1", "c3", "c4"].iter().flat_map(|p| values(p)).collect();
    let count = expected.len();
    let mut read = tokio::task::spawn_blocking(move || read_committed(&live, count))
        .await
        .unwrap();
    read.sort();
    let mut expected = expected;
    expected.sort();
    assert_eq!(
        read, expected,
        "committed records once each, aborted ones never"
    );
}

const FENCE_OUT: &str = "fence-out";

/// A producer with a transaction open (`before_fence` run in it), then fenced by a newer
/// incarnation with the same transactional id: (zombie, newer).
fn fenced_zombie(
    bootstrap: &str,
    transactional_id: &str,
    before_fence: impl FnOnce(&BaseProducer),
) -> (BaseProducer, BaseProducer) {
    let transactional = |bootstrap: &str| {
        let producer: BaseProducer = client_config(bootstrap)
            .set("transactional.id", transactional_id)
            .set("linger.ms", "0")
            .set("message.timeout.ms", "30000")
            .create()
            .expect("transactional producer");
        producer
            .init_transactions(CALL_TIMEOUT)
            .expect("init_transactions");
        producer
    };
    let zombie = transactional(bootstrap);
    zombie.begin_transaction().expect("begin");
    before_fence(&zombie);
    let newer = transactional(bootstrap);
    (zombie, newer)
}

fn produce_to(producer: &BaseProducer, partition: i32) {
    let record = BaseRecord::<(), str>::to(FENCE_OUT)
        .partition(partition)
        .payload("fence");
    producer.send(record).expect("enqueue");
    // A fenced producer's flush may fail: what counts is the state it leaves the producer in.
    let _ = producer.flush(CALL_TIMEOUT);
}

/// librdkafka raises a fatal _FENCED error at once for the answers Kafka gives a zombie.
fn assert_fatally_fenced(zombie: &BaseProducer, path: &str) {
    let fatal = zombie.client().fatal_error();
    assert!(
        matches!(fatal, Some((RDKafkaErrorCode::Fenced, _))),
        "{path}: the zombie's error must be fatal _FENCED, is {fatal:?}"
    );
}

/// Every path a fenced transactional producer can take fails fatally with _FENCED (issue 22),
/// also when the partition leader is not the transaction's coordinator and asks it remotely
/// (KIP-890 verification, AddPartitionsToTxn v5) — each broker leads a partition here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_producer_fails_fatally_on_every_path_across_brokers() {
    let cluster = TestCluster::start_all_registered(3).await;
    create_replicated_topics(&cluster, &[(FENCE_OUT, 3), (IN, 1)]).await;
    wait_for_metadata(&cluster.bootstrap(1), Some(FENCE_OUT), "leaders", |m| {
        let partitions = m.topics()[0].partitions();
        let leaders: BTreeSet<i32> = partitions.iter().map(|p| p.leader()).collect();
        partitions.len() == 3 && leaders.len() == 3 && !leaders.contains(&-1)
    })
    .await;
    let all = (1..=3)
        .map(|id| cluster.bootstrap(id))
        .collect::<Vec<_>>()
        .join(",");
    tokio::task::spawn_blocking(move || {
        for partition in 0..3 {
            let id = format!("fence-same-{partition}");
            let (zombie, newer) = fenced_zombie(&all, &id, |p| produce_to(p, partition));
            produce_to(&zombie, partition);
            assert_fatally_fenced(&zombie, &format!("produce to partition {partition} again"));
            newer
                .begin_transaction()
                .expect("the newer instance goes on");
            produce_to(&newer, partition);
            newer.commit_transaction(CALL_TIMEOUT).expect("its commit");
        }
        let (zombie, _newer) = fenced_zombie(&all, "fence-new", |p| produce_to(p, 0));
        produce_to(&zombie, 1);
        assert_fatally_fenced(&zombie, "produce to a partition new to the transaction");
        let (zombie, _newer) = fenced_zombie(&all, "fence-offsets", |p| produce_to(p, 0));
        let consumer: BaseConsumer = client_config(&all).set("group.id", GROUP).create().unwrap();
        let mut offsets = TopicPartitionList::new();
        offsets
            .add_partition_offset(IN, 0, Offset::Offset(1))
            .unwrap();
        let metadata = consumer.group_metadata().expect("group metadata");
        let sent = zombie.send_offsets_to_transaction(&offsets, &metadata, CALL_TIMEOUT);
        assert!(sent.is_err(), "send_offsets_to_transaction of a zombie");
        assert_fatally_fenced(&zombie, "send_offsets_to_transaction");
        for (id, commit) in [("fence-commit", true), ("fence-abort", false)] {
            let (zombie, _newer) = fenced_zombie(&all, id, |p| produce_to(p, 2));
            let ended = match commit {
                true => zombie.commit_transaction(CALL_TIMEOUT),
                false => zombie.abort_transaction(CALL_TIMEOUT),
            };
            assert!(
                ended.is_err(),
                "{id}: the zombie cannot end the transaction"
            );
            assert_fatally_fenced(&zombie, id);
        }
    })
    .await
    .unwrap();
}
