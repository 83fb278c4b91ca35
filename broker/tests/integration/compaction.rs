//! Compacted topics through rdkafka: the cleaner keeps the latest value of every key, removes
//! tombstones after `delete.retention.ms`, survives a restart; keyless records are refused.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Message, Offset};

use crate::common::{self, TIMEOUT};

const TOPIC: &str = "compacted";

/// key → latest value (None = tombstone) read from the whole partition, and the record count.
async fn read_all(bootstrap: &str) -> (BTreeMap<String, Option<String>>, usize) {
    let watermarks: BaseConsumer = common::client_config(bootstrap).create().unwrap();
    let (_, high) = watermarks.fetch_watermarks(TOPIC, 0, TIMEOUT).unwrap();
    let consumer = common::assigned_consumer(bootstrap, TOPIC, 0, Offset::Beginning, &[]);
    let mut latest = BTreeMap::new();
    let mut count = 0;
    loop {
        let message = tokio::time::timeout(TIMEOUT, consumer.recv())
            .await
            .expect("records until the high watermark")
            .expect("consume");
        count += 1;
        let key = String::from_utf8(message.key().unwrap().to_vec()).unwrap();
        let value = message
            .payload()
            .map(|p| String::from_utf8_lossy(p).into_owned());
        latest.insert(key, value);
        if message.offset() == high - 1 {
            return (latest, count);
        }
    }
}

async fn send(producer: &FutureProducer, key: &str, value: Option<&str>) {
    let mut record = FutureRecord::<str, str>::to(TOPIC).partition(0).key(key);
    if let Some(value) = value {
        record = record.payload(value);
    }
    producer.send(record, TIMEOUT).await.expect("delivered");
}

/// Unique keys to push earlier records out of the active segment.
async fn filler(producer: &FutureProducer, round: u32) {
    for i in 0..60 {
        let value = format!("{:0>60}", i);
        send(producer, &format!("filler-{round}-{i}"), Some(&value)).await;
    }
}

fn cleaner_passes(broker: &weir_broker::Broker) -> u64 {
    broker
        .context()
        .metrics
        .cleaner_passes_total
        .with_label_values(&[TOPIC])
        .get()
}

