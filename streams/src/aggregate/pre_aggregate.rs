//! The first half of a windowed aggregation, on the instance that owns the input partition: a
//! checkpoint's rows are put in their windows and aggregated locally into partial groups, which
//! the repartition topic carries to the group's owner.
//!
//! Lateness is decided here, per input partition, so that it depends only on that partition's
//! order of records (deterministic across restarts and rebalances): a partition's watermark is
//! the largest event time it has shown minus the allowed lateness; a row counts only in windows
//! that end after that watermark, and a row in none of them is late. A session row is late when
//! its time is behind that watermark (`crate::aggregate::session` says why); the others are merged
//! into partial sessions per key.

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, Int32Array, Int64Array, TimestampMillisecondArray};
use datafusion::arrow::record_batch::RecordBatch;

use crate::aggregate::accumulator::Accumulator;
use crate::aggregate::datum::Datum;
use crate::aggregate::query::{
    WindowedQuery, FIRST_KEY_COLUMN, OFFSET_COLUMN_INDEX, PARTITION_COLUMN_INDEX, TIME_COLUMN,
};
use crate::aggregate::session::{self, Session, SessionSet};
use crate::error::{Result, StreamsError};
use crate::plan::window_spec::Windows;
use crate::state_map::StateMap;

/// The largest event time seen per input partition.
pub type PartitionTimes = BTreeMap<i32, i64>;

/// One group's partial aggregates from one checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct PartialGroup {
    pub window_start_ms: i64,
    /// Sessions: the partial session's last event time.
    pub session_last_ms: Option<i64>,
    pub keys: Vec<Datum>,
    pub accumulators: Vec<Accumulator>,
}

#[derive(Debug, Default)]
pub struct PreAggregated {
    pub groups: Vec<PartialGroup>,
    /// Rows too late for every window they fall in: (partition, offset).
    pub late: Vec<(i32, i64)>,
    /// Rows without an event time: (partition, offset).
    pub without_time: Vec<(i32, i64)>,
}

/// Aggregates the pre-aggregate plan's `batches` (rows of any order) partition by partition in
/// offset order, advancing `times`.
pub fn pre_aggregate(
    query: &WindowedQuery,
    batches: &[RecordBatch],
    times: &mut PartitionTimes,
    allowed_lateness_ms: i64,
) -> Result<PreAggregated> {
    let mut rows = Vec::new();
    let mut times_of = Vec::with_capacity(batches.len());
    for (index, batch) in batches.iter().enumerate() {
        times_of.push(column::<TimestampMillisecondArray>(batch, TIME_COLUMN)?);
        let partitions = column::<Int32Array>(batch, PARTITION_COLUMN_INDEX)?;
        let offsets = column::<Int64Array>(batch, OFFSET_COLUMN_INDEX)?;
        for row in 0..batch.num_rows() {
            rows.push((partitions.value(row), offsets.value(row), index, row));
        }
    }
    rows.sort_unstable();
    let mut groups = Groups::default();
    let mut result = PreAggregated::default();
    for (partition, offset, index, row) in rows {
        let batch = &batches[index];
        let time_column = times_of[index];
        if time_column.is_null(row) {
            result.without_time.push((partition, offset));
            continue;
        }
        let time = time_column.value(row);
        let watermark = times.get(&partition).map(|max| max - allowed_lateness_ms);
        let windows: Vec<i64> = match query.window {
            Windows::Updating => vec![0],
            Windows::Fixed(window) => window
                .starts(time)
                .filter(|start| watermark.is_none_or(|w| window.end(*start) > w))
                .collect(),
            Windows::Session { .. } if watermark.is_some_and(|w| time < w) => Vec::new(),
            Windows::Session { .. } => vec![time],
        };
        if windows.is_empty() {
            result.late.push((partition, offset));
        } else {
            let keys = (0..query.keys)
                .map(|k| Datum::from_array(batch.column(FIRST_KEY_COLUMN + k), row))
                .collect::<Result<Vec<_>>>()?;
            let first_argument = FIRST_KEY_COLUMN + query.keys;
            let arguments = (0..query.aggregates.len())
                .map(|a| Datum::from_array(batch.column(first_argument + a), row))
                .collect::<Result<Vec<_>>>()?;
            let start = || query.aggregates.iter().map(|k| k.start()).collect();
            let update = |accumulators: &mut Vec<Accumulator>| {
                for (accumulator, argument) in accumulators.iter_mut().zip(&arguments) {
                    accumulator.update(argument);
                }
            };
            match query.window {
                Windows::Fixed(_) | Windows::Updating => {
                    // One lookup per row, not per window: a key's windows are few and mostly
                    // the newest ones.
                    let by_window = groups.fixed.entry(keys).or_default();
                    for window_start in windows {
                        let index = match by_window.iter().rposition(|(s, _)| *s == window_start) {
                            Some(index) => index,
                            None => {
                                by_window.push((window_start, start()));
                                by_window.len() - 1
                            }
                        };
                        update(&mut by_window[index].1);
                    }
                }
                Windows::Session { gap_ms } => {
                    let mut accumulators = start();
                    update(&mut accumulators);
                    let one = Session {
                        last_ms: time,
                        accumulators,
                    };
                    session::add(groups.sessions.entry(keys).or_default(), gap_ms, time, one);
                }
            }
        }
        let max = times.entry(partition).or_insert(time);
        *max = (*max).max(time);
    }
    result.groups = groups.into_partials();
    Ok(result)
}

/// A checkpoint's partial groups: by window and key, or a key's partial sessions.
#[derive(Default)]
struct Groups {
    /// By key: each window's accumulators (window start, accumulators).
    fixed: StateMap<Vec<Datum>, Vec<(i64, Vec<Accumulator>)>>,
    sessions: StateMap<Vec<Datum>, SessionSet>,
}

impl Groups {
    fn into_partials(self) -> Vec<PartialGroup> {
        let fixed = self.fixed.into_iter().flat_map(|(keys, by_window)| {
            by_window
                .into_iter()
                .map(move |(window_start_ms, accumulators)| PartialGroup {
                    window_start_ms,
                    session_last_ms: None,
                    keys: keys.clone(),
                    accumulators,
                })
        });
        let sessions = self.sessions.into_iter().flat_map(|(keys, set)| {
            set.into_iter().map(move |(start, session)| PartialGroup {
                window_start_ms: start,
                session_last_ms: Some(session.last_ms),
                keys: keys.clone(),
                accumulators: session.accumulators,
            })
        });
        fixed.chain(sessions).collect()
    }
}

/// Column `index` of a pre-aggregate plan's `batch` as its Arrow array type.
pub(crate) fn column<T: 'static>(batch: &RecordBatch, index: usize) -> Result<&T> {
    batch
        .column(index)
        .as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| {
            StreamsError::Internal(format!(
                "the pre-aggregate column {} has type {}",
                batch.schema().field(index).name(),
                batch.column(index).data_type()
            ))
        })
}
