//! What a sink is: rows written, then made visible together with the source offsets they came
//! from, in one atomic step. A sink keeps those offsets itself (a manifest, a database table),
//! so after a crash the pipeline resumes from exactly what the sink holds: replays never
//! duplicate rows.

use std::collections::BTreeMap;
use std::time::Duration;

use arrow::array::{new_null_array, Array, ArrayRef, StringArray};
use arrow::compute::interleave;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

use crate::error::ConnectorError;

/// The next offset to read of every partition of the sink's input topic.
pub type SinkOffsets = BTreeMap<i32, i64>;

#[async_trait::async_trait]
pub trait Sink: Send {
    /// Prepares for rows of `schema` (creates or checks the table, finishes or discards what
    /// a crash left) and returns the offsets committed so far: where reading resumes.
    async fn open(&mut self, schema: SchemaRef) -> Result<SinkOffsets, ConnectorError>;

    /// Adds rows; they become visible at the next commit.
    async fn write(&mut self, batch: &RecordBatch) -> Result<(), ConnectorError>;

    /// Whether to commit now, `since_commit` after the last commit (files big or old enough,
    /// enough rows buffered, …).
    fn should_commit(&self, since_commit: Duration) -> bool;

    /// Makes every row written since the last commit visible together with `offsets`, or
    /// nothing at all. Idempotent: a retry after an unknown outcome does not duplicate.
    async fn commit(&mut self, offsets: &SinkOffsets) -> Result<(), ConnectorError>;

    /// Readies the sink for [`Sink::apply`] instead of [`Sink::write`] (called before `open`):
    /// its rows are an updating aggregate's changes. A sink that only appends refuses.
    fn expect_changes(&mut self) -> Result<(), ConnectorError> {
        Err(ConnectorError::Config(APPENDS_ONLY.into()))
    }

    /// Adds changes; they take effect at the next commit.
    async fn apply(&mut self, _changes: &Changes) -> Result<(), ConnectorError> {
        Err(ConnectorError::Config(APPENDS_ONLY.into()))
    }

    /// Rows and bytes written so far (for metrics and the run summary).
    fn stats(&self) -> SinkStats;

    /// Whether several writers may share the input, each committing its own partitions: each
    /// commit then names only the writer's partitions, and fails with
    /// [`ConnectorError::Fenced`] when another writer moved one of them. A sink that cannot
    /// (one manifest, one transactional id) has one writer at a time.
    fn shares_partitions(&self) -> bool {
        false
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkStats {
    pub rows_committed: u64,
    pub commits: u64,
    pub files_published: u64,
}

const APPENDS_ONLY: &str = "this sink appends rows: it cannot apply an updating aggregate's \
                            upserts and deletions (postgres, kafka and stdout sinks can)";

/// An updating aggregate's output (a materialized view's changes): each change replaces its
/// key's row, or deletes it (the record was a tombstone). A sink applying them keeps one row per
/// key, the latest — what a compacted topic keeps.
#[derive(Debug, Clone)]
pub struct Changes {
    /// Each change's record key (the group's key as text).
    pub keys: Vec<String>,
    /// Each change's new row; a deletion's columns are nulls.
    pub rows: RecordBatch,
    /// Which changes delete their key.
    pub deleted: Vec<bool>,
}

/// What a run of changes comes to: the latest row of each key that has one, and the keys that
/// were deleted last.
#[derive(Debug)]
pub struct LatestRows {
    /// `key_column` (text) followed by the rows' columns, one row per key.
    pub upserts: RecordBatch,
    pub deleted_keys: Vec<String>,
}

impl Changes {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The last change of each key among `changes` (applied in order), the keys' rows with the
    /// key as their first column `key_column`. All changes must have the same columns.
    pub fn latest(changes: &[Changes], key_column: &str) -> Result<LatestRows, ConnectorError> {
        let Some(first) = changes.first() else {
            return Err(ConnectorError::Internal("no changes to apply".into()));
        };
        let schema = first.rows.schema();
        let mut last: std::collections::HashMap<&str, (usize, usize)> = Default::default();
        for (batch, change) in changes.iter().enumerate() {
            if change.rows.schema() != schema || change.rows.num_rows() != change.len() {
                return Err(ConnectorError::Internal(
                    "changes of different columns cannot be applied together".into(),
                ));
            }
            for (row, key) in change.keys.iter().enumerate() {
                last.insert(key, (batch, row));
            }
        }
        let mut latest: Vec<(&str, (usize, usize))> = last.into_iter().collect();
        latest.sort_unstable();
        let mut deleted_keys = Vec::new();
        let mut picks = Vec::new();
        let mut keys = Vec::new();
        for (key, (batch, row)) in latest {
            if changes[batch].deleted[row] {
                deleted_keys.push(key.to_string());
            } else {
                picks.push((batch, row));
                keys.push(key);
            }
        }
        let mut fields = vec![Field::new(key_column, DataType::Utf8, false)];
        fields.extend(schema.fields().iter().map(|f| f.as_ref().clone()));
        let mut columns: Vec<ArrayRef> = vec![std::sync::Arc::new(StringArray::from(keys))];
        for index in 0..schema.fields().len() {
            let arrays: Vec<&dyn Array> = changes
                .iter()
                .map(|c| c.rows.column(index).as_ref())
                .collect();
            let column = if picks.is_empty() {
                new_null_array(schema.field(index).data_type(), 0)
            } else {
                interleave(&arrays, &picks)
                    .map_err(ConnectorError::internal("picking the changes' rows"))?
            };
            columns.push(column);
        }
        let upserts = RecordBatch::try_new(std::sync::Arc::new(Schema::new(fields)), columns)
            .map_err(ConnectorError::internal("the changes' rows"))?;
        Ok(LatestRows {
            upserts,
            deleted_keys,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{AsArray, Int64Array};
    use arrow::datatypes::Int64Type;

    use super::*;

    fn changes(rows: &[(&str, Option<i64>)]) -> Changes {
        let schema = Arc::new(Schema::new(vec![Field::new("hits", DataType::Int64, true)]));
        let hits = Int64Array::from_iter(rows.iter().map(|(_, hits)| *hits));
        Changes {
            keys: rows.iter().map(|(key, _)| key.to_string()).collect(),
            rows: RecordBatch::try_new(schema, vec![Arc::new(hits)]).unwrap(),
            deleted: rows.iter().map(|(_, hits)| hits.is_none()).collect(),
        }
    }

    #[test]
    fn the_last_change_of_each_key_wins_across_batches() {
        let first = changes(&[("/a", Some(1)), ("/b", Some(1)), ("/a", Some(2))]);
        let second = changes(&[("/b", None), ("/c", Some(7)), ("/d", None), ("/a", Some(3))]);
        let third = changes(&[("/d", Some(1)), ("/c", None)]);
        let latest = Changes::latest(&[first, second, third], "_key").unwrap();
        assert_eq!(latest.deleted_keys, vec!["/b", "/c"]);
        let upserts = &latest.upserts;
        assert_eq!(upserts.schema().field(0).name(), "_key");
        let keys: Vec<&str> = upserts
            .column(0)
            .as_string::<i32>()
            .iter()
            .flatten()
            .collect();
        let hits: Vec<i64> = upserts
            .column(1)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec();
        assert_eq!(keys, vec!["/a", "/d"]);
        assert_eq!(hits, vec![3, 1]);
    }
}