async fn wait_for_passes(broker: &weir_broker::Broker, at_least: u64) {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while cleaner_passes(broker) < at_least {
        assert!(tokio::time::Instant::now() < deadline, "no cleaner pass");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_the_latest_value_of_each_key_and_drops_expired_tombstones() {
    let dir = tempfile::tempdir().unwrap();
    let properties = [("log.cleaner.backoff.ms", "50")];
    let broker = common::start(dir.path(), &properties).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(
        &bootstrap,
        TOPIC,
        1,
        &[
            ("cleanup.policy", "compact"),
            ("segment.bytes", "4096"),
            ("min.cleanable.dirty.ratio", "0.01"),
            ("delete.retention.ms", "1500"),
        ],
    )
    .await;
    let producer = common::producer(
        &bootstrap,
        &[("linger.ms", "2"), ("compression.type", "lz4")],
    );
    let mut produced = 0;
    for round in 0..50 {
        let sends = (0..40).map(|key| {
            let value = format!("k{key}-v{round}-{}", "x".repeat(20));
            let producer = &producer;
            async move { send(producer, &format!("k{key}"), Some(&value)).await }
        });
        futures::future::join_all(sends).await;
        produced += 40;
    }
    for key in 0..10 {
        send(&producer, &format!("k{key}"), None).await;
    }
    filler(&producer, 0).await;
    produced += 70;
    wait_for_passes(&broker, 1).await;

    let (latest, count) = read_all(&bootstrap).await;
    for key in 10..40 {
        let expected = format!("k{key}-v49-{}", "x".repeat(20));
        assert_eq!(latest[&format!("k{key}")], Some(expected), "k{key}");
    }
    for key in 0..10 {
        // Deleted keys: the tombstone or nothing — never an old value.
        assert_eq!(
            latest.get(&format!("k{key}")).cloned().flatten(),
            None,
            "k{key}"
        );
    }
    assert!(count < produced / 4, "{count} of {produced} records remain");

    // After delete.retention.ms, the next pass removes the tombstones.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let passes = cleaner_passes(&broker);
    filler(&producer, 1).await;
    wait_for_passes(&broker, passes + 1).await;
    let (latest, _) = read_all(&bootstrap).await;
    for key in 0..10 {
        assert!(
            !latest.contains_key(&format!("k{key}")),
            "tombstone of k{key} removed"
        );
    }
    assert_eq!(latest.len(), 30 + 120, "30 live keys and the fillers");

    // The cleaned log is what a restarted broker serves.
    drop(producer);
    broker.shutdown().await.unwrap();
    let broker = common::start(dir.path(), &properties).await;
    let bootstrap = common::bootstrap(&broker);
    let (after_restart, _) = read_all(&bootstrap).await;
    assert_eq!(after_restart, latest);
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_topics_refuse_records_without_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(
        &bootstrap,
        TOPIC,
        1,
        &[("cleanup.policy", "compact,delete")],
    )
    .await;
    let producer = common::producer(&bootstrap, &[("retries", "0")]);
    let keyless = FutureRecord::<str, str>::to(TOPIC)
        .partition(0)
        .payload("no key");
    let error = producer.send(keyless, TIMEOUT).await.unwrap_err().0;
    assert_eq!(
        error,
        KafkaError::MessageProduction(RDKafkaErrorCode::InvalidRecord)
    );
    send(&producer, "key", Some("value")).await;
    let (latest, _) = read_all(&bootstrap).await;
    assert_eq!(latest.len(), 1);
    broker.shutdown().await.unwrap();
}

/// `__consumer_offsets` is compacted like any topic: many commits of the same partitions and a
/// deleted group shrink to the latest commit per partition, which a restart reads back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offsets_topic_is_compacted_and_reloads_the_latest_commits() {
    use rdkafka::consumer::CommitMode;
    use rdkafka::TopicPartitionList;
    let dir = tempfile::tempdir().unwrap();
    let properties = [
        ("log.cleaner.backoff.ms", "50"),
        ("offsets.topic.num.partitions", "1"),
        ("offsets.topic.segment.bytes", "2048"),
        ("log.cleaner.delete.retention.ms", "0"),
    ];
    let broker = common::start(dir.path(), &properties).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "tracked", 2, &[]).await;
    let committer = |group: &str| {
        common::assigned_consumer(
            &bootstrap,
            "tracked",
            0,
            Offset::Beginning,
            &[("group.id", group)],
        )
    };
    let busy = committer("busy");
    for round in 1..=200 {
        let mut offsets = TopicPartitionList::new();
        for partition in 0..2 {
            offsets
                .add_partition_offset(
                    "tracked",
                    partition,
                    Offset::Offset(round * 10 + partition as i64),
                )
                .unwrap();
        }
        busy.commit(&offsets, CommitMode::Sync).unwrap();
    }
    let gone = committer("gone");
    let mut offsets = TopicPartitionList::new();
    offsets
        .add_partition_offset("tracked", 0, Offset::Offset(7))
        .unwrap();
    gone.commit(&offsets, CommitMode::Sync).unwrap();
    drop(gone);
    let admin = common::admin(&bootstrap);
    admin
        .delete_groups(&["gone"], &common::admin_options())
        .await
        .unwrap()
        .into_iter()
        .for_each(|result| assert!(result.is_ok(), "{result:?}"));

    let offsets_log = || {
        let topic = broker.context().topics.get("__consumer_offsets").unwrap();
        let log = topic.partition(0).unwrap().log();
        (log.size_bytes(), log.log_end_offset())
    };
    let passes = || {
        broker
            .context()
            .metrics
            .cleaner_passes_total
            .with_label_values(&["__consumer_offsets"])
            .get()
    };
    // A pass may run while the commits still arrive (2 KB segments roll during them) and leave
    // later segments for the next one: wait for the log to be small, not for the first pass.
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    let (size, end) = loop {
        let (size, end) = offsets_log();
        if passes() >= 1 && size < 6 * 2048 {
            break (size, end);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "__consumer_offsets not compacted: {size} bytes after {} cleaner passes",
            passes()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        end, 402,
        "400 commits, one of \"gone\" and its tombstone ({size} bytes)"
    );

    drop(busy);
    broker.shutdown().await.unwrap();
    let broker = common::start(dir.path(), &properties).await;
    let bootstrap = common::bootstrap(&broker);
    let reader = common::assigned_consumer(
        &bootstrap,
        "tracked",
        0,
        Offset::Beginning,
        &[("group.id", "busy")],
    );
    let mut query = TopicPartitionList::new();
    query.add_partition("tracked", 0);
    query.add_partition("tracked", 1);
    let committed = reader.committed_offsets(query, TIMEOUT).unwrap();
    assert_eq!(
        committed.find_partition("tracked", 0).unwrap().offset(),
        Offset::Offset(2000)
    );
    assert_eq!(
        committed.find_partition("tracked", 1).unwrap().offset(),
        Offset::Offset(2001)
    );
    let groups = broker.context().groups.group_ids();
    assert_eq!(
        groups,
        vec!["busy".to_string()],
        "the deleted group stays deleted"
    );
    broker.shutdown().await.unwrap();
}
