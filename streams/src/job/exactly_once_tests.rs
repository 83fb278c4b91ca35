//! Streams jobs against Weir's broker (in-process), through rdkafka only: a SQL filter job's
//! read_committed output is exactly the filtered input — across stops and restarts at any point,
//! with two copies sharing the partitions, and with undecodable records sent to a dead-letter
//! topic instead of being lost.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};
use weir_broker::{Broker, BrokerConfig};

use crate::job::{self, JobConfig, JobMetrics, JobStats};

const RECORDS: usize = 3000;
const TIMEOUT: Duration = Duration::from_secs(60);

pub(super) async fn start_broker(dir: &std::path::Path) -> Broker {
    let mut config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.to_path_buf());
    config.set("group.initial.rebalance.delay.ms", "0").unwrap();
    Broker::start(config).await.expect("broker starts")
}

pub(super) async fn create_topics(bootstrap: &str, names: &[&str]) {
    let topics: Vec<(&str, i32)> = names.iter().map(|name| (*name, 3)).collect();
    create_partitioned_topics(bootstrap, &topics).await;
}

/// Creates each `(name, partitions)`.
pub(super) async fn create_partitioned_topics(bootstrap: &str, names: &[(&str, i32)]) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let topics: Vec<NewTopic<'_>> = names
        .iter()
        .map(|(name, partitions)| NewTopic::new(name, *partitions, TopicReplication::Fixed(1)))
        .collect();
    for result in admin
        .create_topics(&topics, &AdminOptions::new())
        .await
        .unwrap()
    {
        result.expect("topic created");
    }
}

/// Record i: {"id": i, "status": 200|404|500, "path": "/p<i % 7>"}; every 100th is not JSON.
fn input_value(i: usize) -> String {
    if i % 100 == 99 {
        return format!("garbage {i}");
    }
    let status = [200, 404, 500][i % 3];
    format!(
        r#"{{"id": {i}, "status": {status}, "path": "/p{}"}}"#,
        i % 7
    )
}

fn produce_input(bootstrap: &str, topic: &str) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .create()
        .unwrap();
    for i in 0..RECORDS {
        let key = i.to_string();
        let value = input_value(i);
        producer
            .send(BaseRecord::to(topic).key(&key).payload(&value))
            .expect("queued");
    }
    producer.flush(TIMEOUT).unwrap();
}

/// Every record of `topic` a read_committed consumer sees, waiting until `expected` arrived.
pub(super) fn read_committed(
    bootstrap: &str,
    topic: &str,
    expected: usize,
) -> Vec<(Option<String>, String)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "checker")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    for partition in 0..3 {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let mut records = Vec::new();
    let deadline = Instant::now() + TIMEOUT;
    let mut quiet_since = Instant::now();
    while Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(message)) => {
                let text = |b: Option<&[u8]>| b.map(|b| String::from_utf8_lossy(b).into_owned());
                records.push((
                    text(message.key()),
                    text(message.payload()).unwrap_or_default(),
                ));
                quiet_since = Instant::now();
            }
            Some(Err(error)) => panic!("read: {error}"),
            None if records.len() >= expected && quiet_since.elapsed() > Duration::from_secs(2) => {
                break
            }
            None => {}
        }
    }
    records
}

fn job_config(bootstrap: &str, instance: &str) -> JobConfig {
    let mut config = JobConfig::new(
        "errors",
        bootstrap,
        "requests",
        "errors",
        "SELECT _key, id, path, status FROM requests WHERE status >= 400",
    );
    config.instance_id = instance.into();
    config.checkpoint_interval_ms = 100;
    config.checkpoint_max_records = 150;
    config.dead_letter_topic = Some("requests-rejected".into());
    config
}

/// Runs a copy of the job on its own thread until its `stop` is set.
pub(super) fn spawn(config: JobConfig) -> (Arc<AtomicBool>, thread::JoinHandle<JobStats>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let handle = thread::spawn(move || job::run(&config, &flag).expect("job runs"));
    (stop, handle)
}

fn expected_ids() -> BTreeSet<u64> {
    (0..RECORDS)
        .filter(|i| i % 100 != 99 && i % 3 != 0)
        .map(|i| i as u64)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_job_is_exactly_once_across_restarts_and_two_copies() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path()).await;
    let bootstrap = broker.local_addr().to_string();
    create_topics(&bootstrap, &["requests", "errors", "requests-rejected"]).await;
    let producing = {
        let bootstrap = bootstrap.clone();
        thread::spawn(move || produce_input(&bootstrap, "requests"))
    };

    // One copy starts; a second joins (the group splits the partitions); the first stops and
    // comes back; then both run to the end.
    let (stop_a, job_a) = spawn(job_config(&bootstrap, "a"));
    thread::sleep(Duration::from_millis(1500));
    let (stop_b, job_b) = spawn(job_config(&bootstrap, "b"));
    thread::sleep(Duration::from_millis(1500));
    stop_a.store(true, Ordering::SeqCst);
    let first_run = job_a.join().unwrap();
    assert!(first_run.checkpoints > 0, "{first_run:?}");
    let (stop_a, job_a) = spawn(job_config(&bootstrap, "a"));
    producing.join().unwrap();

    let expected = expected_ids();
    let output = tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        let count = expected.len();
        move || read_committed(&bootstrap, "errors", count)
    })
    .await
    .unwrap();
    stop_a.store(true, Ordering::SeqCst);
    stop_b.store(true, Ordering::SeqCst);
    let stats = [first_run, job_a.join().unwrap(), job_b.join().unwrap()];

    let mut ids = Vec::new();
    for (key, value) in &output {
        let row: serde_json::Value = serde_json::from_str(value).unwrap();
        let id = row["id"].as_u64().unwrap();
        assert_eq!(key.as_deref(), Some(id.to_string().as_str()), "key kept");
        assert!(row["status"].as_i64().unwrap() >= 400);
        assert!(
            row.get("_key").is_none(),
            "the key column is the key, not a field"
        );
        ids.push(id);
    }
    let unique: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "no duplicates; runs: {stats:?}");
    assert_eq!(unique, expected, "nothing lost");

    let rejected = tokio::task::spawn_blocking(move || {
        read_committed(&bootstrap, "requests-rejected", RECORDS / 100)
    })
    .await
    .unwrap();
    let mut garbage: Vec<&str> = rejected.iter().map(|(_, v)| v.as_str()).collect();
    garbage.sort();
    garbage.dedup();
    assert_eq!(
        garbage.len(),
        RECORDS / 100,
        "every undecodable record, once"
    );
    assert_eq!(rejected.len(), RECORDS / 100);
    drop(broker);
}

