//! Stream–table joins over decoded batches, without a broker: the table's versions as of each
//! record's time, inner and outer, tombstones, and what is refused.

use datafusion::arrow::datatypes::SchemaRef;

use crate::io::decode::RecordDecoder;
use crate::io::encode::encode;
use crate::join::table::TableState;
use crate::record::{InputRecord, ValueFormat};
use crate::sql::SqlTransform;

fn record(key: Option<&str>, value: Option<&str>, offset: i64, timestamp_ms: i64) -> InputRecord {
    InputRecord {
        key: key.map(|k| k.as_bytes().to_vec()),
        value: value.map(|v| v.as_bytes().to_vec()),
        partition: 0,
        offset,
        timestamp_ms,
        headers: None,
    }
}

fn decoder(sample: &[InputRecord]) -> RecordDecoder {
    let schema = RecordDecoder::infer(sample).unwrap();
    RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap()
}

/// Orders at times 100, 250, 400, 500 for customers c1, c1, c2, c3.
fn orders() -> Vec<InputRecord> {
    [
        ("o1", "c1", 100),
        ("o2", "c1", 250),
        ("o3", "c2", 400),
        ("o4", "c3", 500),
    ]
    .iter()
    .enumerate()
    .map(|(i, (id, customer, ts))| {
        let value = format!(r#"{{"order_id": "{id}", "customer": "{customer}"}}"#);
        record(None, Some(&value), i as i64, *ts)
    })
    .collect()
}

/// c1 is "ann" from 50 and "ann b" from 200; c2 "bob" from 50 and deleted at 300; c3 never.
fn customers() -> Vec<InputRecord> {
    vec![
        record(Some("c1"), Some(r#"{"name": "ann"}"#), 0, 50),
        record(Some("c2"), Some(r#"{"name": "bob"}"#), 1, 50),
        record(Some("c1"), Some(r#"{"name": "ann b"}"#), 2, 200),
        record(Some("c2"), None, 3, 300),
    ]
}

async fn run_join(query: &str) -> Vec<serde_json::Value> {
    let orders_decoder = decoder(&orders());
    let customers_decoder = decoder(&customers()[..1]);
    let customer_schema: SchemaRef = customers_decoder.schema();
    let mut table = TableState::new("customers", customers_decoder, 3_600_000, 1_000);
    table.apply(customers()).unwrap();
    let transform = SqlTransform::with_tables(
        &[("orders", orders_decoder.schema())],
        &[("customers", customer_schema)],
        query,
    )
    .await
    .unwrap();
    let batch = orders_decoder.decode(&orders()).unwrap().batch;
    let output = transform
        .apply_with_tables(vec![batch], std::slice::from_ref(&table))
        .await
        .unwrap();
    encode(&output, ValueFormat::Json)
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice(&r.value).unwrap())
        .collect()
}

fn json(rows: &[&str]) -> Vec<serde_json::Value> {
    rows.iter()
        .map(|r| serde_json::from_str(r).unwrap())
        .collect()
}

#[tokio::test]
async fn each_order_meets_the_customer_as_of_its_time() {
    let got =
        run_join("SELECT o.order_id, c.name FROM orders o JOIN customers c ON o.customer = c._key")
            .await;
    assert_eq!(
        got,
        json(&[
            r#"{"order_id": "o1", "name": "ann"}"#,
            r#"{"order_id": "o2", "name": "ann b"}"#,
        ]),
        "o3's customer was deleted at 300, o4's never existed"
    );
}

#[tokio::test]
async fn a_left_join_keeps_the_orders_without_a_customer() {
    let got = run_join(
        "SELECT o.order_id, c.name, c._timestamp IS NULL AS missing \
         FROM orders o LEFT JOIN customers c ON o.customer = c._key",
    )
    .await;
    assert_eq!(
        got,
        json(&[
            r#"{"order_id": "o1", "name": "ann", "missing": false}"#,
            r#"{"order_id": "o2", "name": "ann b", "missing": false}"#,
            r#"{"order_id": "o3", "missing": true}"#,
            r#"{"order_id": "o4", "missing": true}"#,
        ]),
        "a null column is left out of the JSON value"
    );
}

#[tokio::test]
async fn the_table_may_come_first_and_more_conditions_filter_an_inner_join() {
    let got = run_join(
        "SELECT c.name, o.order_id FROM customers c JOIN orders o \
         ON c._key = o.customer AND o.order_id <> 'o1' WHERE c.name LIKE 'ann%'",
    )
    .await;
    assert_eq!(got, json(&[r#"{"name": "ann b", "order_id": "o2"}"#]));
}

/// Two joins in a row: the second finds the stream's time among the first table's columns.
#[tokio::test]
async fn a_second_join_looks_up_at_the_stream_records_time_too() {
    let got = run_join(
        "SELECT o.order_id, c.name, p.name AS again FROM orders o \
         JOIN customers c ON o.customer = c._key \
         LEFT JOIN customers p ON o.customer = p._key",
    )
    .await;
    assert_eq!(
        got,
        json(&[
            r#"{"order_id": "o1", "name": "ann", "again": "ann"}"#,
            r#"{"order_id": "o2", "name": "ann b", "again": "ann b"}"#,
        ])
    );
}

#[tokio::test]
async fn joins_a_job_cannot_run_are_refused_with_the_reason() {
    let orders_decoder = decoder(&orders());
    let customers_decoder = decoder(&customers()[..1]);
    let inputs = [
        ("orders", orders_decoder.schema()),
        ("other", orders_decoder.schema()),
    ];
    let tables = [("customers", customers_decoder.schema())];
    for (query, reason) in [
        ("SELECT o.order_id FROM orders o JOIN other x ON o.customer = x.customer", "also joins declared tables"),
        ("SELECT name FROM customers", "can only be joined"),
        ("SELECT o.order_id FROM orders o JOIN customers c ON o.customer = c.name", "_key"),
        (
            "SELECT o.order_id FROM orders o LEFT JOIN customers c ON o.customer = c._key AND c.name = 'x'",
            "only ON stream_expression = table._key",
        ),
        ("SELECT o.order_id FROM customers c LEFT JOIN orders o ON o.customer = c._key", "LEFT JOIN"),
        (
            "SELECT o.order_id FROM orders o JOIN customers c ON o.customer = c._key LIMIT 1",
            "LIMIT",
        ),
    ] {
        let error = match SqlTransform::with_tables(&inputs, &tables, query).await {
            Ok(_) => panic!("accepted: {query}"),
            Err(error) => error.to_string(),
        };
        assert!(error.contains(reason), "{query}: {error}");
    }
}

#[test]
fn table_records_without_a_key_or_that_do_not_decode_are_skipped_and_counted() {
    let mut table = TableState::new("customers", decoder(&customers()[..1]), 3_600_000, 1_000);
    table
        .apply(vec![
            record(None, Some(r#"{"name": "nobody"}"#), 0, 10),
            record(Some("c9"), Some("not json"), 1, 10),
            record(Some("c1"), Some(r#"{"name": "ann"}"#), 2, 10),
        ])
        .unwrap();
    assert_eq!(table.skipped, 2);
    assert_eq!(table.entries(), 1);
    assert!(table.get_as_of(b"c9", 10).is_none());
}
