//! A stream–table join job against Weir's broker (in-process), through rdkafka only: orders
//! joined with a customers table whose updates and deletes are interleaved with the orders, two
//! copies of the job, one stopped and restarted mid-stream (it reads the table again from the
//! beginning). The read_committed output must equal, record for record, what an oracle computes
//! from the produced data: each order with its customer's value as of the order's timestamp.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

use super::exactly_once_tests::{create_topics, read_committed, spawn, start_broker};
use crate::job::JobConfig;

const ORDERS: usize = 900;
const CUSTOMERS: usize = 20;
const BASE_MS: i64 = 1_700_000_000_000;
const TIMEOUT: Duration = Duration::from_secs(60);

/// What is produced, in order: `(topic, key, value (None: tombstone), timestamp)`.
type Event = (&'static str, String, Option<String>, i64);

/// Every customer but the last exists from before the first order; every 30th order a customer
/// is renamed, every 90th (offset by 45) one is deleted — each just before the order that follows.
fn events() -> Vec<Event> {
    let mut events = Vec::new();
    for c in 0..CUSTOMERS - 1 {
        let value = format!(r#"{{"name": "c{c}-v0", "tier": {c}}}"#);
        events.push(("customers", format!("c{c}"), Some(value), BASE_MS - 1_000));
    }
    for i in 0..ORDERS {
        let at = BASE_MS + i as i64 * 10;
        if i % 30 == 0 {
            let c = (i / 30) % CUSTOMERS;
            let value = format!(r#"{{"name": "c{c}-v{i}", "tier": {c}}}"#);
            events.push(("customers", format!("c{c}"), Some(value), at - 5));
        }
        if i % 90 == 45 {
            events.push((
                "customers",
                format!("c{}", (i * 7) % CUSTOMERS),
                None,
                at - 3,
            ));
        }
        let value = format!(
            r#"{{"order_id": {i}, "customer": "c{}"}}"#,
            (i * 13) % CUSTOMERS
        );
        events.push(("orders", format!("o{i}"), Some(value), at));
    }
    events
}

/// Each order's expected output value: the customer's name as of the order's time, if any.
fn oracle(events: &[Event]) -> BTreeMap<i64, Option<String>> {
    let mut customers: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut expected = BTreeMap::new();
    for (topic, key, value, _) in events {
        let value: Option<serde_json::Value> =
            value.as_deref().map(|v| serde_json::from_str(v).unwrap());
        if *topic == "customers" {
            customers.insert(
                key.clone(),
                value.map(|v| v["name"].as_str().unwrap().into()),
            );
            continue;
        }
        let order = value.unwrap();
        let name = customers
            .get(order["customer"].as_str().unwrap())
            .cloned()
            .flatten();
        expected.insert(order["order_id"].as_i64().unwrap(), name);
    }
    expected
}

/// Produces `events` in order; each table update is acknowledged before anything after it is
/// sent (what the join's "written before" promise is about).
fn produce(bootstrap: &str, events: &[Event], pause_after: usize) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .create()
        .unwrap();
    for (n, (topic, key, value, at)) in events.iter().enumerate() {
        let mut record = BaseRecord::to(topic).key(key).timestamp(*at);
        if let Some(value) = value {
            record = record.payload(value);
        }
        producer.send(record).map_err(|(e, _)| e).unwrap();
        if *topic == "customers" {
            producer.flush(TIMEOUT).unwrap();
        }
        if n == pause_after {
            producer.flush(TIMEOUT).unwrap();
            thread::sleep(Duration::from_millis(1500));
        }
    }
    producer.flush(TIMEOUT).unwrap();
}

fn job_config(bootstrap: &str, instance: &str) -> JobConfig {
    let mut config = JobConfig::new(
        "enrich",
        bootstrap,
        "orders",
        "enriched",
        "SELECT o.order_id, c.name FROM orders o LEFT JOIN customers c ON o.customer = c._key",
    );
    config.tables = vec![("customers".into(), "customers".into())];
    config.instance_id = instance.into();
    config.checkpoint_interval_ms = 100;
    config.checkpoint_max_records = 120;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orders_meet_their_customer_as_of_their_time_exactly_once_across_a_restart() {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path()).await;
    let bootstrap = broker.local_addr().to_string();
    create_topics(&bootstrap, &["orders", "customers", "enriched"]).await;
    let events = events();
    let expected = oracle(&events);
    let producing = {
        let (bootstrap, events) = (bootstrap.clone(), events.clone());
        thread::spawn(move || produce(&bootstrap, &events, 40))
    };

    thread::sleep(Duration::from_millis(500));
    let (stop_a, job_a) = spawn(job_config(&bootstrap, "a"));
    let (stop_b, job_b) = spawn(job_config(&bootstrap, "b"));
    thread::sleep(Duration::from_millis(2500));
    stop_a.store(true, Ordering::SeqCst);
    let first_run = job_a.join().unwrap();
    let (stop_a, job_a) = spawn(job_config(&bootstrap, "a"));
    producing.join().unwrap();

    let output = tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || read_committed(&bootstrap, "enriched", ORDERS)
    })
    .await
    .unwrap();
    stop_a.store(true, Ordering::SeqCst);
    stop_b.store(true, Ordering::SeqCst);
    let stats = [first_run, job_a.join().unwrap(), job_b.join().unwrap()];

    let mut got: BTreeMap<i64, Option<String>> = BTreeMap::new();
    for (_, value) in &output {
        let row: serde_json::Value = serde_json::from_str(value).unwrap();
        let id = row["order_id"].as_i64().unwrap();
        let name = row.get("name").and_then(|n| n.as_str()).map(String::from);
        assert!(
            got.insert(id, name).is_none(),
            "order {id} twice; runs: {stats:?}"
        );
    }
    assert_eq!(output.len(), ORDERS, "runs: {stats:?}");
    let unmatched = expected.values().filter(|n| n.is_none()).count();
    assert!(
        unmatched > 0 && unmatched < ORDERS / 2,
        "the data has deletes and a customer that never exists"
    );
    for (id, name) in &expected {
        assert_eq!(got.get(id), Some(name), "order {id}; runs: {stats:?}");
    }
}
