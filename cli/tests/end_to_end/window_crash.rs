//! A windowed count job (`weir job run` with `GROUP BY tumble(…)`) as two processes sharing the
//! input's partitions, killed with -9 again and again and restarted. The oracle computes from
//! the generated input, partition by partition, which records are too late and the exact count
//! and sum of every window the final watermark closes: the job's read_committed output must hold
//! each of those windows exactly once with exactly those values, and the late topic exactly the
//! late records (`crash/windowed.rs` runs and checks it).

use crate::support::{broker, rng, windowed};

use std::collections::BTreeMap;

use rng::Rng;
use windowed::{Event, Expected, Windows, PARTITIONS};

const PER_PARTITION: usize = 4000;
const WINDOW_MS: i64 = 10_000;
const LATENESS_MS: i64 = 2_000;
const START_MS: i64 = 1_700_000_000_000;
const USERS: [&str; 5] = ["ann", "bob", "cid", "dan", "eve"];

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
                user: USERS[rng.between(0, USERS.len() as u64) as usize].to_string(),
                amount: rng.between(1, 100) as i64,
                fingerprint: rng.between(0, 1 << 31) as i64,
            });
        }
    }
    events
}

/// The late ids, and every window the final watermark closes — the job's rules applied to each
/// partition in order.
fn oracle(events: &[Event]) -> Expected {
    let mut late = std::collections::BTreeSet::new();
    let mut windows = Windows::new();
    let mut max_times = BTreeMap::new();
    for event in events {
        let start = event.time_ms - event.time_ms.rem_euclid(WINDOW_MS);
        let watermark = max_times.get(&event.partition).map(|max| max - LATENESS_MS);
        if watermark.is_some_and(|w| start + WINDOW_MS <= w) {
            late.insert(event.id);
        } else {
            windowed::add(
                windows.entry((start, event.user.clone())).or_default(),
                event,
            );
        }
        let max = max_times.entry(event.partition).or_insert(event.time_ms);
        *max = (*max).max(event.time_ms);
    }
    let watermark = max_times.values().min().unwrap() - LATENESS_MS;
    windows.retain(|(start, _), _| start + WINDOW_MS <= watermark);
    Expected { late, windows }
}

const QUERY: &str = "SELECT CAST(tumble(_timestamp, INTERVAL '10 seconds') AS BIGINT) AS window, \
                     user, count(*) AS n, sum(amount) AS total, sum(fingerprint) AS fingerprints \
                     FROM events \
                     GROUP BY tumble(_timestamp, INTERVAL '10 seconds'), user";

#[test]
fn a_windowed_job_killed_9_again_and_again_emits_each_window_once_with_exact_counts() {
    let _slot = crate::support::test_slot();
    killed_again_and_again("window-job", QUERY, &[]);
}

/// The same windows computed by a stage: the job's query is a `WITH` whose CTE is the windowed
/// count and whose final `SELECT` reads it — two stages in each of the two processes, the
/// windows handed from one to the other as chunks of rows through the stage's results topic,
/// every stage exactly once through the kills.
#[test]
fn a_job_in_stages_killed_9_again_and_again_hands_each_window_on_once() {
    let _slot = crate::support::test_slot();
    let query = format!(
        "WITH per_user AS ({QUERY}) \
         SELECT \"window\", user, n, total, fingerprints FROM per_user WHERE n > 0"
    );
    // Purged often: what the final SELECT committed past is deleted while the copies are
    // killed, and each window still arrives once.
    let broker = killed_again_and_again("staged-job", &query, &["--purge-interval-ms", "200"]);
    let results = "weir-staged-job-per_user-results";
    let purged: i64 = (0..2)
        .map(|partition| log_start_offset(&broker.bootstrap(), results, partition))
        .sum();
    assert!(purged > 0, "{results}: nothing was purged");
}

/// Where `topic`'s `partition` begins (its records before it deleted).
fn log_start_offset(bootstrap: &str, topic: &str, partition: i32) -> i64 {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let (low, _) = consumer
        .fetch_watermarks(topic, partition, std::time::Duration::from_secs(10))
        .unwrap();
    low
}

/// Job `name` running `query` over generated events, its copies killed -9 again and again; its
/// output checked against the oracle.
fn killed_again_and_again(name: &str, query: &str, more: &[&str]) -> broker::BrokerProcess {
    let seed = Rng::seed_from_clock();
    eprintln!("{name} crash test seed {seed}");
    let mut rng = Rng::new(seed);
    let events = generate(&mut rng);
    let expected = oracle(&events);
    assert!(
        !expected.late.is_empty() && expected.windows.len() > 50,
        "the input exercises lateness and windows"
    );
    let lateness = LATENESS_MS.to_string();
    let mut arguments = vec![
        "--name",
        name,
        "--query",
        query,
        "--allowed-lateness-ms",
        &lateness,
    ];
    arguments.extend_from_slice(more);
    windowed::run_and_check(seed, &mut rng, events, &expected, &arguments)
}
