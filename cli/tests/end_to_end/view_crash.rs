//! An updating aggregate (`weir job run` with a `GROUP BY` and no window: a materialized view)
//! as two processes sharing the input's partitions, killed with -9 again and again and
//! restarted. The oracle counts the generated input per user on its own: the job's
//! read_committed output, read as a table (the latest record per key), must hold exactly each
//! user's count, sum and fingerprint sum while HAVING keeps the user, and a tombstone for each
//! user HAVING dropped; and each user's successive upserts must count strictly upwards (a
//! checkpoint counted twice, or an update lost and replayed, would break one or the other).

use crate::support::{committed, rng, windowed};

use std::collections::BTreeMap;

use committed::Record;
use rng::Rng;
use windowed::{Event, WindowValues, PARTITIONS, TIMEOUT};

const PER_PARTITION: usize = 4000;
const USERS: u64 = 30;
/// Users with this many events or more are left out (about half of them: 16,000 events among
/// 30 users).
const HAVING_BELOW: i64 = 534;

fn generate(rng: &mut Rng) -> Vec<Event> {
    let mut events = Vec::new();
    for _ in 0..PER_PARTITION {
        for partition in 0..PARTITIONS {
            events.push(Event {
                id: events.len(),
                partition,
                // Event times in no order at all: an updating aggregate does not look at them.
                time_ms: 1_700_000_000_000 + rng.between(0, 10_000_000) as i64,
                user: format!("u{}", rng.between(0, USERS)),
                amount: rng.between(1, 100) as i64,
                fingerprint: rng.between(0, 1 << 31) as i64,
            });
        }
    }
    events
}

/// Each user's final values: Some while HAVING keeps the user, None once it dropped them.
fn oracle(events: &[Event]) -> BTreeMap<String, Option<WindowValues>> {
    let mut users: BTreeMap<String, WindowValues> = BTreeMap::new();
    for event in events {
        windowed::add(users.entry(event.user.clone()).or_default(), event);
    }
    users
        .into_iter()
        .map(|(user, values)| (user, (values.0 < HAVING_BELOW).then_some(values)))
        .collect()
}

/// The latest record per key, and keys whose upserts did not count strictly upwards.
fn view(records: &[Record]) -> (BTreeMap<String, Option<WindowValues>>, Vec<String>) {
    let mut latest = BTreeMap::new();
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    let mut not_increasing = Vec::new();
    for (key, value) in records {
        let user = String::from_utf8(key.clone().expect("keyed by user")).unwrap();
        let values = value.as_ref().map(|value| {
            let row: serde_json::Value = serde_json::from_slice(value).unwrap();
            assert_eq!(
                row["user"].as_str(),
                Some(user.as_str()),
                "key and row agree"
            );
            (
                row["n"].as_i64().unwrap(),
                row["total"].as_i64().unwrap(),
                row["fingerprints"].as_i64().unwrap(),
            )
        });
        if let Some((n, _, _)) = values {
            let last = counts.insert(user.clone(), n);
            if last.is_some_and(|last| last >= n) {
                not_increasing.push(user.clone());
            }
        }
        latest.insert(user, values);
    }
    (latest, not_increasing)
}

#[test]
fn a_view_job_killed_9_again_and_again_ends_with_exactly_the_counts() {
    let _slot = crate::support::test_slot();
    let seed = Rng::seed_from_clock();
    eprintln!("view crash test seed {seed}");
    let mut rng = Rng::new(seed);
    let events = generate(&mut rng);
    let expected = oracle(&events);
    let dropped = expected.values().filter(|v| v.is_none()).count();
    assert!(
        expected.len() == USERS as usize && dropped > 3 && dropped < 27,
        "HAVING keeps some users and drops others: {dropped} of {} dropped",
        expected.len()
    );
    let query = format!(
        "SELECT user, count(*) AS n, sum(amount) AS total, sum(fingerprint) AS fingerprints \
         FROM events GROUP BY user HAVING count(*) < {HAVING_BELOW}"
    );
    let run = windowed::run_killing(&mut rng, events, &["--name", "view-job", "--query", &query]);
    let records = committed::records_until(&run.bootstrap, "window-counts", 2, TIMEOUT, |r| {
        view(r).0 == expected
    });
    let (latest, not_increasing) = view(&records);
    let logs = run.jobs.logs();
    let wrong: Vec<_> = expected
        .iter()
        .filter(|(user, values)| latest.get(*user) != Some(values))
        .take(5)
        .map(|(user, values)| (user, values, latest.get(user)))
        .collect();
    assert!(
        wrong.is_empty() && latest.len() == expected.len(),
        "seed {seed}: {} users in the view, {} expected; (user, expected, got): {wrong:?}\n{logs}\nbroker:\n{}",
        latest.len(),
        expected.len(),
        run.broker.log_tail()
    );
    assert!(
        not_increasing.is_empty(),
        "seed {seed}: counts that did not go up: {not_increasing:?}"
    );
}
