//! Nexmark queries as Weir jobs over `weir nexmark generate`'s events, each output equal to an
//! oracle computed from the generator's events directly: q0 (pass-through), q1 (currency
//! conversion), q2 (selection), q3 (local item suggestion: auctions joined with their sellers,
//! a table) and q12 (bids per bidder in 10-second windows; Nexmark's processing-time windows
//! over event time). The queries are the ones `BENCHMARKS.md` measures. And a job chained on
//! q12's output, windowing its results again by their record time (a window's results carry
//! its last millisecond).

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

#[path = "crash/broker.rs"]
#[allow(dead_code)]
mod broker;
#[path = "crash/committed.rs"]
mod committed;
#[path = "crash/jobs.rs"]
#[allow(dead_code)]
mod jobs;
#[path = "crash/rng.rs"]
#[allow(dead_code)]
mod rng;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use broker::BrokerProcess;
use jobs::JobPair;
use weir_connectors::generator::nexmark::{Event, NexmarkGenerator};

const EVENTS: u64 = 30_000;
const SEED: u64 = 5;
/// 2 ms of event time between events: a minute in all, so q12 closes windows.
const EVENT_INTERVAL_US: i64 = 2_000;
const TIMEOUT: Duration = Duration::from_secs(120);

/// The queries, by name: (input, extra arguments, SQL).
fn queries() -> Vec<(&'static str, &'static str, Vec<&'static str>, &'static str)> {
    vec![
        (
            "q0",
            "nexmark-bid",
            vec![],
            r#"SELECT auction, bidder, price, "dateTime", extra FROM "nexmark-bid""#,
        ),
        (
            "q1",
            "nexmark-bid",
            vec![],
            r#"SELECT auction, bidder, 0.908 * price AS price, "dateTime", extra FROM "nexmark-bid""#,
        ),
        (
            "q2",
            "nexmark-bid",
            vec![],
            r#"SELECT auction, price FROM "nexmark-bid" WHERE auction % 123 = 0"#,
        ),
        (
            "q3",
            "nexmark-auction",
            vec!["--table", "person=nexmark-person"],
            r#"SELECT p.name, p.city, p.state, a.id FROM "nexmark-auction" a JOIN person p
            ON a.seller = p._key
            WHERE a.category = 10 AND (p.state = 'OR' OR p.state = 'ID' OR p.state = 'CA')"#,
        ),
        (
            "q12",
            "nexmark-bid",
            vec![],
            r#"SELECT bidder, count(*) AS bid_count,
                   CAST(tumble("dateTime", INTERVAL '10' SECOND) AS BIGINT) AS starttime
            FROM "nexmark-bid" GROUP BY bidder, tumble("dateTime", INTERVAL '10' SECOND)"#,
        ),
        (
            // Chained on q12's output by record time: a window's results carry its last
            // millisecond as their timestamp, so they fall in the same window again.
            "q12-bidders",
            "q12-out",
            vec![],
            r#"SELECT count(*) AS bidders, sum(bid_count) AS bids,
                   CAST(tumble(_timestamp, INTERVAL '10' SECOND) AS BIGINT) AS starttime
            FROM "q12-out" GROUP BY tumble(_timestamp, INTERVAL '10' SECOND)"#,
        ),
    ]
}

type Rows = BTreeMap<String, usize>;

