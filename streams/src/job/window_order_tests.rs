//! A windowed job's results leave in event-time order: when one checkpoint closes several
//! windows on several state partitions, their records reach the output stamped and ordered by
//! their windows' ends — so a job reading the output by record time (a chain, as Nexmark q5)
//! does not see a window's results behind the next window's and drop them as late.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

use super::exactly_once_tests::{create_topics, spawn, start_broker};
use crate::job::JobConfig;

const TIMEOUT: Duration = Duration::from_secs(60);
const USERS: i64 = 12;
const WINDOWS: i64 = 6;
const WINDOW_MS: i64 = 1_000;

/// Every user clicks once in each of `WINDOWS` + 1 windows, keyed by user (so over all three
/// partitions); the last window's clicks close the `WINDOWS` before it.
fn produce_clicks(bootstrap: &str) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    for window in 0..=WINDOWS {
        for user in 0..USERS {
            let key = format!("u{user}");
            let value = format!(
                r#"{{"visitor": "u{user}", "t": {}}}"#,
                window * WINDOW_MS + user
            );
            producer
                .send(BaseRecord::to("clicks").key(&key).payload(&value))
                .expect("queued");
        }
    }
    producer.flush(TIMEOUT).unwrap();
}

/// The output's one partition: (record timestamp, value), in offset order.
fn read_output(bootstrap: &str, expected: usize) -> Vec<(i64, serde_json::Value)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "order-checker")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset("per-window", 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let mut records = Vec::new();
    let deadline = Instant::now() + TIMEOUT;
    while records.len() < expected && Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(100)) {
            let message = message.unwrap();
            let value = serde_json::from_slice(message.payload().unwrap()).unwrap();
            records.push((message.timestamp().to_millis().unwrap(), value));
        }
    }
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoints_window_results_leave_in_event_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path()).await;
    let bootstrap = broker.local_addr().to_string();
    create_topics(&bootstrap, &["clicks"]).await;
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .create()
        .unwrap();
    let output = NewTopic::new("per-window", 1, TopicReplication::Fixed(1));
    for result in admin
        .create_topics([&output], &AdminOptions::new())
        .await
        .unwrap()
    {
        result.expect("topic created");
    }
    produce_clicks(&bootstrap);

    // All input in one checkpoint: it closes every window on every state partition at once.
    let mut config = JobConfig::new(
        "per-window",
        &bootstrap,
        "clicks",
        "per-window",
        "SELECT visitor, count(*) AS clicks, CAST(tumble(to_timestamp_millis(t), \
         INTERVAL '1' SECOND) AS BIGINT) AS start FROM clicks \
         GROUP BY visitor, tumble(to_timestamp_millis(t), INTERVAL '1' SECOND)",
    );
    config.checkpoint_interval_ms = 500;
    let (stop, handle) = spawn(config);
    let expected = (USERS * WINDOWS) as usize;
    let records = tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || read_output(&bootstrap, expected)
    })
    .await
    .unwrap();
    stop.store(true, Ordering::SeqCst);
    tokio::task::spawn_blocking(move || handle.join().unwrap())
        .await
        .unwrap();

    let mut per_window: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for (timestamp, value) in &records {
        let start = value["start"].as_i64().unwrap();
        assert_eq!(
            *timestamp,
            start + WINDOW_MS - 1,
            "stamped with its window's end"
        );
        assert_eq!(value["clicks"], 1);
        per_window
            .entry(start)
            .or_default()
            .push(value["visitor"].as_str().unwrap().into());
    }
    let users: Vec<String> = (0..USERS).map(|u| format!("u{u}")).collect();
    for window in 0..WINDOWS {
        let mut seen = per_window.remove(&(window * WINDOW_MS)).unwrap_or_default();
        seen.sort_by_key(|u| u[1..].parse::<i64>().unwrap());
        assert_eq!(seen, users, "window {window}'s results");
    }
    assert!(per_window.is_empty(), "no other windows: {per_window:?}");
    let times: Vec<i64> = records.iter().map(|(t, _)| *t).collect();
    assert!(
        times.windows(2).all(|pair| pair[0] <= pair[1]),
        "results in event-time order: {times:?}"
    );
}
