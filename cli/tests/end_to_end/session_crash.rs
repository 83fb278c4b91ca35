//! A session window job (`weir job run` with `GROUP BY session(…)`) as two processes sharing the
//! input's partitions, killed with -9 again and again and restarted. The oracle applies the
//! documented rules to the generated input on its own: a record is late when its event time is
//! behind its partition's largest so far minus the allowed lateness; the other records of a user
//! form sessions that a gap of silence splits; a session is emitted once the final watermark
//! reaches its end (last record + gap). The job's read_committed output must hold each of those
//! sessions exactly once with exactly their count, sum and fingerprint sum, and the late topic
//! exactly the late records (`crash/windowed.rs` runs and checks it).

use crate::support::{rng, windowed};

use std::collections::{BTreeMap, BTreeSet};

use rng::Rng;
use windowed::{Event, Expected, Windows, PARTITIONS};

const PER_PARTITION: usize = 4000;
const GAP_MS: i64 = 1_000;
const LATENESS_MS: i64 = 2_000;
const START_MS: i64 = 1_700_000_000_000;
const USERS: usize = 30;

/// Per partition: event time advancing 60 ms a record with a 3 s pause every 500 records, 30 % of
/// records up to 1.5 s out of order (within the lateness), 3 % 2.1–2.9 s behind (late, but less
/// than lateness + gap: a rule by window end would take them) and 2 % 25 s behind (too late).
/// Thirty users at random: a user's records are about 450 ms apart across the partitions, so
/// many sessions split by themselves and many merge records from several partitions.
fn generate(rng: &mut Rng) -> Vec<Event> {
    let mut events = Vec::new();
    for index in 0..PER_PARTITION {
        for partition in 0..PARTITIONS {
            let pauses = (index / 500) as i64 * 3_000;
            let base = START_MS + index as i64 * 60 + pauses + partition as i64 * 7;
            let time_ms = match rng.between(0, 100) {
                0..=1 => base - 25_000,
                // Behind the lateness but within it plus the gap: late by the record's time,
                // though a session it would extend may still be open.
                2..=4 => base - rng.between(2_100, 2_900) as i64,
                5..=34 => base - rng.between(0, 1500) as i64,
                _ => base,
            };
            events.push(Event {
                id: events.len(),
                partition,
                time_ms,
                user: format!("u{}", rng.between(0, USERS as u64)),
                amount: rng.between(1, 100) as i64,
                fingerprint: rng.between(0, 1 << 31) as i64,
            });
        }
    }
    events
}

fn oracle(events: &[Event]) -> Expected {
    let mut late = BTreeSet::new();
    let mut max_times = BTreeMap::new();
    let mut accepted: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
    for event in events {
        let watermark = max_times.get(&event.partition).map(|max| max - LATENESS_MS);
        if watermark.is_some_and(|w| event.time_ms < w) {
            late.insert(event.id);
        } else {
            accepted.entry(&event.user).or_default().push(event);
        }
        let max = max_times.entry(event.partition).or_insert(event.time_ms);
        *max = (*max).max(event.time_ms);
    }
    let watermark = max_times.values().min().unwrap() - LATENESS_MS;
    let mut windows = Windows::new();
    for (user, mut records) in accepted {
        records.sort_by_key(|e| e.time_ms);
        let mut sessions: Vec<(i64, i64, (i64, i64, i64))> = Vec::new();
        for event in records {
            match sessions.last_mut() {
                Some((_, last, values)) if event.time_ms < *last + GAP_MS => {
                    *last = event.time_ms;
                    windowed::add(values, event);
                }
                _ => {
                    let mut values = (0, 0, 0);
                    windowed::add(&mut values, event);
                    sessions.push((event.time_ms, event.time_ms, values));
                }
            }
        }
        for (start, last, values) in sessions {
            if last + GAP_MS <= watermark {
                windows.insert((start, user.to_string()), values);
            }
        }
    }
    Expected { late, windows }
}

const QUERY: &str = "SELECT CAST(session(_timestamp, INTERVAL '1' SECOND) AS BIGINT) AS window, \
                     user, count(*) AS n, sum(amount) AS total, sum(fingerprint) AS fingerprints \
                     FROM events \
                     GROUP BY session(_timestamp, INTERVAL '1' SECOND), user";

#[test]
fn a_session_job_killed_9_again_and_again_emits_each_session_once_with_exact_counts() {
    let _slot = crate::support::test_slot();
    let seed = Rng::seed_from_clock();
    eprintln!("session crash test seed {seed}");
    let mut rng = Rng::new(seed);
    let events = generate(&mut rng);
    let expected = oracle(&events);
    let merged = expected.windows.values().filter(|v| v.0 > 3).count();
    assert!(
        !expected.late.is_empty() && expected.windows.len() > 500 && merged > 100,
        "the input exercises lateness, gaps and merging: {} sessions, {merged} of more than 3",
        expected.windows.len()
    );
    let lateness = LATENESS_MS.to_string();
    windowed::run_and_check(
        seed,
        &mut rng,
        events,
        &expected,
        &[
            "--name",
            "session-job",
            "--query",
            QUERY,
            "--allowed-lateness-ms",
            &lateness,
        ],
    );
}
