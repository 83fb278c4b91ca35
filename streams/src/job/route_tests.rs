//! An interval join copy that comes to own every repartition partition merges its rows into the
//! state directly (`job::route`) — after the rows the repartition topic still holds unread for
//! the input partitions it now owns. Here a stand-in group member (a plain consumer that reads
//! nothing it is assigned and commits nothing) holds the repartition partition while the job's
//! copy, owning one input partition, sends that partition's rows through the topic; the copy
//! stops, rows that move every input partition's time far ahead are produced, the stand-in
//! leaves and the copy starts again alone. Had it merged the new rows before the unread ones,
//! the watermark would have passed the left rows before their matches arrived: the output must
//! hold every pair exactly once.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

use super::exactly_once_tests::{create_partitioned_topics, read_committed, spawn, start_broker};
use crate::job::JobConfig;

const PAIRS: i64 = 3000;
const UNMATCHED: i64 = 20_000;
const BASE_MS: i64 = 1_700_000_000_000;
const TIMEOUT: Duration = Duration::from_secs(60);
const JOB: &str = "pairs";
const REPARTITION: &str = "weir-pairs-repartition";

fn job(bootstrap: &str) -> JobConfig {
    let mut config = JobConfig::new(
        JOB,
        bootstrap,
        "lefts",
        "joined",
        "SELECT l.lid, r.rid FROM lefts l JOIN rights r ON l.k = r.k \
         AND r._timestamp BETWEEN l._timestamp AND l._timestamp + INTERVAL '1' SECOND",
    );
    config.inputs = vec!["lefts".into(), "rights".into()];
    // Member ids start with the client id `pairs-<instance>`: the stand-in `pairs-a` sorts
    // first and gets the first partition of every topic from the range assignor.
    config.instance_id = "b".into();
    config.checkpoint_interval_ms = 100;
    config.checkpoint_max_records = 500;
    config
}

fn produce(bootstrap: &str, records: &[(&str, i32, String, i64)]) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    for (topic, partition, value, timestamp_ms) in records {
        let record = BaseRecord::<(), _>::to(topic)
            .partition(*partition)
            .payload(value)
            .timestamp(*timestamp_ms);
        producer.send(record).map_err(|(e, _)| e).unwrap();
    }
    producer.flush(TIMEOUT).unwrap();
}

/// A member of the job's group that is assigned partitions and reads none of them.
struct StandIn {
    stop: Arc<AtomicBool>,
    assignment: Arc<Mutex<Vec<(String, i32)>>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl StandIn {
    fn join(bootstrap: &str) -> StandIn {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", JOB)
            .set("client.id", "pairs-a")
            .set("partition.assignment.strategy", "range")
            .set("enable.auto.commit", "false")
            .create()
            .unwrap();
        consumer
            .subscribe(&["lefts", "rights", REPARTITION])
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let assignment = Arc::new(Mutex::new(Vec::new()));
        let thread = thread::spawn({
            let (stop, assignment) = (Arc::clone(&stop), Arc::clone(&assignment));
            move || {
                while !stop.load(Ordering::SeqCst) {
                    // Polling keeps it in the group; what it is given is dropped, uncommitted.
                    let _ = consumer.poll(Duration::from_millis(50));
                    let owned = consumer.assignment().unwrap();
                    *assignment.lock().unwrap() = owned
                        .elements()
                        .iter()
                        .map(|e| (e.topic().to_string(), e.partition()))
                        .collect();
                }
                // Dropping the consumer leaves the group.
            }
        });
        StandIn {
            stop,
            assignment,
            thread: Some(thread),
        }
    }

    fn owns(&self, topic: &str, partition: i32) -> bool {
        self.assignment
            .lock()
            .unwrap()
            .contains(&(topic.to_string(), partition))
    }

    fn leave(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap();
    }
}

/// The job group's committed offset of `topic` `partition` (None: nothing committed).
fn committed(bootstrap: &str, topic: &str, partition: i32) -> Option<i64> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", JOB)
        .create()
        .unwrap();
    let mut list = TopicPartitionList::new();
    list.add_partition(topic, partition);
    let committed = consumer.committed_offsets(list, TIMEOUT).unwrap();
    match committed.elements()[0].offset() {
        Offset::Offset(offset) => Some(offset),
        _ => None,
    }
}

/// The end of partition 0 of `topic`, transaction markers included.
fn end_offset(bootstrap: &str, topic: &str) -> i64 {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    consumer.fetch_watermarks(topic, 0, TIMEOUT).unwrap().1
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(100));
    }
}

