//! A job's output records carry when what they say happened, as Kafka Streams' do: a stateless
//! job's keep their input record's timestamp (a filter or a projection does not change it), an
//! interval join's the later of its pair's times (a left row without a match: its own). A job
//! reading the output by `_timestamp` — windows, joins — then sees event time, not when a job
//! produced it. (Windows' results carry their window's end: `crate::aggregate`.)
//!
//! The query's plan gets one hidden column, that time, when its rows are the input's (or the
//! join's) rows projected: a projection over a plan with exactly one such column (a stateless
//! query: `_timestamp` of one input, filtered or joined with declared tables whose columns do
//! not include theirs). Anything else (several inputs in a UNION, a subquery that leaves the
//! time out) keeps the producer's clock. The column is split off the result before the rows
//! are encoded.

use datafusion::arrow::array::{Array, Int64Array};
use datafusion::arrow::compute::cast;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::Column;
use datafusion::logical_expr::{Expr, LogicalPlan, Projection};

use crate::error::Result;
use crate::io::decode::TIMESTAMP_COLUMN;

/// Each output row's input record timestamp (ms), when the query keeps them.
pub type RecordTimes = Option<Vec<Option<i64>>>;

/// The hidden column (a name no query picks by chance).
pub const RECORD_TIME_COLUMN: &str = "__weir_record_time";

/// `plan` with the input record's timestamp as its last column, when it can carry one.
pub fn stamped(plan: &LogicalPlan) -> Option<LogicalPlan> {
    stamped_by(plan, TIMESTAMP_COLUMN)
}

/// `plan` with its input's column `time` (a timestamp) as its last column, the hidden one.
pub fn stamped_by(plan: &LogicalPlan, time: &str) -> Option<LogicalPlan> {
    let LogicalPlan::Projection(projection) = plan else {
        return None;
    };
    let schema = projection.input.schema();
    let mut found = schema.iter().filter(|(_, field)| field.name() == time);
    let (qualifier, field) = found.next()?;
    if found.next().is_some() || !matches!(field.data_type(), DataType::Timestamp(_, _)) {
        return None;
    }
    let column = Expr::Column(Column::new(qualifier.cloned(), field.name()));
    let mut exprs = projection.expr.clone();
    exprs.push(column.alias(RECORD_TIME_COLUMN));
    Projection::try_new(exprs, projection.input.clone())
        .ok()
        .map(LogicalPlan::Projection)
}

/// `schema` without the hidden column (what the query's rows hold).
pub fn without_record_time(schema: &Schema) -> SchemaRef {
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .filter(|field| field.name() != RECORD_TIME_COLUMN)
        .cloned()
        .collect();
    Arc::new(Schema::new(fields))
}

/// The result without the hidden column, and each row's timestamp (ms) when it had one.
pub fn split(batches: Vec<RecordBatch>) -> Result<(Vec<RecordBatch>, RecordTimes)> {
    let mut times: RecordTimes = None;
    let mut values = Vec::with_capacity(batches.len());
    for mut batch in batches {
        if let Ok(index) = batch.schema().index_of(RECORD_TIME_COLUMN) {
            let column = batch.remove_column(index);
            let millis = cast(
                &cast(
                    &column,
                    &DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Millisecond, None),
                )?,
                &DataType::Int64,
            )?;
            let millis = millis
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("cast to Int64");
            let batch_times = times.get_or_insert_with(Vec::new);
            batch_times
                .extend((0..millis.len()).map(|i| millis.is_valid(i).then(|| millis.value(i))));
        }
        values.push(batch);
    }
    Ok((values, times))
}
