//! A windowed count job (`weir job run` with `GROUP BY tumble(…)`) as two processes sharing the
//! input's partitions, killed with -9 again and again and restarted. The oracle computes from
//! the generated input, partition by partition, which records are too late and the exact count
//! and sum of every window the final watermark closes: the job's read_committed output must hold
//! each of those windows exactly once with exactly those values, and the late topic exactly the
//! late records. Each record also carries a random 31-bit fingerprint, summed per window, so a
//! lost record and a duplicated one in the same window cannot cancel out in its count (they
//! would only if their fingerprints were equal: a chance of about 2^-31 per pair).

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

#[path = "crash/broker.rs"]
#[allow(dead_code)]
mod broker;
#[path = "crash/committed.rs"]
mod committed;
#[path = "crash/jobs.rs"]
mod jobs;
#[path = "crash/rng.rs"]
mod rng;

use std::collections::{BTreeMap, BTreeSet};
use std::thread;
use std::time::Duration;

use broker::BrokerProcess;
use jobs::JobPair;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rng::Rng;

const PARTITIONS: i32 = 4;
const PER_PARTITION: usize = 4000;
const KILLS: usize = 6;
const WINDOW_MS: i64 = 10_000;
const LATENESS_MS: i64 = 2_000;
const START_MS: i64 = 1_700_000_000_000;
const USERS: [&str; 5] = ["ann", "bob", "cid", "dan", "eve"];
const TIMEOUT: Duration = Duration::from_secs(180);

struct Event {
    id: usize,
    partition: i32,
    time_ms: i64,
    user: &'static str,
    amount: i64,
    fingerprint: i64,
}

/// Per partition: event time advancing 60 ms a record, 30 % of records up to 1.5 s out of order
/// (within the lateness), 2 % of them 25 s behind (too late).
fn generate(rng: &mut Rng) -> Vec<Event> {
    let mut events = Vec::new();
    for index in 0..PER_PARTITION {
        for partition in 0..PARTITIONS {
            let base = START_MS + index as i64 * 60 + partition as i64 * 7;
            let time_ms = match rng.between(0, 100) {
                0..=1 => base - 25_000,
                2..=31 => base - rng.between(0, 1500) as i64,
                _ => base,
            };
            events.push(Event {
                id: events.len(),
                partition,
                time_ms,
                user: USERS[rng.between(0, USERS.len() as u64) as usize],
                amount: rng.between(1, 100) as i64,
                fingerprint: rng.between(0, 1 << 31) as i64,
            });
        }
    }
    events
}

/// A window's count, sum of amounts and sum of fingerprints.
type WindowValues = (i64, i64, i64);
/// (window start, user) → its values.
type Windows = BTreeMap<(i64, String), WindowValues>;

/// The late ids, and every window the final watermark closes — the job's rules applied to each
/// partition in order.
fn oracle(events: &[Event]) -> (BTreeSet<usize>, Windows) {
    let mut late = BTreeSet::new();
    let mut windows = Windows::new();
    let mut max_times = BTreeMap::new();
    for event in events {
        let start = event.time_ms - event.time_ms.rem_euclid(WINDOW_MS);
        let watermark = max_times.get(&event.partition).map(|max| max - LATENESS_MS);
        if watermark.is_some_and(|w| start + WINDOW_MS <= w) {
            late.insert(event.id);
        } else {
            let window = windows.entry((start, event.user.to_string())).or_default();
            window.0 += 1;
            window.1 += event.amount;
            window.2 += event.fingerprint;
        }
        let max = max_times.entry(event.partition).or_insert(event.time_ms);
        *max = (*max).max(event.time_ms);
    }
    let watermark = max_times.values().min().unwrap() - LATENESS_MS;
    windows.retain(|(start, _), _| start + WINDOW_MS <= watermark);
    (late, windows)
}

const QUERY: &str = "SELECT CAST(tumble(_timestamp, INTERVAL '10 seconds') AS BIGINT) AS window, \
                     user, count(*) AS n, sum(amount) AS total, sum(fingerprint) AS fingerprints \
                     FROM events \
                     GROUP BY tumble(_timestamp, INTERVAL '10 seconds'), user";

