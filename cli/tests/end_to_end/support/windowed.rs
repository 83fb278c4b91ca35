//! The shared half of the windowed jobs' crash tests: the events (each with a random 31-bit
//! fingerprint, summed per window, so a lost record and a duplicated one in the same window
//! cannot cancel out in its count — they would only if their fingerprints were equal, a chance of
//! about 2^-31 per pair), a job pair killed with -9 again and again while they are produced, and
//! the check of its read_committed output against the windows an oracle expects: each exactly
//! once with exactly its values, nothing else, and exactly the late records in the late topic.

use std::collections::{BTreeMap, BTreeSet};
use std::thread;
use std::time::Duration;

use rdkafka::producer::{BaseRecord, Producer};

use crate::support::broker::BrokerProcess;
use crate::support::committed;
use crate::support::jobs::JobPair;
use crate::support::produce;
use crate::support::rng::Rng;

pub(crate) const PARTITIONS: i32 = 4;
const KILLS: usize = 6;
pub(crate) const TIMEOUT: Duration = Duration::from_secs(180);

pub(crate) struct Event {
    pub(crate) id: usize,
    pub(crate) partition: i32,
    pub(crate) time_ms: i64,
    pub(crate) user: String,
    pub(crate) amount: i64,
    pub(crate) fingerprint: i64,
}

/// A window's count, sum of amounts and sum of fingerprints.
pub(crate) type WindowValues = (i64, i64, i64);
/// (window start, user) → its values.
pub(crate) type Windows = BTreeMap<(i64, String), WindowValues>;

pub(crate) fn add(values: &mut WindowValues, event: &Event) {
    values.0 += 1;
    values.1 += event.amount;
    values.2 += event.fingerprint;
}

/// What the oracle expects of a run.
pub(crate) struct Expected {
    pub(crate) late: BTreeSet<usize>,
    pub(crate) windows: Windows,
}

/// A broker and two copies of a job, killed -9 again and again while the events were produced.
pub(crate) struct Run {
    pub(crate) broker: BrokerProcess,
    pub(crate) bootstrap: String,
    pub(crate) jobs: JobPair,
    _logs: tempfile::TempDir,
}

/// Produces `events` to `events` (4 partitions) while two copies of `weir job run
/// <job_arguments>` (reading `events`, writing `window-counts` of 2 partitions, late records to
/// `late-events`) are killed again and again; returns once the events are all produced.
pub(crate) fn run_killing(rng: &mut Rng, events: Vec<Event>, job_arguments: &[&str]) -> Run {
    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("events", PARTITIONS as u32);
    broker.create_topic("window-counts", 2);
    broker.create_topic("late-events", 1);
    let logs = tempfile::tempdir().unwrap();
    let producing = {
        let bootstrap = bootstrap.clone();
        thread::spawn(move || produce_events(&bootstrap, &events))
    };
    let mut arguments = vec![
        "--input",
        "events",
        "--output",
        "window-counts",
        "--late-topic",
        "late-events",
        "--checkpoint-interval-ms",
        "100",
        "--checkpoint-max-records",
        "500",
    ];
    arguments.extend_from_slice(job_arguments);
    let mut jobs = JobPair::start(&bootstrap, &arguments, logs.path());
    jobs.kill_again_and_again(rng, KILLS, 3000);
    producing.join().unwrap();
    Run {
        broker,
        bootstrap,
        jobs,
        _logs: logs,
    }
}

/// [`run_killing`], then checks the output: rows {window: start ms, user, n, total,
/// fingerprints}, each expected window exactly once, and exactly the late records. The broker
/// is handed back (the jobs stopped) for further checks.
pub(crate) fn run_and_check(
    seed: u64,
    rng: &mut Rng,
    events: Vec<Event>,
    expected: &Expected,
    job_arguments: &[&str],
) -> BrokerProcess {
    let Run {
        broker,
        bootstrap,
        mut jobs,
        _logs,
    } = run_killing(rng, events, job_arguments);
    let windows = &expected.windows;
    let output = committed::values(&bootstrap, "window-counts", 2, windows.len(), TIMEOUT);
    let late_values = committed::values(&bootstrap, "late-events", 1, expected.late.len(), TIMEOUT);
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
    let wrong: Vec<_> = windows
        .iter()
        .filter(|(key, values)| emitted.get(*key).map(|v| v[0]) != Some(**values))
        .take(5)
        .map(|(key, values)| (key, values, emitted.get(key)))
        .collect();
    assert!(
        wrong.is_empty(),
        "seed {seed}: {} windows expected, {} emitted; wrong or missing (key, expected, got): {wrong:?}\n{}\nbroker:\n{}",
        windows.len(),
        emitted.len(),
        job_logs(),
        broker.log_tail()
    );
    let unexpected: Vec<_> = emitted
        .keys()
        .filter(|k| !windows.contains_key(*k))
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
    let expected_late: Vec<usize> = expected.late.iter().copied().collect();
    assert_eq!(
        late_ids, expected_late,
        "seed {seed}: the late topic holds exactly the late records once"
    );
    broker
}

fn produce_events(bootstrap: &str, events: &[Event]) {
    let producer = produce::idempotent_producer(bootstrap);
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
