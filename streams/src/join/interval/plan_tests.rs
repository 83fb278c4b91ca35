//! Interval joins found in planned queries: keys, bounds in any spelling, sides, and the
//! queries refused with their reason.

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;

use super::plan::{extract, IntervalJoinPlan};
use crate::io::decode::RecordDecoder;
use crate::plan::Session;
use crate::record::{InputRecord, ValueFormat};

fn decoder(sample: &str) -> RecordDecoder {
    let records = [record(sample, 0, 0)];
    let schema = RecordDecoder::infer(&records).unwrap();
    RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap()
}

fn record(value: &str, offset: i64, time: i64) -> InputRecord {
    InputRecord {
        key: None,
        value: Some(value.as_bytes().to_vec()),
        partition: 0,
        offset,
        timestamp_ms: time,
        headers: None,
    }
}

const ORDER: &str = r#"{"id": 1, "customer": "c"}"#;
const PAYMENT: &str = r#"{"order_id": 1, "amount": 9.5}"#;

async fn session() -> Session {
    Session::new(&[
        ("orders", decoder(ORDER).schema()),
        ("payments", decoder(PAYMENT).schema()),
    ])
    .unwrap()
}

async fn planned(query: &str) -> crate::error::Result<Option<IntervalJoinPlan>> {
    let session = session().await;
    let plan = session.plan(query).await?;
    extract(&plan, &["orders", "payments"])
}

async fn refusal(query: &str) -> String {
    match planned(query).await {
        Ok(_) => panic!("accepted: {query}"),
        Err(error) => error.to_string(),
    }
}

#[tokio::test]
async fn bounds_in_any_spelling() {
    let between = "SELECT o.id, p.amount FROM orders o JOIN payments p ON o.id = p.order_id \
                   AND p._timestamp BETWEEN o._timestamp - INTERVAL '15' MINUTE AND o._timestamp";
    let join = planned(between).await.unwrap().expect("a join");
    assert_eq!((join.lower_ms, join.upper_ms), (-900_000, 0));
    assert_eq!(
        (join.left.input, join.right.input, join.left.keys),
        (0, 1, 1)
    );
    assert!(!join.left_outer);
    // Reversed comparisons, strict ones a millisecond inside, sides the other way round.
    let spelled = "SELECT * FROM payments p LEFT JOIN orders o \
                   ON o._timestamp + INTERVAL '1' HOUR > p._timestamp \
                   AND p.order_id = o.id AND o._timestamp <= p._timestamp";
    let join = planned(spelled).await.unwrap().expect("a join");
    // right (orders) - left (payments): o.t <= p.t and o.t > p.t - 1 h.
    assert_eq!((join.lower_ms, join.upper_ms), (-3_599_999, 0));
    assert_eq!((join.left.input, join.right.input), (1, 0));
    assert!(join.left_outer);
    // A query without a join is not an interval join.
    assert!(planned("SELECT id FROM orders").await.unwrap().is_none());
}