/// Each query's expected rows, as canonical JSON text (a multiset).
fn oracle() -> BTreeMap<&'static str, Rows> {
    let generator = NexmarkGenerator {
        event_interval_us: EVENT_INTERVAL_US,
        ..NexmarkGenerator::new(SEED)
    };
    let mut rows: BTreeMap<&str, Rows> = BTreeMap::new();
    let mut add = |query: &'static str, row: serde_json::Value| {
        *rows
            .entry(query)
            .or_default()
            .entry(row.to_string())
            .or_default() += 1;
    };
    let mut persons = BTreeMap::new();
    let mut windows: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    let mut last_bid_time = i64::MIN;
    for n in 0..EVENTS {
        match generator.event(n) {
            Event::Person(p) => {
                persons.insert(p.id, p);
            }
            Event::Auction(a) => {
                let seller = &persons[&a.seller];
                if a.category == 10 && ["OR", "ID", "CA"].contains(&seller.state.as_str()) {
                    add(
                        "q3",
                        serde_json::json!({"name": seller.name, "city": seller.city,
                        "state": seller.state, "id": a.id}),
                    );
                }
            }
            Event::Bid(b) => {
                add(
                    "q0",
                    serde_json::json!({"auction": b.auction, "bidder": b.bidder,
                    "price": b.price, "dateTime": b.date_time, "extra": b.extra}),
                );
                let price = b.price * 908;
                let price = format!("{}.{:03}", price / 1000, price % 1000);
                add(
                    "q1",
                    serde_json::json!({"auction": b.auction, "bidder": b.bidder,
                    "price": price, "dateTime": b.date_time, "extra": b.extra}),
                );
                if b.auction % 123 == 0 {
                    add(
                        "q2",
                        serde_json::json!({"auction": b.auction, "price": b.price}),
                    );
                }
                let start = b.date_time - b.date_time.rem_euclid(10_000);
                *windows.entry((b.bidder, start)).or_default() += 1;
                last_bid_time = last_bid_time.max(b.date_time);
            }
        }
    }
    // One bid partition: its watermark is the last bid's time; the windows it closed.
    let mut per_window: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for ((bidder, start), count) in windows {
        if start + 10_000 <= last_bid_time {
            add(
                "q12",
                serde_json::json!({"bidder": bidder, "bid_count": count,
                "starttime": start}),
            );
            let window = per_window.entry(start).or_default();
            window.0 += 1;
            window.1 += count;
        }
    }
    // q12's results close a window of the chained job once a later window's arrive: all but
    // the last.
    let last_window = per_window.keys().next_back().copied();
    for (start, (bidders, bids)) in per_window {
        if Some(start) != last_window {
            add(
                "q12-bidders",
                serde_json::json!({"bidders": bidders, "bids": bids, "starttime": start}),
            );
        }
    }
    rows
}

#[test]
fn nexmark_queries_match_the_oracle() {
    let expected = oracle();
    for (name, _, _, _) in queries() {
        let rows = expected.get(name).map_or(0, Rows::len);
        // (a minute of events makes six 10-s windows, the chained query's last one open)
        let least = if name == "q12-bidders" { 3 } else { 10 };
        assert!(
            rows > least,
            "{name} has {rows} rows: the input exercises every query"
        );
    }
    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    let generated = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["nexmark", "generate", "-b", &bootstrap, "--partitions", "1"])
        .args(["--events", &EVENTS.to_string(), "--seed", &SEED.to_string()])
        .args(["--event-interval-us", &EVENT_INTERVAL_US.to_string()])
        .output()
        .unwrap();
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    let logs = tempfile::tempdir().unwrap();
    let mut running = Vec::new();
    for (name, input, extra, query) in queries() {
        let output = format!("{name}-out");
        broker.create_topic(&output, 1);
        let mut arguments = vec!["--name", name, "--input", input, "--output", &output];
        arguments.extend(extra);
        arguments.extend(["--query", query, "--checkpoint-interval-ms", "200"]);
        let dir = logs.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        running.push((
            name,
            output.clone(),
            JobPair::start(&bootstrap, &arguments, &dir),
        ));
    }
    for (name, output, mut jobs) in running {
        let want: usize = expected[name].values().sum();
        let values = committed::values(&bootstrap, &output, 1, want, TIMEOUT);
        jobs.stop();
        let mut got = Rows::new();
        for value in values {
            let mut row: serde_json::Value = serde_json::from_slice(&value).unwrap();
            if name == "q1" {
                // A float product: compared to the thousandth (the exact one is the oracle's).
                let price = row["price"].as_f64().unwrap();
                row["price"] = format!("{price:.3}").into();
            }
            *got.entry(row.to_string()).or_default() += 1;
        }
        let missing: Vec<_> = expected[name]
            .keys()
            .filter(|r| !got.contains_key(*r))
            .take(3)
            .collect();
        let extra: Vec<_> = got
            .keys()
            .filter(|r| !expected[name].contains_key(*r))
            .take(3)
            .collect();
        assert!(
            got == expected[name],
            "{name}: {} rows expected, {} got; missing {missing:?}; unexpected {extra:?}\n{}",
            want,
            got.values().sum::<usize>(),
            jobs.logs()
        );
    }
}
