//! Aggregates over a table's changes: a `GROUP BY` without a window over a declared table read
//! on its own (`weir job run --table finals=TOPIC --query "SELECT category, avg(final) FROM
//! finals GROUP BY category"`) — Kafka Streams' `KGroupedTable::aggregate`, ksqlDB's aggregate
//! over a TABLE, Flink's aggregate over an upsert source.
//!
//! The table topic is the job's input, read record by record. Each keyed record replaces what
//! its key contributed: the row it made before (its group's keys and the aggregates' arguments,
//! [`TableRow`]) is retracted from that row's group, and the row the record makes now is added
//! to its group. A tombstone, or a record the query's WHERE leaves out, only retracts. The
//! partials carry both to the groups' owners as usual ([`crate::aggregate::store`]), built from the
//! retracting aggregates (`crate::aggregate::accumulator`) plus one more count: the rows in the
//! group, so a group whose rows are all gone leaves the view (a tombstone).
//!
//! The rows per table key are state of the input partition's owner: every change is a changelog
//! record in the changelog partition numbered like the input partition (the internal topics
//! have as many partitions as the input), restored with it after a restart or rebalance.
//!
//! Invariant: a key's records are in one input partition, read in order, and its partials go to
//! the group's partition in that order, so a group never holds fewer rows than it was sent
//! (retractions follow what they retract).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use datafusion::arrow::array::{Int32Array, Int64Array};
use datafusion::arrow::record_batch::RecordBatch;

use crate::aggregate::accumulator::{Accumulator, AggregateKind};
use crate::aggregate::codec::{ChangelogKey, ChangelogValue, TableRow};
use crate::aggregate::datum::Datum;
use crate::aggregate::pre_aggregate::{column, PartialGroup};
use crate::aggregate::query::{
    WindowedQuery, FIRST_KEY_COLUMN, OFFSET_COLUMN_INDEX, PARTITION_COLUMN_INDEX,
};
use crate::error::{Result, StreamsError};
use crate::record::InputRecord;

/// The aggregates a group over table changes holds: the query's, retracting, then its rows.
pub fn aggregates(query: &WindowedQuery) -> Vec<AggregateKind> {
    let mut kinds = query.aggregates.clone();
    kinds.push(AggregateKind::Count);
    kinds
}

/// Whether a group over table changes (its accumulators) still has rows.
pub fn has_rows(accumulators: &[Accumulator]) -> bool {
    !matches!(accumulators.last(), Some(Accumulator::Count(0)))
}

/// Changelog records for one changelog partition: (partition, [(key, value; None a tombstone)]).
pub type PartitionChanges = (i32, Vec<(ChangelogKey, Option<ChangelogValue>)>);

/// The current row of every table key of the owned input partitions.
#[derive(Default)]
pub struct TableRows {
    rows: HashMap<(i32, Vec<u8>), TableRow>,
    /// Keys changed since the changelog was last written, by input partition.
    changed: BTreeMap<i32, BTreeSet<Vec<u8>>>,
}

impl TableRows {
    pub fn clear(&mut self) {
        self.rows.clear();
        self.changed.clear();
    }

    pub fn entries(&self) -> usize {
        self.rows.len()
    }

    /// Applies one changelog record (replayed in order when restoring).
    pub fn restore(&mut self, source_partition: i32, key: Vec<u8>, value: Option<TableRow>) {
        match value {
            Some(row) => self.rows.insert((source_partition, key), row),
            None => self.rows.remove(&(source_partition, key)),
        };
    }

    /// Replaces the row of `key` with `row`, answering the one it replaces.
    fn replace(&mut self, partition: i32, key: &[u8], row: Option<TableRow>) -> Option<TableRow> {
        self.changed
            .entry(partition)
            .or_default()
            .insert(key.to_vec());
        let at = (partition, key.to_vec());
        match row {
            Some(row) => self.rows.insert(at, row),
            None => self.rows.remove(&at),
        }
    }

