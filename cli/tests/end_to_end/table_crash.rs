//! A stream–table join (`weir job run --input orders --table customers=customers` with
//! `LEFT JOIN customers c ON o.customer = c._key`) as two processes sharing the orders'
//! partitions, killed with -9 again and again and restarted while orders and table updates
//! (new values, changed values, tombstones) are produced interleaved. The oracle applies the
//! documented rule to the generated input on its own: an order is joined with its customer's
//! latest update whose timestamp is not after the order's (none, or a tombstone: nulls). Every
//! update an order may see is acknowledged before that order is produced, which is what makes
//! the rule's answer the only right one. The job's read_committed output must be exactly one row
//! per order, with exactly the version the oracle picked.

use crate::support::{broker, committed, jobs, produce, rng};

use std::collections::{BTreeMap, BTreeSet};
use std::thread;
use std::time::Duration;

use broker::BrokerProcess;
use jobs::JobPair;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rng::Rng;

const ORDER_PARTITIONS: i32 = 3;
const CUSTOMER_PARTITIONS: i32 = 2;
const CUSTOMERS: u64 = 60;
/// Orders also name customers that never exist.
const NAMED_CUSTOMERS: u64 = 65;
const ROUNDS: i64 = 50;
const ROUND_MS: i64 = 10_000;
const ORDERS_PER_ROUND: i64 = 120;
const UPDATES_PER_ROUND: u64 = 15;
const START_MS: i64 = 1_700_000_000_000;
const TIMEOUT: Duration = Duration::from_secs(180);

/// A customer update: its time and version (None: a tombstone).
struct Update {
    customer: String,
    time_ms: i64,
    version: Option<i64>,
}

struct Order {
    id: i64,
    customer: String,
    time_ms: i64,
}

/// One round's table updates (produced and acknowledged first) and orders, both with times in
/// the round's span: every update an order may see comes from its round or an earlier one.
struct Round {
    updates: Vec<Update>,
    orders: Vec<Order>,
}

fn customer(rng: &mut Rng, of: u64) -> String {
    format!("c{}", rng.between(0, of))
}

/// Round 0 gives every customer a first value at a random time of its span (orders before it
/// find none); later rounds change random customers, one update in eight a tombstone. No two
/// updates of a customer share a timestamp.
fn generate(rng: &mut Rng) -> Vec<Round> {
    let mut version = 0;
    let mut taken = BTreeSet::new();
    let mut rounds = Vec::new();
    for round in 0..ROUNDS {
        let span = START_MS + round * ROUND_MS;
        let mut updates = Vec::new();
        let customers: Vec<String> = if round == 0 {
            (0..CUSTOMERS).map(|c| format!("c{c}")).collect()
        } else {
            (0..UPDATES_PER_ROUND)
                .map(|_| customer(rng, CUSTOMERS))
                .collect()
        };
        for name in customers {
            let time_ms = loop {
                let time = span + rng.between(0, ROUND_MS as u64) as i64;
                if taken.insert((name.clone(), time)) {
                    break time;
                }
            };
            version += 1;
            let tombstone = round > 0 && rng.between(0, 8) == 0;
            updates.push(Update {
                customer: name,
                time_ms,
                version: (!tombstone).then_some(version),
            });
        }
        let orders = (0..ORDERS_PER_ROUND)
            .map(|i| Order {
                id: round * ORDERS_PER_ROUND + i,
                customer: customer(rng, NAMED_CUSTOMERS),
                time_ms: span + rng.between(0, ROUND_MS as u64) as i64,
            })
            .collect();
        rounds.push(Round { updates, orders });
    }
    rounds
}

/// Each order's id → the version it must be joined with (None: no value at its time).
fn oracle(rounds: &[Round]) -> BTreeMap<i64, Option<i64>> {
    let mut history: BTreeMap<&str, BTreeMap<i64, Option<i64>>> = BTreeMap::new();
    for update in rounds.iter().flat_map(|r| &r.updates) {
        history
            .entry(&update.customer)
            .or_default()
            .insert(update.time_ms, update.version);
    }
    let mut expected = BTreeMap::new();
    for order in rounds.iter().flat_map(|r| &r.orders) {
        let version = history
            .get(order.customer.as_str())
            .and_then(|versions| versions.range(..=order.time_ms).next_back())
            .and_then(|(_, version)| *version);
        expected.insert(order.id, version);
    }
    expected
}

