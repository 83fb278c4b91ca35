//! The `stdout` sink: each batch printed as JSON lines.

use std::io::Write;
use std::time::Duration;

use arrow::datatypes::SchemaRef;
use arrow::json::LineDelimitedWriter;
use arrow::record_batch::RecordBatch;

use crate::error::ConnectorError;
use crate::sink::{Changes, Sink, SinkOffsets, SinkStats};

use super::StdoutSinkConfig;

#[derive(Default)]
pub struct StdoutSink {
    stats: SinkStats,
    pending_rows: u64,
}

impl StdoutSink {
    pub fn new(_config: StdoutSinkConfig) -> Self {
        StdoutSink::default()
    }
}

#[async_trait::async_trait]
impl Sink for StdoutSink {
    async fn open(&mut self, _schema: SchemaRef) -> Result<SinkOffsets, ConnectorError> {
        Ok(SinkOffsets::new())
    }

    async fn write(&mut self, batch: &RecordBatch) -> Result<(), ConnectorError> {
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        let mut writer = LineDelimitedWriter::new(&mut lock);
        writer
            .write(batch)
            .and_then(|_| writer.finish())
            .map_err(ConnectorError::rows("printing rows"))?;
        lock.flush()
            .map_err(ConnectorError::io("writing", "stdout"))?;
        self.pending_rows += batch.num_rows() as u64;
        Ok(())
    }

    fn expect_changes(&mut self) -> Result<(), ConnectorError> {
        Ok(())
    }

    /// Each change as a line: `{"_key": …, "row": {…}}`, or `{"_key": …, "deleted": true}`.
    async fn apply(&mut self, changes: &Changes) -> Result<(), ConnectorError> {
        let mut rows = Vec::new();
        let mut writer = LineDelimitedWriter::new(&mut rows);
        writer
            .write(&changes.rows)
            .and_then(|_| writer.finish())
            .map_err(ConnectorError::rows("printing rows"))?;
        drop(writer);
        let lines = rows.split(|b| *b == b'\n').filter(|l| !l.is_empty());
        let mut out = Vec::new();
        for ((key, deleted), row) in changes.keys.iter().zip(&changes.deleted).zip(lines) {
            let key = serde_json::to_string(key).unwrap_or_default();
            if *deleted {
                out.extend_from_slice(format!("{{\"_key\":{key},\"deleted\":true}}\n").as_bytes());
            } else {
                out.extend_from_slice(format!("{{\"_key\":{key},\"row\":").as_bytes());
                out.extend_from_slice(row);
                out.extend_from_slice(b"}\n");
            }
        }
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        lock.write_all(&out)
            .and_then(|_| lock.flush())
            .map_err(ConnectorError::io("writing", "stdout"))?;
        self.pending_rows += changes.len() as u64;
        Ok(())
    }

    fn should_commit(&self, since_commit: Duration) -> bool {
        since_commit >= Duration::from_secs(1)
    }

    async fn commit(&mut self, _offsets: &SinkOffsets) -> Result<(), ConnectorError> {
        self.stats.rows_committed += std::mem::take(&mut self.pending_rows);
        self.stats.commits += 1;
        Ok(())
    }

    fn stats(&self) -> SinkStats {
        self.stats
    }

    /// Each copy prints what it reads (there are no offsets to keep).
    fn shares_partitions(&self) -> bool {
        true
    }
}