    /// The changelog records of what changed since the last call, by changelog partition.
    pub fn take_changes(&mut self) -> Vec<PartitionChanges> {
        std::mem::take(&mut self.changed)
            .into_iter()
            .map(|(partition, keys)| {
                let changes = keys
                    .into_iter()
                    .map(|key| {
                        let value = self
                            .rows
                            .get(&(partition, key.clone()))
                            .cloned()
                            .map(ChangelogValue::TableRow);
                        let key = ChangelogKey::TableRow {
                            source_partition: partition,
                            key,
                        };
                        (key, value)
                    })
                    .collect();
                (partition, changes)
            })
            .collect()
    }
}

/// A checkpoint's table records (`input`, with keys) and the pre-aggregate plan's rows for
/// them (`batches`: one per record that has a value the query keeps) → partial groups. Records
/// are taken in their partition's order; `rows` is brought up to date.
pub fn pre_aggregate_changes(
    query: &WindowedQuery,
    batches: &[RecordBatch],
    input: &[&InputRecord],
    rows: &mut TableRows,
) -> Result<Vec<PartialGroup>> {
    let made = rows_made(query, batches)?;
    let mut order: Vec<&InputRecord> = input.iter().copied().filter(|r| r.key.is_some()).collect();
    order.sort_unstable_by_key(|r| (r.partition, r.offset));
    let kinds = aggregates(query);
    let mut groups: HashMap<Vec<Datum>, Vec<Accumulator>> = HashMap::new();
    fn group_of<'g>(
        groups: &'g mut HashMap<Vec<Datum>, Vec<Accumulator>>,
        kinds: &[AggregateKind],
        keys: &[Datum],
    ) -> &'g mut Vec<Accumulator> {
        groups
            .entry(keys.to_vec())
            .or_insert_with(|| kinds.iter().map(|k| k.start_retracting()).collect())
    }
    for record in order {
        let key = record.key.as_deref().unwrap_or_default();
        let row = made.get(&(record.partition, record.offset)).cloned();
        if row.is_some() && rows.rows.get(&(record.partition, key.to_vec())) == row.as_ref() {
            continue;
        }
        if let Some(old) = rows.replace(record.partition, key, row.clone()) {
            let accumulators = group_of(&mut groups, &kinds, &old.keys);
            for (accumulator, argument) in accumulators.iter_mut().zip(with_row(&old.arguments)) {
                if !accumulator.retract(&argument) {
                    return Err(StreamsError::Query(format!(
                        "the aggregate {accumulator:?} cannot take a value back"
                    )));
                }
            }
        }
        if let Some(new) = row {
            let accumulators = group_of(&mut groups, &kinds, &new.keys);
            for (accumulator, argument) in accumulators.iter_mut().zip(with_row(&new.arguments)) {
                accumulator.update(&argument);
            }
        }
    }
    Ok(groups
        .into_iter()
        .map(|(keys, accumulators)| PartialGroup {
            window_start_ms: 0,
            session_last_ms: None,
            keys,
            accumulators,
        })
        .collect())
}

/// The arguments of a row's aggregates, then 1 for its row count.
fn with_row(arguments: &[Datum]) -> impl Iterator<Item = Datum> + '_ {
    arguments
        .iter()
        .cloned()
        .chain(std::iter::once(Datum::Int(1)))
}

/// The row each (partition, offset) makes, from the pre-aggregate plan's output.
fn rows_made(
    query: &WindowedQuery,
    batches: &[RecordBatch],
) -> Result<HashMap<(i32, i64), TableRow>> {
    let mut made = HashMap::new();
    for batch in batches {
        let partitions = column::<Int32Array>(batch, PARTITION_COLUMN_INDEX)?;
        let offsets = column::<Int64Array>(batch, OFFSET_COLUMN_INDEX)?;
        for row in 0..batch.num_rows() {
            let datum = |index: usize| Datum::from_array(batch.column(index), row);
            let keys = (0..query.keys)
                .map(|k| datum(FIRST_KEY_COLUMN + k))
                .collect::<Result<Vec<_>>>()?;
            let arguments = (0..query.aggregates.len())
                .map(|a| datum(FIRST_KEY_COLUMN + query.keys + a))
                .collect::<Result<Vec<_>>>()?;
            made.insert(
                (partitions.value(row), offsets.value(row)),
                TableRow { keys, arguments },
            );
        }
    }
    Ok(made)
}
