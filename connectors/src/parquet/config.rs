//! The `parquet` sink's YAML settings.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ParquetCompression {
    None,
    #[default]
    Snappy,
    Zstd,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ParquetSinkConfig {
    /// Where the files are published: a local directory, or `s3://bucket/prefix` on any
    /// S3-compatible object store.
    pub path: String,
    /// Settings of the object store (`object_store`'s S3 keys: `aws_endpoint`, `aws_region`,
    /// `aws_access_key_id`, `aws_secret_access_key`, `aws_allow_http`, …), on top of the
    /// `AWS_*` environment variables.
    #[serde(default)]
    pub storage_options: BTreeMap<String, String>,
    /// Hive-style directories, outermost first: `date(column)` (`date=YYYY-MM-DD`, UTC),
    /// `hour(column)` (`hour=HH`), or a column name (`column=value`; the column then lives in
    /// the directory name, not in the file, as Hive does).
    #[serde(default)]
    pub partition_by: Vec<String>,
    /// Files are published once one of them reaches this size…
    #[serde(default = "default_target_file_bytes")]
    pub target_file_bytes: u64,
    /// …or the oldest has been open this long (so data shows up without a swarm of tiny files).
    #[serde(default = "default_max_file_age_ms")]
    pub max_file_age_ms: u64,
    #[serde(default)]
    pub compression: ParquetCompression,
    /// Rows per row group (Parquet's unit of reading).
    #[serde(default = "default_row_group_rows")]
    pub row_group_rows: usize,
    /// The most partition directories written at once (each holds an open file in memory).
    #[serde(default = "default_max_open_partitions")]
    pub max_open_partitions: usize,
    /// Manifests kept (each records every file it published and the offsets).
    #[serde(default = "default_manifests_kept")]
    pub manifests_kept: usize,
}

fn default_target_file_bytes() -> u64 {
    128 * 1024 * 1024
}
fn default_max_file_age_ms() -> u64 {
    300_000
}
fn default_row_group_rows() -> usize {
    128 * 1024
}
fn default_max_open_partitions() -> usize {
    256
}
fn default_manifests_kept() -> usize {
    100
}

impl ParquetSinkConfig {
    pub fn new(path: &str) -> Self {
        ParquetSinkConfig {
            path: path.into(),
            storage_options: BTreeMap::new(),
            partition_by: Vec::new(),
            target_file_bytes: default_target_file_bytes(),
            max_file_age_ms: default_max_file_age_ms(),
            compression: ParquetCompression::default(),
            row_group_rows: default_row_group_rows(),
            max_open_partitions: default_max_open_partitions(),
            manifests_kept: default_manifests_kept(),
        }
    }

    #[cfg(feature = "runtime")]
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.path.is_empty() {
            problems.push("path: a directory is needed".to_string());
        }
        problems.extend(super::store::object_store_problems(
            &self.path,
            &self.storage_options,
        ));
        if self.target_file_bytes == 0 || self.max_file_age_ms == 0 || self.row_group_rows == 0 {
            problems.push(
                "target_file_bytes, max_file_age_ms and row_group_rows must be positive".into(),
            );
        }
        if self.max_open_partitions == 0 || self.manifests_kept == 0 {
            problems.push("max_open_partitions and manifests_kept must be positive".into());
        }
        for spec in &self.partition_by {
            if let Err(problem) = super::partitioning::PartitionSpec::parse(spec) {
                problems.push(format!("partition_by: {problem}"));
            }
        }
        problems
    }
}

#[cfg(feature = "runtime")]
#[async_trait::async_trait]
impl crate::connector::SinkConnector for ParquetSinkConfig {
    fn problems(&self) -> Vec<String> {
        ParquetSinkConfig::problems(self)
    }

    fn open(
        &self,
        _target: &crate::connector::SinkTarget<'_>,
    ) -> Result<Box<dyn crate::sink::Sink>, crate::ConnectorError> {
        Ok(Box::new(super::ParquetSink::new(self.clone())?))
    }

    async fn reach(
        &self,
        timeout: std::time::Duration,
    ) -> Result<(), crate::connector::Unreachable> {
        let message = match tokio::time::timeout(
            timeout,
            super::store::reach(&self.path, &self.storage_options),
        )
        .await
        {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(error)) => error.to_string(),
            Err(_) => format!("no answer within {} s", timeout.as_secs()),
        };
        Err(crate::connector::Unreachable {
            field: "path",
            message: format!("the object store does not answer: {message}"),
            hint: Some(
                "check storage_options (aws_endpoint, aws_region, credentials) and the AWS_* \
                 environment"
                    .into(),
            ),
        })
    }
}
