//! An interval join between two streams (`weir job run --input orders --input payments` with
//! `LEFT JOIN … ON o.id = p.order_id AND p._timestamp BETWEEN o._timestamp AND o._timestamp +
//! INTERVAL '10' SECOND`) as two processes sharing both inputs' partitions, killed with -9
//! again and again and restarted — with the orders in three partitions (so in three
//! repartition partitions, which two copies split: each sends its rows through the topic, and
//! one left alone merges them directly), and in one (so one copy owns the repartition partition
//! and merges its rows directly while the other sends its rows through the topic). The oracle applies the documented rules to the generated
//! input on its own: a row is late when its time is behind its partition's largest so far minus
//! the allowed lateness; every pair of rows that are not late with equal keys and times within
//! the bound is joined; an order with no such payment is emitted alone once the final watermark
//! passed its time plus the bound. The job's read_committed output must be exactly that
//! multiset, and the late topic exactly the late rows of both inputs.

use crate::support::{broker, committed, jobs, produce, rng};

use std::collections::BTreeMap;
use std::thread;
use std::time::Duration;

use broker::BrokerProcess;
use jobs::JobPair;
use rdkafka::producer::{BaseRecord, Producer};
use rng::Rng;

/// The inputs' partition counts.
#[derive(Clone, Copy)]
struct Layout {
    orders: i32,
    payments: i32,
}
const ORDERS: i64 = 6000;
const BOUND_MS: i64 = 10_000;
const LATENESS_MS: i64 = 2_000;
const START_MS: i64 = 1_700_000_000_000;
const TIMEOUT: Duration = Duration::from_secs(180);