fn produce_updates(producer: &ThreadedProducer<DefaultProducerContext>, updates: &[Update]) {
    for update in updates {
        let partition = (update.customer[1..].parse::<i32>().unwrap()) % CUSTOMER_PARTITIONS;
        let value = update
            .version
            .map(|v| format!(r#"{{"name": "name-{v}", "version": {v}}}"#));
        let mut record = BaseRecord::<str, String>::to("customers")
            .key(update.customer.as_str())
            .partition(partition)
            .timestamp(update.time_ms);
        if let Some(value) = &value {
            record = record.payload(value);
        }
        producer.send(record).map_err(|(e, _)| e).unwrap();
    }
    producer.flush(Duration::from_secs(60)).unwrap();
}

fn produce_orders(producer: &ThreadedProducer<DefaultProducerContext>, orders: &[Order]) {
    for order in orders {
        let value = format!(
            r#"{{"id": {}, "customer": "{}"}}"#,
            order.id, order.customer
        );
        let record = BaseRecord::<(), _>::to("orders")
            .partition((order.id % ORDER_PARTITIONS as i64) as i32)
            .timestamp(order.time_ms)
            .payload(&value);
        producer.send(record).map_err(|(e, _)| e).unwrap();
    }
}

const QUERY: &str = "SELECT o.id, c.version FROM orders o \
                     LEFT JOIN customers c ON o.customer = c._key";

#[test]
fn a_table_join_killed_9_again_and_again_joins_each_order_once_with_its_version() {
    let _slot = crate::support::test_slot();
    let seed = Rng::seed_from_clock();
    eprintln!("table join crash test seed {seed}");
    let mut rng = Rng::new(seed);
    let rounds = generate(&mut rng);
    let expected = oracle(&rounds);
    let found = expected.values().filter(|v| v.is_some()).count();
    let changed = expected
        .values()
        .filter(|v| v.is_some_and(|v| v > CUSTOMERS as i64))
        .count();
    let missing = expected.len() - found;
    assert!(
        found > 4000 && changed > 2000 && missing > 300,
        "the input exercises first values, changed values ({changed}) and no value ({missing})"
    );

    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("orders", ORDER_PARTITIONS as u32);
    broker.create_topic("customers", CUSTOMER_PARTITIONS as u32);
    broker.create_topic("enriched", 2);
    let logs = tempfile::tempdir().unwrap();
    // The table has values before the job starts (its columns are inferred from them).
    let first = produce::idempotent_producer(&bootstrap);
    produce_updates(&first, &rounds[0].updates);
    let producing = {
        let bootstrap = bootstrap.clone();
        thread::spawn(move || {
            let producer = produce::idempotent_producer(&bootstrap);
            for (i, round) in rounds.iter().enumerate() {
                if i > 0 {
                    produce_updates(&producer, &round.updates);
                }
                produce_orders(&producer, &round.orders);
                // Spread the input over several seconds, so that kills land while it flows.
                thread::sleep(Duration::from_millis(200));
            }
            producer.flush(Duration::from_secs(60)).unwrap();
        })
    };
    let mut jobs = JobPair::start(
        &bootstrap,
        &[
            "--name",
            "enrich",
            "--input",
            "orders",
            "--table",
            "customers=customers",
            "--output",
            "enriched",
            "--checkpoint-interval-ms",
            "100",
            "--checkpoint-max-records",
            "300",
            "--query",
            QUERY,
        ],
        logs.path(),
    );
    jobs.kill_again_and_again(&mut rng, 6, 2500);
    producing.join().unwrap();

    let output = committed::values(&bootstrap, "enriched", 2, expected.len(), TIMEOUT);
    jobs.stop();
    let mut joined: BTreeMap<i64, Vec<Option<i64>>> = BTreeMap::new();
    for value in &output {
        let row: serde_json::Value = serde_json::from_slice(value).unwrap();
        joined
            .entry(row["id"].as_i64().unwrap())
            .or_default()
            .push(row["version"].as_i64());
    }
    let wrong: Vec<_> = expected
        .iter()
        .filter(|(id, version)| joined.get(*id) != Some(&vec![**version]))
        .take(5)
        .map(|(id, version)| (id, version, joined.get(id)))
        .collect();
    let unexpected: Vec<_> = joined
        .keys()
        .filter(|id| !expected.contains_key(*id))
        .take(5)
        .collect();
    assert!(
        wrong.is_empty() && unexpected.is_empty(),
        "seed {seed}: {} orders, {} rows joined; (order, expected version, got): {wrong:?}; \
         unexpected orders: {unexpected:?}\n{}\nbroker:\n{}",
        expected.len(),
        output.len(),
        jobs.logs(),
        broker.log_tail()
    );
}