/// A job over two input topics: each is a table of the query; their offsets commit together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_reads_several_input_topics_as_tables() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path()).await;
    let bootstrap = broker.local_addr().to_string();
    create_topics(&bootstrap, &["left", "right", "merged"]).await;
    let records = 500;
    tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || {
            let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
                .set("bootstrap.servers", &bootstrap)
                .create()
                .unwrap();
            for id in 0..records {
                for (topic, src) in [("left", "l"), ("right", "r")] {
                    let value = format!(r#"{{"id": {id}, "src": "{src}"}}"#);
                    producer
                        .send(BaseRecord::<(), _>::to(topic).payload(&value))
                        .expect("queued");
                }
            }
            producer.flush(TIMEOUT).unwrap();
        }
    })
    .await
    .unwrap();
    let mut config = JobConfig::new(
        "merge",
        &bootstrap,
        "left",
        "merged",
        "SELECT id, src FROM \"left\" UNION ALL SELECT id, src FROM \"right\" WHERE id % 2 = 0",
    );
    config.inputs.push("right".into());
    config.checkpoint_interval_ms = 100;
    config.checkpoint_max_records = 200;
    let (stop, job) = spawn(config.clone());
    thread::sleep(Duration::from_millis(800));
    stop.store(true, Ordering::SeqCst);
    job.join().unwrap();
    let metrics = Arc::new(JobMetrics::new("merge", "0"));
    let stop = Arc::new(AtomicBool::new(false));
    let job = thread::spawn({
        let (metrics, stop) = (Arc::clone(&metrics), Arc::clone(&stop));
        move || job::run_with_metrics(&config, &stop, None, &metrics).expect("job runs")
    });
    let expected: BTreeSet<(u64, String)> = (0..records as u64)
        .map(|id| (id, "l".to_string()))
        .chain(
            (0..records as u64)
                .filter(|id| id % 2 == 0)
                .map(|id| (id, "r".to_string())),
        )
        .collect();
    let output = tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        let count = expected.len();
        move || read_committed(&bootstrap, "merged", count)
    })
    .await
    .unwrap();
    stop.store(true, Ordering::SeqCst);
    let stats = job.join().unwrap();
    let rows: Vec<(u64, String)> = output
        .iter()
        .map(|(_, value)| {
            let row: serde_json::Value = serde_json::from_str(value).unwrap();
            (
                row["id"].as_u64().unwrap(),
                row["src"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let unique: BTreeSet<(u64, String)> = rows.iter().cloned().collect();
    assert_eq!(rows.len(), unique.len(), "no duplicates; {stats:?}");
    assert_eq!(unique, expected);
    // The second run's counters: what its committed checkpoints read and wrote.
    let text = metrics.render();
    let value = |name: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("{name} in {text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(value("weir_job_records_in_total"), stats.records_in);
    assert_eq!(value("weir_job_records_out_total"), stats.records_out);
    assert_eq!(value("weir_job_checkpoints_total"), stats.checkpoints);
    assert!(text.contains(r#"job="merge""#), "{text}");
    drop(broker);
}

/// A checkpoint ends once its input is quiet (`checkpoint_quiet_ms`), not only at its
/// interval: with a two-minute interval, a burst's results are committed within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_is_committed_once_the_input_is_quiet() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path()).await;
    let bootstrap = broker.local_addr().to_string();
    create_topics(&bootstrap, &["requests", "errors", "requests-rejected"]).await;
    let mut config = job_config(&bootstrap, "a");
    config.checkpoint_interval_ms = 120_000;
    config.checkpoint_max_records = 1_000_000;
    let (stop, job) = spawn(config);
    let started = Instant::now();
    tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || produce_input(&bootstrap, "requests")
    })
    .await
    .unwrap();

    let expected = expected_ids();
    let output = tokio::task::spawn_blocking({
        let count = expected.len();
        move || read_committed(&bootstrap, "errors", count)
    })
    .await
    .unwrap();
    // read_committed gives up after TIMEOUT (60 s), half the interval.
    let elapsed = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let stats = job.join().unwrap();
    let ids: Vec<u64> = output
        .iter()
        .map(|(_, value)| {
            serde_json::from_str::<serde_json::Value>(value).unwrap()["id"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let unique: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "no duplicates; {stats:?}");
    assert_eq!(unique, expected, "committed before the interval; {stats:?}");
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
    drop(broker);
}