#[allow(clippy::too_many_lines)] // a test: one scenario read top to bottom
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_unread_in_the_repartition_topic_are_merged_before_rows_merged_directly() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path()).await;
    let bootstrap = broker.local_addr().to_string();
    // The internal topics exist beforehand (as the job would create them: as many partitions
    // as its first input), so the stand-in's subscription sees them from the start.
    create_partitioned_topics(
        &bootstrap,
        &[
            ("lefts", 1),
            ("rights", 2),
            ("joined", 3),
            (REPARTITION, 1),
            ("weir-pairs-changelog", 1),
        ],
    )
    .await;
    let value = |side: &str, k: i64| format!(r#"{{"k": {k}, "{side}id": {k}}}"#);
    // A first left row to infer the schema from (its key matches nothing); on the partition the
    // copy will own, right rows that match nothing, then the right rows, each 500 ms after its
    // left row. (Read after the unmatched ones, the right rows would come long after the left
    // ones, had they not been merged first.)
    let mut first = vec![("lefts", 0, value("l", -1), BASE_MS - UNMATCHED - 1)];
    first.extend((0..UNMATCHED).map(|k| {
        let time = BASE_MS - UNMATCHED + k;
        ("rights", 1, value("r", 1_000_000 + k), time)
    }));
    first.extend((0..PAIRS).map(|k| ("rights", 1, value("r", k), BASE_MS + k * 10 + 500)));
    tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || produce(&bootstrap, &first)
    })
    .await
    .unwrap();

    let stand_in = tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || {
            let stand_in = StandIn::join(&bootstrap);
            wait_until("the stand-in is assigned", || stand_in.owns(REPARTITION, 0));
            stand_in
        }
    })
    .await
    .unwrap();
    let (stop, copy) = spawn(job(&bootstrap));
    tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || {
            wait_until("the copy sent every right row", || {
                committed(&bootstrap, "rights", 1) == Some(UNMATCHED + PAIRS)
            })
        }
    })
    .await
    .unwrap();
    stop.store(true, Ordering::SeqCst);
    let first_run = tokio::task::spawn_blocking(move || copy.join().unwrap())
        .await
        .unwrap();
    let sent = (UNMATCHED + PAIRS) as u64;
    assert_eq!(first_run.records_in, sent, "the copy read rights-1 only");
    assert!(
        stand_in.owns(REPARTITION, 0),
        "the stand-in held the repartition partition"
    );
    assert_eq!(
        committed(&bootstrap, REPARTITION, 0),
        None,
        "nothing read it"
    );

    // The left rows, then rows that move every input partition's time 100 s ahead.
    let mut rest: Vec<_> = (0..PAIRS)
        .map(|k| ("lefts", 0, value("l", k), BASE_MS + k * 10))
        .collect();
    let later = BASE_MS + 100_000;
    rest.push(("lefts", 0, value("l", -2), later));
    rest.push(("rights", 0, value("r", -3), later));
    rest.push(("rights", 1, value("r", -4), later));
    tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || {
            produce(&bootstrap, &rest);
            stand_in.leave();
        }
    })
    .await
    .unwrap();

    let repartition_end = end_offset(&bootstrap, REPARTITION);
    let (stop, copy) = spawn(job(&bootstrap));
    let output = tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || read_committed(&bootstrap, "joined", PAIRS as usize)
    })
    .await
    .unwrap();
    stop.store(true, Ordering::SeqCst);
    tokio::task::spawn_blocking(move || copy.join().unwrap())
        .await
        .unwrap();
    assert_eq!(
        end_offset(&bootstrap, REPARTITION),
        repartition_end,
        "alone, the copy merged its rows directly: it wrote nothing to the repartition topic"
    );
    let pairs: Vec<(i64, i64)> = output
        .iter()
        .map(|(_, value)| {
            let row: serde_json::Value = serde_json::from_str(value).unwrap();
            (row["lid"].as_i64().unwrap(), row["rid"].as_i64().unwrap())
        })
        .collect();
    let distinct: BTreeSet<_> = pairs.iter().copied().collect();
    let expected: BTreeSet<_> = (0..PAIRS).map(|k| (k, k)).collect();
    assert_eq!(pairs.len(), distinct.len(), "no pair twice");
    assert_eq!(
        distinct.len(),
        expected.len(),
        "{} pairs missing, e.g. {:?}",
        expected.difference(&distinct).count(),
        expected.difference(&distinct).take(5).collect::<Vec<_>>()
    );
    assert_eq!(distinct, expected);
}
