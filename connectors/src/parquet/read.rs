//! Reading what a Parquet sink published (for `weir sql --parquet`, summaries and tests).

use std::collections::BTreeMap;
use std::fs::File;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::ChunkReader;

use super::store::{self, published_files};

use crate::error::ConnectorError;

/// Every row of the published Parquet files under `root`, a local directory, at most
/// `max_rows` (beyond: an error, not a silent part).
pub fn read_published(
    root: &Path,
    max_rows: usize,
) -> Result<(SchemaRef, Vec<RecordBatch>), ConnectorError> {
    let mut collected = Collected::new(root.display().to_string(), max_rows);
    for path in published_files(root) {
        let file = File::open(&path).map_err(ConnectorError::io("opening", &path))?;
        collected.add(&path.display().to_string(), file)?;
    }
    collected.finish()
}

/// [`read_published`] for any place a sink publishes to: a local directory or `s3://bucket/prefix`
/// (settings from the `AWS_*` environment and `storage_options`).
///
/// Boxed so that the object store's reading is compiled once, in this crate.
pub fn read_published_at<'a>(
    location: &'a str,
    storage_options: &'a BTreeMap<String, String>,
    max_rows: usize,
) -> Pin<Box<dyn Future<Output = Result<Published, ConnectorError>> + Send + 'a>> {
    Box::pin(read_location(location, storage_options, max_rows))
}

/// A published table's schema and rows.
pub type Published = (SchemaRef, Vec<RecordBatch>);

async fn read_location(
    location: &str,
    storage_options: &BTreeMap<String, String>,
    max_rows: usize,
) -> Result<Published, ConnectorError> {
    let store = store::open_location(location, storage_options)?;
    let mut collected = Collected::new(location.to_string(), max_rows);
    for relative in store.list_published().await? {
        let bytes = store.read(&relative).await?;
        collected.add(&store.locate(&relative), bytes)?;
    }
    collected.finish()
}

/// Batches read so far, bounded by a row count.
struct Collected {
    location: String,
    max_rows: usize,
    rows: usize,
    files: usize,
    schema: Option<SchemaRef>,
    batches: Vec<RecordBatch>,
}

impl Collected {
    fn new(location: String, max_rows: usize) -> Self {
        Collected {
            location,
            max_rows,
            rows: 0,
            files: 0,
            schema: None,
            batches: Vec::new(),
        }
    }

    fn add<R: ChunkReader + 'static>(&mut self, name: &str, file: R) -> Result<(), ConnectorError> {
        let failed = |e: &dyn std::fmt::Display| ConnectorError::Corrupt {
            location: name.to_string(),
            reason: e.to_string(),
        };
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|builder| builder.build())
            .map_err(|e| failed(&e))?;
        self.files += 1;
        for batch in reader {
            let batch = batch.map_err(|e| failed(&e))?;
            self.rows += batch.num_rows();
            if self.rows > self.max_rows {
                return Err(ConnectorError::Limit {
                    what: format!("{} holds more than {} rows", self.location, self.max_rows),
                    hint: "raise the limit of rows read".into(),
                });
            }
            self.schema.get_or_insert_with(|| batch.schema());
            self.batches.push(batch);
        }
        Ok(())
    }

    fn finish(self) -> Result<(SchemaRef, Vec<RecordBatch>), ConnectorError> {
        if self.files == 0 {
            return Err(ConnectorError::Config(format!(
                "no published Parquet files under {}",
                self.location
            )));
        }
        let schema = self.schema.unwrap_or_else(|| Arc::new(Schema::empty()));
        Ok((schema, self.batches))
    }
}