/// A row of either input: (topic, partition, time, JSON value, id for the oracle).
struct Row {
    topic: &'static str,
    partition: i32,
    time_ms: i64,
    value: String,
    /// ("o", order id) or ("p", payment id).
    id: (&'static str, i64),
    /// Payments: the order they pay.
    order: i64,
}

/// Orders 30 ms apart per partition; most paid once 0–12 s later (past 10 s: too late for the
/// bound), some twice, some never; payments for orders that do not exist. Times out of order
/// by up to 1.5 s, 2 % of rows 25 s behind (late).
fn generate(rng: &mut Rng, layout: Layout) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut payment = 0;
    let skew = |rng: &mut Rng, time: i64| match rng.between(0, 100) {
        0..=1 => time - 25_000,
        2..=31 => time - rng.between(0, 1500) as i64,
        _ => time,
    };
    let mut payments = Vec::new();
    for id in 0..ORDERS {
        let time = START_MS + id * 10;
        rows.push(Row {
            topic: "orders",
            partition: (id % layout.orders as i64) as i32,
            time_ms: skew(rng, time),
            value: format!(r#"{{"id": {id}, "amount": {}}}"#, rng.between(1, 500)),
            id: ("o", id),
            order: id,
        });
        let paid = match rng.between(0, 10) {
            0 => 0,
            1 => 2,
            _ => 1,
        };
        for _ in 0..paid {
            payments.push((time + rng.between(0, 12_000) as i64, id));
        }
        if rng.between(0, 20) == 0 {
            payments.push((time + 500, ORDERS + id));
        }
    }
    // Payments in time order (then skewed), each partition's in offset order.
    payments.sort();
    for (time, order) in payments {
        payment += 1;
        rows.push(Row {
            topic: "payments",
            partition: rng.between(0, layout.payments as u64) as i32,
            time_ms: skew(rng, time),
            value: format!(r#"{{"pid": {payment}, "order_id": {order}}}"#),
            id: ("p", payment),
            order,
        });
    }
    rows
}

type Output = BTreeMap<(i64, Option<i64>), usize>;

/// The late rows, and the joined output (order id, payment id) the final watermark allows.
fn oracle(rows: &[Row]) -> (Vec<(&'static str, i64)>, Output) {
    let mut late = Vec::new();
    let mut max_times: BTreeMap<(&str, i32), i64> = BTreeMap::new();
    let (mut orders, mut payments) = (Vec::new(), Vec::new());
    // Rows in production order are each partition's offset order.
    for row in rows {
        let source = (row.topic, row.partition);
        let watermark = max_times.get(&source).map(|max| max - LATENESS_MS);
        if watermark.is_some_and(|w| row.time_ms < w) {
            late.push(row.id);
        } else if row.topic == "orders" {
            orders.push(row);
        } else {
            payments.push(row);
        }
        let max = max_times.entry(source).or_insert(row.time_ms);
        *max = (*max).max(row.time_ms);
    }
    let watermark = max_times.values().min().unwrap() - LATENESS_MS;
    let mut by_order: BTreeMap<i64, Vec<&Row>> = BTreeMap::new();
    for payment in payments {
        by_order.entry(payment.order).or_default().push(payment);
    }
    let mut output = Output::new();
    for order in orders {
        let mut matched = false;
        for payment in by_order.get(&order.order).into_iter().flatten() {
            let distance = payment.time_ms - order.time_ms;
            if (0..=BOUND_MS).contains(&distance) {
                matched = true;
                *output.entry((order.order, Some(payment.id.1))).or_default() += 1;
            }
        }
        if !matched && order.time_ms + BOUND_MS < watermark {
            *output.entry((order.order, None)).or_default() += 1;
        }
    }
    late.sort_unstable();
    (late, output)
}

fn produce_rows(bootstrap: &str, rows: &[Row]) {
    let producer = produce::idempotent_producer(bootstrap);
    for (i, row) in rows.iter().enumerate() {
        let record = BaseRecord::<(), _>::to(row.topic)
            .partition(row.partition)
            .timestamp(row.time_ms)
            .payload(&row.value);
        producer.send(record).map_err(|(e, _)| e).unwrap();
        if i % 500 == 0 {
            // Spread the input over a few seconds, so that kills land while it flows.
            thread::sleep(Duration::from_millis(150));
        }
    }
    producer.flush(Duration::from_secs(60)).unwrap();
}

const QUERY: &str = "SELECT o.id AS order_id, p.pid AS payment FROM orders o LEFT JOIN payments p \
                     ON o.id = p.order_id \
                     AND p._timestamp BETWEEN o._timestamp AND o._timestamp + INTERVAL '10' SECOND";

#[test]
fn an_interval_join_killed_9_again_and_again_joins_each_pair_once() {
    let _slot = crate::support::test_slot();
    killed_again_and_again(Layout {
        orders: 3,
        payments: 2,
    });
}

#[test]
fn an_interval_join_merging_directly_beside_a_copy_using_the_topic_joins_each_pair_once() {
    let _slot = crate::support::test_slot();
    killed_again_and_again(Layout {
        orders: 1,
        payments: 3,
    });
}

fn killed_again_and_again(layout: Layout) {
    let seed = Rng::seed_from_clock();
    eprintln!("interval join crash test seed {seed}");
    let mut rng = Rng::new(seed);
    let rows = generate(&mut rng, layout);
    let (late, expected) = oracle(&rows);
    let unmatched = expected.keys().filter(|(_, p)| p.is_none()).count();
    let matched: usize = expected.values().sum::<usize>() - unmatched;
    assert!(
        late.len() > 100 && unmatched > 500 && matched > 4000,
        "the input exercises lateness ({}), matches ({matched}) and unmatched orders ({unmatched})",
        late.len()
    );

    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("orders", layout.orders as u32);
    broker.create_topic("payments", layout.payments as u32);
    broker.create_topic("joined", 2);
    broker.create_topic("late", 1);
    let logs = tempfile::tempdir().unwrap();
    let producing = {
        let bootstrap = bootstrap.clone();
        thread::spawn(move || produce_rows(&bootstrap, &rows))
    };
    let lateness = LATENESS_MS.to_string();
    let mut jobs = JobPair::start(
        &bootstrap,
        &[
            "--name",
            "pay-join",
            "--input",
            "orders",
            "--input",
            "payments",
            "--output",
            "joined",
            "--late-topic",
            "late",
            "--allowed-lateness-ms",
            &lateness,
            "--checkpoint-interval-ms",
            "100",
            "--checkpoint-max-records",
            "500",
            "--query",
            QUERY,
        ],
        logs.path(),
    );
    jobs.kill_again_and_again(&mut rng, 6, 3000);
    producing.join().unwrap();

    let total: usize = expected.values().sum();
    let output = committed::values(&bootstrap, "joined", 2, total, TIMEOUT);
    let late_values = committed::values(&bootstrap, "late", 1, late.len(), TIMEOUT);
    jobs.stop();
    let mut joined = Output::new();
    for value in &output {
        let row: serde_json::Value = serde_json::from_slice(value).unwrap();
        let key = (row["order_id"].as_i64().unwrap(), row["payment"].as_i64());
        *joined.entry(key).or_default() += 1;
    }
    let wrong: Vec<_> = expected
        .iter()
        .filter(|(key, count)| joined.get(*key) != Some(*count))
        .take(5)
        .map(|(key, count)| (key, count, joined.get(key)))
        .collect();
    let unexpected: Vec<_> = joined
        .iter()
        .filter(|(key, _)| !expected.contains_key(*key))
        .take(5)
        .collect();
    assert!(
        wrong.is_empty() && unexpected.is_empty(),
        "seed {seed}: {total} rows expected, {} joined; (key, expected, got): {wrong:?}; \
         unexpected: {unexpected:?}\n{}\nbroker:\n{}",
        output.len(),
        jobs.logs(),
        broker.log_tail()
    );
    let mut late_ids: Vec<(&str, i64)> = late_values
        .iter()
        .map(|value| {
            let row: serde_json::Value = serde_json::from_slice(value).unwrap();
            match row["pid"].as_i64() {
                Some(payment) => ("p", payment),
                None => ("o", row["id"].as_i64().unwrap()),
            }
        })
        .collect();
    late_ids.sort_unstable();
    assert_eq!(
        late_ids, late,
        "seed {seed}: the late topic holds exactly the late rows once"
    );
}
