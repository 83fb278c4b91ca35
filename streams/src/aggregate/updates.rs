//! Updating aggregates: a `GROUP BY` without a window keeps every group's aggregates for good
//! and, at each checkpoint, emits the groups that changed — a materialized view, as a stream of
//! upserts keyed by the group for a compacted topic (Kafka Streams' KTable, ksqlDB's `CREATE
//! TABLE … AS SELECT … GROUP BY`). A changed group that the rest of the query leaves out (its
//! HAVING no longer holds) is a tombstone, so the topic's latest record per key is always the
//! view's current row, or its absence.
//!
//! To tell which group each output row came from, the emitted groups carry their number in an
//! extra column, [`GROUP_NUMBER_COLUMN`], which every projection above the aggregate passes
//! along; the numbers found in the output are the groups that are in the view.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Int64Type};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::MemTable;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, DFSchemaRef};
use datafusion::logical_expr::{Expr, LogicalPlan, Projection};

use crate::aggregate::datum::Datum;
use crate::aggregate::query::WindowRow;
use crate::error::{Result, StreamsError};
use crate::io::encode::encode;
use crate::plan::renamed_scan;
use crate::record::ValueFormat;

/// The table the post-aggregate plan reads the changed groups from.
const GROUPS_TABLE: &str = "__weir_groups";
/// Each changed group's number (its index among the rows emitted at once).
pub const GROUP_NUMBER_COLUMN: &str = "__weir_group";

/// One record for the output topic: the group's key, and its row (None: a tombstone).
pub type Update = (Vec<u8>, Option<Vec<u8>>);

/// `plan` with its aggregate replaced by a scan of the changed groups plus their numbers, and
/// every projection above it passing the numbers along.
pub fn post_aggregate_plan(
    plan: &LogicalPlan,
    aggregate_schema: &DFSchemaRef,
) -> Result<(Arc<MemTable>, LogicalPlan)> {
    let number = Field::new(GROUP_NUMBER_COLUMN, DataType::Int64, false);
    let numbered = aggregate_schema.join(&DFSchema::try_from(
        datafusion::arrow::datatypes::Schema::new(vec![number]),
    )?)?;
    let (groups, replacement) = renamed_scan(&Arc::new(numbered), GROUPS_TABLE)?;
    let post = plan
        .clone()
        .transform_up(|node| {
            Ok(match node {
                LogicalPlan::Aggregate(_) => Transformed::yes(replacement.clone()),
                LogicalPlan::Projection(projection) if drops_numbers(&projection) => {
                    let mut expr = projection.expr.clone();
                    expr.push(Expr::Column(Column::from_name(GROUP_NUMBER_COLUMN)));
                    let with_numbers = Projection::try_new(expr, projection.input)?;
                    Transformed::yes(LogicalPlan::Projection(with_numbers))
                }
                other => Transformed::yes(other.recompute_schema()?),
            })
        })?
        .data;
    if post
        .schema()
        .index_of_column_by_name(None, GROUP_NUMBER_COLUMN)
        .is_none()
    {
        return Err(StreamsError::Query(
            "an updating aggregate's result must keep one row per group (the query above its \
             GROUP BY cannot be followed)"
                .into(),
        ));
    }
    Ok((groups, post))
}

fn drops_numbers(projection: &Projection) -> bool {
    let has = |schema: &DFSchema| {
        schema
            .index_of_column_by_name(None, GROUP_NUMBER_COLUMN)
            .is_some()
    };
    has(projection.input.schema()) && !has(&projection.schema)
}

/// The numbers 0..count, for the emitted groups.
pub fn group_numbers(count: usize) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(0..count as i64))
}

/// The record key of a group: its only key as text (a string as is, other values as JSON), or
/// the JSON array of its keys when there are several (or none).
pub fn record_key(keys: &[Datum]) -> Vec<u8> {
    match keys {
        [Datum::Str(text)] => text.as_bytes().to_vec(),
        [one] => serde_json::to_vec(one).unwrap_or_default(),
        several => serde_json::to_vec(several).unwrap_or_default(),
    }
}

/// The post-aggregate `output` for the changed groups `rows` → an upsert for each group with a
/// row, a tombstone for each without.
pub fn updates(
    rows: &[WindowRow],
    output: &[RecordBatch],
    format: ValueFormat,
) -> Result<Vec<Update>> {
    let mut values: Vec<Option<Vec<u8>>> = vec![None; rows.len()];
    for batch in output {
        let index = batch.schema().index_of(GROUP_NUMBER_COLUMN)?;
        let numbers = cast(batch.column(index), &DataType::Int64)?;
        let numbers = numbers.as_primitive::<Int64Type>();
        let mut row_values = batch.clone();
        row_values.remove_column(index);
        let records = encode(&[row_values], format)?;
        for (row, record) in records.into_iter().enumerate() {
            let number = usize::try_from(numbers.value(row))
                .ok()
                .filter(|n| *n < rows.len() && numbers.is_valid(row))
                .ok_or_else(|| {
                    StreamsError::Internal(format!(
                        "an updating aggregate's row names group {} of {}",
                        numbers.value(row),
                        rows.len()
                    ))
                })?;
            values[number] = Some(record.value);
        }
    }
    Ok(rows
        .iter()
        .zip(values)
        .map(|(row, value)| (record_key(&row.keys), value))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_key_is_its_text_or_a_json_array() {
        assert_eq!(
            record_key(&[Datum::Str("/index.html".into())]),
            b"/index.html"
        );
        assert_eq!(record_key(&[Datum::Int(404)]), b"404");
        assert_eq!(
            record_key(&[Datum::Str("a".into()), Datum::Int(2)]),
            br#"["a",2]"#
        );
        assert_eq!(record_key(&[]), b"[]");
    }
}
