//! The Parquet sink: open files per partition directory, publication by manifest.

use std::collections::{BTreeSet, HashMap};
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::UInt32Array;
use arrow::compute::take_record_batch;
use arrow::datatypes::{Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::config::{ParquetCompression, ParquetSinkConfig};
use super::manifest::{self, Manifest, PublishedFile};
use super::partitioning::{row_directories, PartitionSpec};
use crate::error::ConnectorError;
use crate::sink::{Sink, SinkOffsets, SinkStats};

struct OpenFile {
    writer: ArrowWriter<File>,
    /// Relative to the sink's directory.
    staging: String,
    directory: String,
    rows: u64,
}

pub struct ParquetSink {
    config: ParquetSinkConfig,
    root: PathBuf,
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
            root: PathBuf::from(&config.path),
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

    /// Finishes what a crash interrupted: the newest manifest's files are moved into place,
    /// every other staged file is deleted.
    fn recover(&mut self) -> Result<(), ConnectorError> {
        let staging = manifest::staging_dir(&self.root);
        for dir in [&staging, &manifest::manifests_dir(&self.root)] {
            fs::create_dir_all(dir).map_err(ConnectorError::io("creating", dir))?;
        }
        if let Some(latest) = manifest::latest(&self.root)? {
            self.publish(&latest.files)?;
            self.sequence = latest.sequence + 1;
            self.committed = latest.offsets;
        }
        for entry in fs::read_dir(&staging).map_err(ConnectorError::io("listing", &staging))? {
            let path = entry
                .map_err(ConnectorError::io("listing", &staging))?
                .path();
            tracing::info!(path = %path.display(), "deleting a file written after the last commit");
            fs::remove_file(&path).map_err(ConnectorError::io("deleting", &path))?;
        }
        Ok(())
    }

    /// Moves staged files into place (those not there yet) and makes the renames durable.
    fn publish(&self, files: &[PublishedFile]) -> Result<(), ConnectorError> {
        let mut directories = BTreeSet::new();
        for file in files {
            let staged = self.root.join(&file.staging);
            let published = self.root.join(&file.path);
            if !staged.exists() {
                continue;
            }
            let directory = published.parent().unwrap_or(&self.root).to_path_buf();
            fs::create_dir_all(&directory).map_err(ConnectorError::io("creating", &directory))?;
            fs::rename(&staged, &published).map_err(ConnectorError::io("publishing", &staged))?;
            directories.insert(directory);
        }
        directories.insert(manifest::staging_dir(&self.root));
        for directory in directories {
            manifest::sync_dir(&directory)?;
        }
        Ok(())
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

    fn file_for(&mut self, directory: &str) -> Result<&mut OpenFile, ConnectorError> {
        if !self.files.contains_key(directory) {
            if self.files.len() >= self.config.max_open_partitions {
                return Err(ConnectorError::Sink(format!(
                    "more than max_open_partitions ({}) partition directories between two commits; \
                     raise it or partition more coarsely",
                    self.config.max_open_partitions
                )));
            }
            let staging = format!(
                "_weir/staging/{:010}-{:05}.parquet.inprogress",
                self.sequence, self.files_this_sequence
            );
            self.files_this_sequence += 1;
            let path = self.root.join(&staging);
            let file = File::create(&path).map_err(ConnectorError::io("creating", &path))?;
            let writer =
                ArrowWriter::try_new(file, Arc::clone(&self.file_schema), Some(self.properties()))
                    .map_err(|e| {
                        ConnectorError::Sink(format!("cannot start {}: {e}", path.display()))
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
        self.files
            .get_mut(directory)
            .ok_or_else(|| ConnectorError::Sink("open file vanished".into()))
    }

    fn append(&mut self, directory: &str, rows: &RecordBatch) -> Result<(), ConnectorError> {
        let rows = rows
            .project(&self.file_columns)
            .map_err(|e| ConnectorError::Sink(format!("projecting rows: {e}")))?;
        let file = self.file_for(directory)?;
        file.writer
            .write(&rows)
            .map_err(|e| ConnectorError::Sink(format!("writing {}: {e}", file.staging)))?;
        file.rows += rows.num_rows() as u64;
        Ok(())
    }

    /// Closes every open file durably; returns what the manifest will publish.
    pub(super) fn close_files(&mut self) -> Result<Vec<PublishedFile>, ConnectorError> {
        let mut published = Vec::new();
        let mut files: Vec<OpenFile> = self.files.drain().map(|(_, file)| file).collect();
        files.sort_by(|a, b| a.staging.cmp(&b.staging));
        for (index, open) in files.into_iter().enumerate() {
            let staged = self.root.join(&open.staging);
            let file = open.writer.into_inner().map_err(|e| {
                ConnectorError::Sink(format!("finishing {}: {e}", staged.display()))
            })?;
            file.sync_all()
                .map_err(ConnectorError::io("syncing", &staged))?;
            let bytes = file
                .metadata()
                .map_err(ConnectorError::io("reading", &staged))?
                .len();
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
                .map_err(|e| ConnectorError::Sink(format!("file schema: {e}")))?,
        );
        self.recover()?;
        Ok(self.committed.clone())
    }

    async fn write(&mut self, batch: &RecordBatch) -> Result<(), ConnectorError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if self.specs.is_empty() {
            return self.append("", batch);
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
                .map_err(|e| ConnectorError::Sink(format!("splitting rows by partition: {e}")))?;
            self.append(&directory, &rows)?;
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
        let files = self.close_files()?;
        let manifest = Manifest {
            sequence: self.sequence,
            offsets: offsets.clone(),
            files,
            committed_at_ms: now_ms(),
        };
        manifest::write(&self.root, &manifest)?;
        self.publish(&manifest.files)?;
        manifest::prune(&self.root, self.config.manifests_kept)?;
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

/// Every row of the published Parquet files under `root`, at most `max_rows` (beyond: an
/// error, not a silent part).
pub fn read_published(
    root: &Path,
    max_rows: usize,
) -> Result<(SchemaRef, Vec<RecordBatch>), ConnectorError> {
    let files = published_files(root);
    if files.is_empty() {
        return Err(ConnectorError::Sink(format!(
            "no published Parquet files under {}",
            root.display()
        )));
    }
    let mut schema = None;
    let mut batches = Vec::new();
    let mut rows = 0;
    for path in files {
        let file = File::open(&path).map_err(ConnectorError::io("opening", &path))?;
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|builder| builder.build())
            .map_err(|e| ConnectorError::Sink(format!("reading {}: {e}", path.display())))?;
        for batch in reader {
            let batch = batch
                .map_err(|e| ConnectorError::Sink(format!("reading {}: {e}", path.display())))?;
            rows += batch.num_rows();
            if rows > max_rows {
                return Err(ConnectorError::Sink(format!(
                    "{} holds more than {max_rows} rows",
                    root.display()
                )));
            }
            schema.get_or_insert_with(|| batch.schema());
            batches.push(batch);
        }
    }
    let schema = schema.unwrap_or_else(|| Arc::new(Schema::empty()));
    Ok((schema, batches))
}

/// The published Parquet files under `root` (for tests and summaries).
pub fn published_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && entry.file_name() != "_weir" {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "parquet") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
