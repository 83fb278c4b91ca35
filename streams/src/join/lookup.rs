//! Running a checkpoint's stream–table joins: the stream side's rows (with their lookup key and
//! event time) each find the table's version current at that time; the matched table records
//! are decoded once and set beside the stream's columns in the join's output table.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use datafusion::arrow::compute::{cast, concat_batches, take};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;

use crate::error::{Result, StreamsError};
use crate::join::plan::TableJoin;
use crate::join::table::TableState;
use crate::plan::Session;
use crate::record::InputRecord;

/// Fills each join's output table for the inputs the session holds now, innermost join first.
pub async fn run(session: &Session, joins: &[TableJoin], tables: &[TableState]) -> Result<()> {
    for join in joins {
        let batches = session.run(&join.stream_side).await?;
        let schema = Arc::new(join.stream_side.schema().as_arrow().clone());
        let stream = concat_batches(&schema, &batches)?;
        let table = tables
            .get(join.table)
            .ok_or_else(|| StreamsError::Internal(format!("no state for table #{}", join.table)))?;
        let joined = join_rows(join, &stream, table)?;
        *join.output.batches[0].write().await = vec![joined];
    }
    Ok(())
}

/// Forgets what the joins produced for the last checkpoint.
pub async fn clear(joins: &[TableJoin]) {
    for join in joins {
        join.output.batches[0].write().await.clear();
    }
}

fn join_rows(join: &TableJoin, stream: &RecordBatch, table: &TableState) -> Result<RecordBatch> {
    let keys = stream.column(join.stream_width).as_string::<i32>();
    let times = stream
        .column(join.stream_width + 1)
        .as_primitive::<Int64Type>();
    let mut matched: Vec<InputRecord> = Vec::new();
    // Per stream row: its table record's position in `matched`.
    let mut positions: Vec<Option<u32>> = Vec::with_capacity(stream.num_rows());
    for row in 0..stream.num_rows() {
        let found = match (keys.is_valid(row), times.is_valid(row)) {
            (true, true) => table.get_as_of(keys.value(row).as_bytes(), times.value(row)),
            _ => None,
        };
        positions.push(found.map(|record| {
            matched.push(record.clone());
            (matched.len() - 1) as u32
        }));
    }
    let decoded = table.decoder.decode(&matched)?;
    if let Some(rejected) = decoded.rejected.first() {
        // Table records are checked when they are read; one that fails now is a bug.
        return Err(StreamsError::Internal(format!(
            "table {}: record at partition {} offset {} no longer decodes: {}",
            table.name, rejected.partition, rejected.offset, rejected.reason
        )));
    }
    let table_rows = decoded.batch;
    let (stream_columns, table_columns): (Vec<ArrayRef>, Vec<ArrayRef>) = if join.keep_unmatched {
        let at = UInt32Array::from(positions);
        let table_columns = table_rows
            .columns()
            .iter()
            .map(|c| take(c.as_ref(), &at, None))
            .collect::<Result<_, _>>()?;
        (
            stream.columns()[..join.stream_width].to_vec(),
            table_columns,
        )
    } else {
        let rows = UInt32Array::from_iter_values(
            positions
                .iter()
                .enumerate()
                .filter(|(_, p)| p.is_some())
                .map(|(row, _)| row as u32),
        );
        let stream_columns = stream.columns()[..join.stream_width]
            .iter()
            .map(|c| take(c.as_ref(), &rows, None))
            .collect::<Result<_, _>>()?;
        (stream_columns, table_rows.columns().to_vec())
    };
    let columns = match join.table_first {
        true => [table_columns, stream_columns].concat(),
        false => [stream_columns, table_columns].concat(),
    };
    let schema = join.output.schema();
    if columns.len() != schema.fields().len() {
        return Err(StreamsError::Internal(format!(
            "join with table {}: {} columns for an output of {}",
            table.name,
            columns.len(),
            schema.fields().len()
        )));
    }
    let columns = columns
        .iter()
        .zip(schema.fields())
        .map(
            |(column, field)| match column.data_type() == field.data_type() {
                true => Ok(Arc::clone(column)),
                false => cast(column, field.data_type()),
            },
        )
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(schema, columns)?)
}
