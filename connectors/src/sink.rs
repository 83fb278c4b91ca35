//! What a sink is: rows written, then made visible together with the source offsets they came
//! from, in one atomic step. A sink keeps those offsets itself (a manifest, a database table),
//! so after a crash the pipeline resumes from exactly what the sink holds: replays never
//! duplicate rows.

use std::collections::BTreeMap;
use std::time::Duration;

use arrow::datatypes::SchemaRef;
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
