//! An input partition that never has a record holds a windowed job's watermark — and every
//! window — back, unless the job has an idle timeout (`crate::watermark`): then the quiet
//! partition is announced idle and the windows the other partitions closed come out. The
//! timeout is longer than the job takes to read everything: the announcement comes from a
//! checkpoint that polled nothing, as it does for a partition that is idle for real.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

use super::exactly_once_tests::{create_topics, read_committed, spawn, start_broker};
use crate::job::JobConfig;

const TIMEOUT: Duration = Duration::from_secs(60);
const USERS: i64 = 8;
const WINDOWS: i64 = 5;

/// Every user clicks once a second for `WINDOWS` + 1 seconds, into partitions 0 and 1 of the
/// three: the last second's clicks close the `WINDOWS` before it.
fn produce_clicks(bootstrap: &str) -> usize {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let mut sent = 0;
    for second in 0..=WINDOWS {
        for user in 0..USERS {
            let value = format!(r#"{{"visitor": "u{user}", "t": {}}}"#, second * 1000 + user);
            let record = BaseRecord::<(), _>::to("clicks")
                .partition((user % 2) as i32)
                .payload(&value);
            producer.send(record).expect("queued");
            sent += 1;
        }
    }
    producer.flush(TIMEOUT).unwrap();
    sent
}

/// `topic`'s committed results, (window start, visitor) → clicks, once `expected` arrived and
/// nothing more came for a while.
fn read_counts(bootstrap: &str, topic: &str, expected: usize) -> BTreeMap<(i64, String), i64> {
    let mut counts = BTreeMap::new();
    for (_, value) in read_committed(bootstrap, topic, expected) {
        let value: serde_json::Value = serde_json::from_str(&value).unwrap();
        let key = (
            value["start"].as_i64().unwrap(),
            value["visitor"].as_str().unwrap().to_string(),
        );
        let previous = counts.insert(key, value["clicks"].as_i64().unwrap());
        assert!(previous.is_none(), "one result per window and visitor");
    }
    counts
}

fn job(bootstrap: &str, name: &str, idle_timeout_ms: Option<u64>) -> JobConfig {
    let mut config = JobConfig::new(
        name,
        bootstrap,
        "clicks",
        name,
        "SELECT visitor, count(*) AS clicks, CAST(tumble(to_timestamp_millis(t), \
         INTERVAL '1' SECOND) AS BIGINT) AS start FROM clicks \
         GROUP BY visitor, tumble(to_timestamp_millis(t), INTERVAL '1' SECOND)",
    );
    config.checkpoint_interval_ms = 200;
    config.idle_timeout_ms = idle_timeout_ms;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_timeout_lets_windows_out_that_a_quiet_partition_holds_back() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path()).await;
    let bootstrap = broker.local_addr().to_string();
    create_topics(&bootstrap, &["clicks", "released", "held"]).await;
    let sent = produce_clicks(&bootstrap);

    let (stop_held, held) = spawn(job(&bootstrap, "held", None));
    let (stop_released, released) = spawn(job(&bootstrap, "released", Some(2_000)));
    let counts = tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || read_counts(&bootstrap, "released", (USERS * WINDOWS) as usize)
    })
    .await
    .unwrap();
    let expected: BTreeMap<(i64, String), i64> = (0..WINDOWS)
        .flat_map(|w| (0..USERS).map(move |u| ((w * 1000, format!("u{u}")), 1)))
        .collect();
    assert_eq!(counts, expected, "every closed window, once per visitor");

    // The job without a timeout read everything too, and still emits nothing.
    let held_counts = tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || read_counts(&bootstrap, "held", 0)
    })
    .await
    .unwrap();
    stop_held.store(true, Ordering::SeqCst);
    stop_released.store(true, Ordering::SeqCst);
    let (held, released) =
        tokio::task::spawn_blocking(move || (held.join().unwrap(), released.join().unwrap()))
            .await
            .unwrap();
    assert_eq!(held.records_in, sent as u64);
    assert_eq!(released.records_in, sent as u64);
    assert!(held_counts.is_empty(), "held back: {held_counts:?}");
    assert_eq!(held.windows_emitted, 0);
}
