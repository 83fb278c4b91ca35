//! An aggregate over a table's changes against Weir's broker (in-process), through rdkafka only:
//! a `finals` table (auction → category and final price) whose keys are updated, moved between
//! categories, left out by the query's WHERE and deleted, aggregated per category by two copies
//! of the job, one stopped and restarted mid-stream (it restores the table's rows from the
//! changelog). The output topic's latest record per key must equal, group for group, the
//! aggregates an oracle computes over the table's final rows — a category emptied at the end is a
//! tombstone.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use serde_json::{json, Value};

use super::exactly_once_tests::{create_topics, read_committed, spawn, start_broker};
use crate::job::JobConfig;

const KEYS: usize = 60;
const TIMEOUT: Duration = Duration::from_secs(60);
const QUERY: &str = "SELECT category, count(*) AS auctions, avg(final) AS average, \
                     min(final) AS lowest, max(final) AS highest, sum(final) AS total, \
                     count(DISTINCT final % 7) AS residues \
                     FROM finals WHERE tag = 'keep' GROUP BY category";

/// What is produced, in order: (key, value; None a tombstone).
type Event = (String, Option<String>);

/// Updates of random keys (some with a null price, some the WHERE leaves out, some deletes),
/// then every key moved to categories 10–13 (category 14 empties), then more updates there.
fn events() -> Vec<Event> {
    let row = |category: usize, final_price: Option<usize>, keep: bool| {
        let final_price = final_price.map_or(Value::Null, |p| json!(p));
        let tag = if keep { "keep" } else { "skip" };
        Some(json!({"category": category, "final": final_price, "tag": tag}).to_string())
    };
    let mut events = Vec::new();
    for i in 0..700 {
        let key = format!("a{}", (i * 7) % KEYS);
        let value = match i {
            _ if i % 17 == 5 => None,
            _ if i % 13 == 3 => row(10 + (i * 3) % 5, None, true),
            _ => row(10 + (i * 3) % 5, Some((i * 37) % 1000), i % 11 != 0),
        };
        events.push((key, value));
    }
    for k in 0..KEYS {
        events.push((format!("a{k}"), row(10 + k % 4, Some(k * 13), true)));
    }
    for i in 0..100 {
        let key = format!("a{}", (i * 11) % KEYS);
        events.push((key, row(10 + i % 4, Some((i * 53) % 1000), i % 9 != 0)));
    }
    events
}

/// The view over the table's final rows: category → the query's row.
fn oracle(events: &[Event]) -> BTreeMap<String, Value> {
    let mut table: BTreeMap<&str, Value> = BTreeMap::new();
    for (key, value) in events {
        match value {
            Some(value) => table.insert(key, serde_json::from_str(value).unwrap()),
            None => table.remove(key.as_str()),
        };
    }
    let mut groups: BTreeMap<i64, Vec<Option<i64>>> = BTreeMap::new();
    for row in table.values().filter(|row| row["tag"] == "keep") {
        let category = row["category"].as_i64().unwrap();
        groups
            .entry(category)
            .or_default()
            .push(row["final"].as_i64());
    }
    groups
        .into_iter()
        .map(|(category, finals)| {
            let values: Vec<i64> = finals.iter().flatten().copied().collect();
            let sum: i64 = values.iter().sum();
            let mut residues: Vec<i64> = values.iter().map(|v| v % 7).collect();
            residues.sort_unstable();
            residues.dedup();
            let row = json!({
                "category": category,
                "auctions": finals.len(),
                "average": if values.is_empty() { Value::Null } else { json!(sum as f64 / values.len() as f64) },
                "lowest": values.iter().min(),
                "highest": values.iter().max(),
                "total": if values.is_empty() { Value::Null } else { json!(sum) },
                "residues": residues.len(),
            });
            (category.to_string(), without_nulls(row))
        })
        .collect()
}

