//! The Parquet sink: open files per partition directory, publication by manifest.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::UInt32Array;
use arrow::compute::take_record_batch;
use arrow::datatypes::{Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::async_writer::AsyncFileWriter;
use parquet::arrow::AsyncArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::config::{ParquetCompression, ParquetSinkConfig};
use super::manifest::{Manifest, PublishedFile, STAGING_DIR};
use super::partitioning::{row_directories, PartitionSpec};
use super::store::{self, FileStore};
use crate::error::ConnectorError;
use crate::sink::{Sink, SinkOffsets, SinkStats};
use weir_client::Remedy;

struct OpenFile {
    writer: AsyncArrowWriter<Box<dyn AsyncFileWriter>>,
    /// Relative to the sink's root.
    staging: String,
    directory: String,
    rows: u64,
}

pub struct ParquetSink {
    config: ParquetSinkConfig,
    store: Box<dyn FileStore>,
    specs: Vec<PartitionSpec>,
    /// The input columns that go into the files (value-partition columns live in directory
    /// names instead).
    file_columns: Vec<usize>,
    file_schema: SchemaRef,
    files: HashMap<String, OpenFile>,
    oldest_open: Option<Instant>,
    /// The sequence of the next manifest.
    sequence: u64,
    files_this_sequence: u32,
    committed: SinkOffsets,
    stats: SinkStats,
}

impl ParquetSink {
    pub fn new(config: ParquetSinkConfig) -> Result<Self, ConnectorError> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(ConnectorError::Config(problems.join("; ")));
        }
        let specs = config
            .partition_by
            .iter()
            .map(|spec| PartitionSpec::parse(spec).map_err(ConnectorError::Config))
            .collect::<Result<_, _>>()?;
        Ok(ParquetSink {
            store: store::open_location(&config.path, &config.storage_options)?,
            config,
            specs,
            file_columns: Vec::new(),
            file_schema: Arc::new(Schema::empty()),
            files: HashMap::new(),
            oldest_open: None,
            sequence: 1,
            files_this_sequence: 0,
            committed: SinkOffsets::new(),
            stats: SinkStats::default(),
        })
    }

    /// Finishes what a crash interrupted: the newest manifest's files still staged are
    /// published, every other staged file is deleted.
    async fn recover(&mut self) -> Result<(), ConnectorError> {
        self.store.prepare().await?;
        if let Some(latest) = self.store.latest_manifest().await? {
            self.store.publish(&latest.files).await?;
            self.sequence = latest.sequence + 1;
            self.committed = latest.offsets;
        }
        self.store.discard_staged().await
    }

    fn properties(&self) -> WriterProperties {
        let compression = match self.config.compression {
            ParquetCompression::None => Compression::UNCOMPRESSED,
            ParquetCompression::Snappy => Compression::SNAPPY,
            ParquetCompression::Zstd => Compression::ZSTD(ZstdLevel::default()),
        };
        WriterProperties::builder()
            .set_compression(compression)
            .set_max_row_group_row_count(Some(self.config.row_group_rows))
            .set_created_by(format!("weir {}", env!("CARGO_PKG_VERSION")))
            .build()
    }

    /// Opens a file for `directory` unless one is open.
    async fn open_file(&mut self, directory: &str) -> Result<(), ConnectorError> {
        if !self.files.contains_key(directory) {
            if self.files.len() >= self.config.max_open_partitions {
                return Err(ConnectorError::Limit {
                    what: format!(
                        "more than max_open_partitions ({}) partition directories between two \
                         commits",
                        self.config.max_open_partitions
                    ),
                    hint: "raise it or partition more coarsely".into(),
                });
            }
            let staging = format!(
                "{STAGING_DIR}/{:010}-{:05}.parquet.inprogress",
                self.sequence, self.files_this_sequence
            );
            self.files_this_sequence += 1;
            let file = self.store.create_staged(&staging).await?;
            let writer = AsyncArrowWriter::try_new(
                file,
                Arc::clone(&self.file_schema),
                Some(self.properties()),
            )
            .map_err(|e| {
                let location = self.store.locate(&staging);
                ConnectorError::target(location, "starting a file", Remedy::Retry, e)
            })?;
            self.oldest_open.get_or_insert_with(Instant::now);
            self.files.insert(
                directory.to_string(),
                OpenFile {
                    writer,
                    staging,
                    directory: directory.to_string(),
                    rows: 0,
                },
            );
        }
        Ok(())
    }

    async fn append(&mut self, directory: &str, rows: &RecordBatch) -> Result<(), ConnectorError> {
        let rows = rows
            .project(&self.file_columns)
            .map_err(ConnectorError::internal("projecting rows"))?;
        self.open_file(directory).await?;
        let Some(file) = self.files.get_mut(directory) else {
            return Err(ConnectorError::Internal("open file vanished".into()));
        };
        if let Err(e) = file.writer.write(&rows).await {
            let location = self.store.locate(&file.staging);
            return Err(ConnectorError::target(
                location,
                "writing",
                Remedy::Retry,
                e,
            ));
        }
        file.rows += rows.num_rows() as u64;
        Ok(())
    }

    /// Closes every open file durably; returns what the manifest will publish.
    pub(super) async fn close_files(&mut self) -> Result<Vec<PublishedFile>, ConnectorError> {
        let mut published = Vec::new();
        let mut files: Vec<OpenFile> = self.files.drain().map(|(_, file)| file).collect();
        files.sort_by(|a, b| a.staging.cmp(&b.staging));
        for (index, mut open) in files.into_iter().enumerate() {
            open.writer.finish().await.map_err(|e| {
                let location = self.store.locate(&open.staging);
                ConnectorError::target(location, "finishing", Remedy::Retry, e)
            })?;
            let bytes = self.store.seal_staged(&open.staging).await?;
            let name = format!("part-{:010}-{index:05}.parquet", self.sequence);
            let path = if open.directory.is_empty() {
                name
            } else {
                format!("{}/{name}", open.directory)
            };
            published.push(PublishedFile {
                staging: open.staging,
                path,
                rows: open.rows,
                bytes,
            });
        }
        self.oldest_open = None;
        Ok(published)
    }

    fn open_bytes(&self) -> u64 {
        self.files
            .values()
            .map(|f| (f.writer.bytes_written() + f.writer.in_progress_size()) as u64)
            .max()
            .unwrap_or(0)
    }
}