#[tokio::test]
async fn a_side_plan_yields_keys_time_position_and_columns() {
    let session = session().await;
    let query = "SELECT o.id, p.amount FROM orders o JOIN payments p ON o.id = p.order_id \
                 AND p._timestamp BETWEEN o._timestamp AND o._timestamp + INTERVAL '5' SECOND";
    let plan = session.plan(query).await.unwrap();
    let join = extract(&plan, &["orders", "payments"]).unwrap().unwrap();
    let orders = decoder(ORDER)
        .decode(&[
            record(ORDER, 7, 1_000),
            record(r#"{"id": 2, "customer": "d"}"#, 8, 2_000),
        ])
        .unwrap()
        .batch;
    session.set_input(0, orders).await;
    let rows: Vec<RecordBatch> = session.run(&join.left.plan).await.unwrap();
    let batch = &rows[0];
    let column = |i: usize| {
        batch
            .column(i)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec()
    };
    assert_eq!(column(0), [1, 2], "the key");
    assert_eq!(column(1), [1_000, 2_000], "the time in ms");
    assert_eq!(column(3), [7, 8], "the offset");
    assert_eq!(batch.num_columns(), 1 + 3 + join.left.columns);
}

#[tokio::test]
async fn joins_a_stream_cannot_run_are_refused_with_the_reason() {
    let keyed = "SELECT * FROM orders o JOIN payments p ON o.id = p.order_id";
    assert!(refusal(keyed).await.contains("needs a time bound"));
    let unkeyed = "SELECT * FROM orders o JOIN payments p ON p._timestamp BETWEEN o._timestamp \
                   AND o._timestamp + INTERVAL '1' MINUTE";
    assert!(refusal(unkeyed).await.contains("needs equal keys"));
    let right = keyed.replace("JOIN", "RIGHT JOIN")
        + " AND p._timestamp BETWEEN o._timestamp AND o._timestamp + INTERVAL '1' MINUTE";
    assert!(refusal(&right)
        .await
        .contains("LEFT JOIN with the sides swapped"));
    let empty = format!(
        "{keyed} AND p._timestamp BETWEEN o._timestamp + INTERVAL '1' MINUTE AND o._timestamp"
    );
    assert!(refusal(&empty).await.contains("empty"));
    let bounded = format!(
        "{keyed} AND p._timestamp BETWEEN o._timestamp AND o._timestamp + INTERVAL '1' MINUTE"
    );
    let outer_extra = bounded.replace("JOIN", "LEFT JOIN") + " AND p.amount > 1";
    assert!(refusal(&outer_extra)
        .await
        .contains("put other conditions in WHERE"));
    // An inner join's other conditions are applied above it.
    assert!(planned(&(bounded.clone() + " AND p.amount > 1"))
        .await
        .unwrap()
        .is_some());
    let counted =
        bounded.replace("SELECT *", "SELECT o.customer, count(*)") + " GROUP BY o.customer";
    assert!(refusal(&counted).await.contains("aggregate over a join"));
}

#[tokio::test]
async fn columns_the_join_cannot_hold_are_refused_when_planned() {
    let nested = r#"{"order_id": 1, "card": {"brand": "visa"}}"#;
    let session = Session::new(&[
        ("orders", decoder(ORDER).schema()),
        ("payments", decoder(nested).schema()),
    ])
    .unwrap();
    let query = "SELECT o.id FROM orders o JOIN payments p ON o.id = p.order_id \
                 AND p._timestamp BETWEEN o._timestamp AND o._timestamp + INTERVAL '1' MINUTE";
    let plan = session.plan(query).await.unwrap();
    let error = match extract(&plan, &["orders", "payments"]) {
        Ok(_) => panic!("a struct column accepted"),
        Err(error) => error.to_string(),
    };
    assert!(error.contains("column card"), "{error}");
}

/// The joined rows' time (the later of each pair's) rides through the rest of the query in the
/// hidden column, for the output records' timestamps (`crate::io::record_time`).
#[tokio::test]
async fn the_joined_rows_time_reaches_the_output() {
    use std::sync::Arc;

    use datafusion::arrow::array::{new_null_array, ArrayRef, Float64Array, Int64Array};
    use datafusion::arrow::datatypes::{DataType, TimeUnit};
    use datafusion::catalog::TableProvider;

    let session = session().await;
    let query = "SELECT o.id, p.amount FROM orders o JOIN payments p ON o.id = p.order_id \
                 AND p._timestamp BETWEEN o._timestamp AND o._timestamp + INTERVAL '5' SECOND \
                 WHERE p.amount > 5";
    let plan = session.plan(query).await.unwrap();
    let join = extract(&plan, &["orders", "payments"]).unwrap().unwrap();
    let schema = join.joined.schema();
    let position = |qualifier: &str, name: &str| {
        join.join_schema
            .iter()
            .position(|(q, f)| q.is_some_and(|q| q.table() == qualifier) && f.name() == name)
            .unwrap()
    };
    let (id, amount) = (position("o", "id"), position("p", "amount"));
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(index, field)| -> ArrayRef {
            if index == id {
                Arc::new(Int64Array::from(vec![1, 2, 3]))
            } else if index == amount {
                Arc::new(Float64Array::from(vec![9.5, 1.0, 7.0]))
            } else if index == schema.fields().len() - 1 {
                let times = Int64Array::from(vec![4_000, 5_000, 6_000]);
                let data_type = DataType::Timestamp(TimeUnit::Millisecond, None);
                assert_eq!(field.data_type(), &data_type, "the last column is the time");
                datafusion::arrow::compute::cast(&times, &data_type).unwrap()
            } else if field.is_nullable() {
                new_null_array(field.data_type(), 3)
            } else {
                let zeros = Int64Array::from(vec![0; 3]);
                datafusion::arrow::compute::cast(&zeros, field.data_type()).unwrap()
            }
        })
        .collect();
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
    *join.joined.batches[0].write().await = vec![batch];
    let output = session.run(&join.post_join).await.unwrap();
    let (rows, times) = crate::io::record_time::split(output).unwrap();
    assert_eq!(
        times,
        Some(vec![Some(4_000), Some(6_000)]),
        "the rows WHERE kept"
    );
    let names: Vec<_> = rows[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["id", "amount"]);
}