/// Produces `events` in order over about four seconds, pausing longer after `pause_after` (so
/// the rebalances of a restart fall mid-stream).
fn produce(bootstrap: &str, events: &[Event], pause_after: usize) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .create()
        .unwrap();
    for (n, (key, value)) in events.iter().enumerate() {
        let mut record = BaseRecord::to("finals").key(key);
        if let Some(value) = value {
            record = record.payload(value);
        }
        producer.send(record).map_err(|(e, _)| e).unwrap();
        if n % 5 == 4 {
            thread::sleep(Duration::from_millis(20));
        }
        if n == pause_after {
            producer.flush(TIMEOUT).unwrap();
            thread::sleep(Duration::from_millis(1500));
        }
    }
    producer.flush(TIMEOUT).unwrap();
}

fn job_config(bootstrap: &str, instance: &str) -> JobConfig {
    let mut config = JobConfig::new("categories", bootstrap, "", "categories", QUERY);
    config.inputs = Vec::new();
    config.tables = vec![("finals".into(), "finals".into())];
    config.instance_id = instance.into();
    config.checkpoint_interval_ms = 100;
    config.checkpoint_max_records = 50;
    config
}

/// The output's latest value per key (a tombstone removes the key).
fn view(output: &[(Option<String>, Option<String>)]) -> BTreeMap<String, Value> {
    let mut view = BTreeMap::new();
    for (key, value) in output {
        let key = key.clone().unwrap();
        match value {
            Some(value) => view.insert(key, without_nulls(serde_json::from_str(value).unwrap())),
            None => view.remove(&key),
        };
    }
    view
}

/// A row with its null columns left out (the encoder may write them either way).
fn without_nulls(mut row: Value) -> Value {
    if let Some(columns) = row.as_object_mut() {
        columns.retain(|_, value| !value.is_null());
    }
    row
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_over_a_tables_changes_equals_the_aggregate_of_its_final_rows_across_a_restart() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path()).await;
    let bootstrap = broker.local_addr().to_string();
    create_topics(&bootstrap, &["finals", "categories"]).await;
    let events = events();
    let expected = oracle(&events);
    assert!(
        !expected.contains_key("14") && expected.len() == 4,
        "category 14 empties at the end: {expected:?}"
    );
    let producing = {
        let (bootstrap, events) = (bootstrap.clone(), events.clone());
        thread::spawn(move || produce(&bootstrap, &events, 300))
    };

    let (stop_a, job_a) = spawn(job_config(&bootstrap, "a"));
    let (stop_b, job_b) = spawn(job_config(&bootstrap, "b"));
    thread::sleep(Duration::from_millis(2500));
    stop_a.store(true, Ordering::SeqCst);
    let first_run = job_a.join().unwrap();
    let (stop_a, job_a) = spawn(job_config(&bootstrap, "a"));
    producing.join().unwrap();

    // The view converges once the jobs have read everything.
    let deadline = Instant::now() + TIMEOUT;
    let (got, output) = loop {
        let output = tokio::task::spawn_blocking({
            let bootstrap = bootstrap.clone();
            move || read_committed_with_tombstones(&bootstrap, "categories")
        })
        .await
        .unwrap();
        let got = view(&output);
        if got == expected || Instant::now() > deadline {
            break (got, output);
        }
    };
    stop_a.store(true, Ordering::SeqCst);
    stop_b.store(true, Ordering::SeqCst);
    let stats = [first_run, job_a.join().unwrap(), job_b.join().unwrap()];
    assert_eq!(got, expected, "runs: {stats:?}");
    assert!(
        output
            .iter()
            .any(|(k, v)| k.as_deref() == Some("14") && v.is_some()),
        "category 14 had rows before it emptied"
    );
    assert!(stats.iter().all(|s| s.records_rejected == 0), "{stats:?}");
}

/// Every committed record of `topic` (tombstones as None: `read_committed` answers them
/// empty), once it has been quiet for a while.
fn read_committed_with_tombstones(
    bootstrap: &str,
    topic: &str,
) -> Vec<(Option<String>, Option<String>)> {
    read_committed(bootstrap, topic, 1)
        .into_iter()
        .map(|(key, value)| (key, Some(value).filter(|v| !v.is_empty())))
        .collect()
}