#[async_trait::async_trait]
impl Sink for ParquetSink {
    async fn open(&mut self, schema: SchemaRef) -> Result<SinkOffsets, ConnectorError> {
        for spec in &self.specs {
            spec.check(&schema)?;
        }
        let value_columns: Vec<&str> = self
            .specs
            .iter()
            .filter_map(|s| matches!(s, PartitionSpec::Value(_)).then_some(s.column()))
            .collect();
        self.file_columns = (0..schema.fields().len())
            .filter(|i| !value_columns.contains(&schema.field(*i).name().as_str()))
            .collect();
        self.file_schema = Arc::new(
            schema
                .project(&self.file_columns)
                .map_err(ConnectorError::internal("the files' schema"))?,
        );
        self.recover().await?;
        Ok(self.committed.clone())
    }

    async fn write(&mut self, batch: &RecordBatch) -> Result<(), ConnectorError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if self.specs.is_empty() {
            return self.append("", batch).await;
        }
        let directories = row_directories(batch, &self.specs)?;
        let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
        let mut group_of: HashMap<&str, usize> = HashMap::new();
        for (row, directory) in directories.iter().enumerate() {
            let group = *group_of.entry(directory).or_insert_with(|| {
                groups.push((directory.clone(), Vec::new()));
                groups.len() - 1
            });
            groups[group].1.push(row as u32);
        }
        for (directory, rows) in groups {
            let rows = take_record_batch(batch, &UInt32Array::from(rows))
                .map_err(ConnectorError::internal("splitting rows by partition"))?;
            self.append(&directory, &rows).await?;
        }
        Ok(())
    }

    fn should_commit(&self, since_commit: Duration) -> bool {
        let max_age = Duration::from_millis(self.config.max_file_age_ms);
        match self.oldest_open {
            Some(opened) => {
                opened.elapsed() >= max_age || self.open_bytes() >= self.config.target_file_bytes
            }
            None => since_commit >= max_age,
        }
    }

    async fn commit(&mut self, offsets: &SinkOffsets) -> Result<(), ConnectorError> {
        if self.files.is_empty() && *offsets == self.committed {
            return Ok(());
        }
        let files = self.close_files().await?;
        let manifest = Manifest {
            sequence: self.sequence,
            offsets: offsets.clone(),
            files,
            committed_at_ms: now_ms(),
        };
        self.store.write_manifest(&manifest).await?;
        self.store.publish(&manifest.files).await?;
        self.store
            .prune_manifests(self.config.manifests_kept)
            .await?;
        self.stats.commits += 1;
        self.stats.files_published += manifest.files.len() as u64;
        self.stats.rows_committed += manifest.files.iter().map(|f| f.rows).sum::<u64>();
        tracing::debug!(
            sequence = manifest.sequence,
            files = manifest.files.len(),
            "parquet files published"
        );
        self.committed = manifest.offsets;
        self.sequence += 1;
        self.files_this_sequence = 0;
        Ok(())
    }

    fn stats(&self) -> SinkStats {
        self.stats
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