fn produce(bootstrap: &str, events: &[Event]) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .create()
        .unwrap();
    for (i, event) in events.iter().enumerate() {
        let value = format!(
            r#"{{"id": {}, "user": "{}", "amount": {}, "fingerprint": {}}}"#,
            event.id, event.user, event.amount, event.fingerprint
        );
        let record = BaseRecord::<(), _>::to("events")
            .partition(event.partition)
            .timestamp(event.time_ms)
            .payload(&value);
        producer.send(record).map_err(|(e, _)| e).unwrap();
        if i % 400 == 0 {
            // Spread the input over a few seconds, so that kills land while it flows.
            thread::sleep(Duration::from_millis(150));
        }
    }
    producer.flush(Duration::from_secs(60)).unwrap();
}

#[test]
fn a_windowed_job_killed_9_again_and_again_emits_each_window_once_with_exact_counts() {
    let seed = Rng::seed_from_clock();
    eprintln!("window crash test seed {seed}");
    let mut rng = Rng::new(seed);
    let events = generate(&mut rng);
    let (late, expected) = oracle(&events);
    assert!(
        !late.is_empty() && expected.len() > 50,
        "the input exercises lateness and windows"
    );

    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("events", PARTITIONS as u32);
    broker.create_topic("window-counts", 2);
    broker.create_topic("late-events", 1);
    let logs = tempfile::tempdir().unwrap();
    let producing = {
        let bootstrap = bootstrap.clone();
        thread::spawn(move || produce(&bootstrap, &events))
    };
    let lateness = LATENESS_MS.to_string();
    let mut jobs = JobPair::start(
        &bootstrap,
        &[
            "--name",
            "window-job",
            "--input",
            "events",
            "--output",
            "window-counts",
            "--late-topic",
            "late-events",
            "--query",
            QUERY,
            "--allowed-lateness-ms",
            &lateness,
            "--checkpoint-interval-ms",
            "100",
            "--checkpoint-max-records",
            "500",
        ],
        logs.path(),
    );
    jobs.kill_again_and_again(&mut rng, KILLS, 3000);
    producing.join().unwrap();

    let output = committed::values(&bootstrap, "window-counts", 2, expected.len(), TIMEOUT);
    let late_values = committed::values(&bootstrap, "late-events", 1, late.len(), TIMEOUT);
    jobs.stop();
    let job_logs = || jobs.logs();

    let mut emitted: BTreeMap<(i64, String), Vec<WindowValues>> = BTreeMap::new();
    for value in &output {
        let row: serde_json::Value = serde_json::from_slice(value).unwrap();
        let key = (
            row["window"].as_i64().unwrap(),
            row["user"].as_str().unwrap().to_string(),
        );
        let values = (
            row["n"].as_i64().unwrap(),
            row["total"].as_i64().unwrap(),
            row["fingerprints"].as_i64().unwrap(),
        );
        emitted.entry(key).or_default().push(values);
    }
    let twice: Vec<_> = emitted
        .iter()
        .filter(|(_, v)| v.len() > 1)
        .take(5)
        .collect();
    assert!(
        twice.is_empty(),
        "seed {seed}: windows emitted more than once: {twice:?}\n{}",
        job_logs()
    );
    let wrong: Vec<_> = expected
        .iter()
        .filter(|(key, values)| emitted.get(*key).map(|v| v[0]) != Some(**values))
        .take(5)
        .map(|(key, values)| (key, values, emitted.get(key)))
        .collect();
    assert!(
        wrong.is_empty(),
        "seed {seed}: {} windows expected, {} emitted; wrong or missing (key, expected, got): {wrong:?}\n{}\nbroker:\n{}",
        expected.len(),
        emitted.len(),
        job_logs(),
        broker.log_tail()
    );
    let unexpected: Vec<_> = emitted
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .take(5)
        .collect();
    assert!(
        unexpected.is_empty(),
        "seed {seed}: windows the watermark never closed: {unexpected:?}"
    );

    let mut late_ids = Vec::new();
    for value in &late_values {
        let record: serde_json::Value = serde_json::from_slice(value).unwrap();
        late_ids.push(record["id"].as_u64().unwrap() as usize);
    }
    late_ids.sort_unstable();
    let expected_late: Vec<usize> = late.into_iter().collect();
    assert_eq!(
        late_ids, expected_late,
        "seed {seed}: the late topic holds exactly the late records once"
    );
}
