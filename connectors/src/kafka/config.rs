//! The `kafka` source's and sink's YAML settings.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
#[cfg(feature = "runtime")]
use weir_client::ClientSettings;

use crate::weblog::LogFormat;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StartAt {
    /// Partitions without a stored position start at their first record.
    #[default]
    Earliest,
    /// …at their end (only new records).
    Latest,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaSourceConfig {
    /// The far cluster, e.g. `kafka-1:9092,kafka-2:9092`.
    pub bootstrap: String,
    pub topic: String,
    /// How values are parsed (`json`, `raw`, or an access-log format for topics of log lines).
    pub format: LogFormat,
    #[serde(default)]
    pub start_at: StartAt,
    /// A consumer group on the far cluster: partitions the pipeline has no position for yet
    /// start at the group's committed offsets (taking over from an existing consumer), and the
    /// pipeline's committed positions are committed to the group too, so the far cluster's
    /// lag tools see its progress. The pipeline's own positions stay the source of truth.
    #[serde(default)]
    pub group_id: Option<String>,
    /// librdkafka properties for the far cluster (`security.protocol`, `sasl.*`, `ssl.*`, …).
    #[serde(default)]
    pub client_properties: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaSinkConfig {
    /// The far cluster.
    pub bootstrap: String,
    pub topic: String,
    /// A column whose value (as text) becomes the record key.
    #[serde(default)]
    pub key_column: Option<String>,
    /// Partitions of the topic when the sink creates it.
    #[serde(default = "default_partitions")]
    pub partitions: i32,
    /// A commit (one transaction on the far cluster) once this many rows are waiting…
    #[serde(default = "default_batch_rows")]
    pub batch_rows: usize,
    /// …or this long after the last one.
    #[serde(default = "default_commit_interval_ms")]
    pub commit_interval_ms: u64,
    #[serde(default)]
    pub client_properties: BTreeMap<String, String>,
}

fn default_partitions() -> i32 {
    1
}
fn default_batch_rows() -> usize {
    50_000
}
fn default_commit_interval_ms() -> u64 {
    1000
}

impl KafkaSourceConfig {
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.bootstrap.trim().is_empty() {
            problems.push("bootstrap: the far cluster's address is needed".into());
        }
        if self.topic.trim().is_empty() {
            problems.push("topic: a topic is needed".into());
        }
        problems
    }

    /// The far cluster and its client properties.
    #[cfg(feature = "runtime")]
    pub fn client(&self) -> ClientSettings {
        ClientSettings::new(&self.bootstrap).with_properties(self.client_properties.clone())
    }

    /// The position key of a far partition.
    pub fn position_key(&self, partition: i32) -> String {
        format!("kafka:{}:{partition}", self.topic)
    }
}

impl KafkaSinkConfig {
    pub fn new(bootstrap: &str, topic: &str) -> Self {
        KafkaSinkConfig {
            bootstrap: bootstrap.into(),
            topic: topic.into(),
            key_column: None,
            partitions: default_partitions(),
            batch_rows: default_batch_rows(),
            commit_interval_ms: default_commit_interval_ms(),
            client_properties: BTreeMap::new(),
        }
    }

    /// The far cluster and its client properties.
    #[cfg(feature = "runtime")]
    pub fn client(&self) -> ClientSettings {
        ClientSettings::new(&self.bootstrap).with_properties(self.client_properties.clone())
    }

    /// What is wrong with `key_column` for rows of `rows`' columns (an updating aggregate's
    /// changes when `changes`: keyed by their group already).
    #[cfg(feature = "runtime")]
    pub fn key_column_problem(
        &self,
        rows: &arrow::datatypes::Schema,
        changes: bool,
    ) -> Option<String> {
        let column = self.key_column.as_ref()?;
        if changes {
            return Some(
                "key_column: an updating aggregate's records are keyed by their group; leave \
                 key_column out"
                    .into(),
            );
        }
        let names: Vec<&str> = rows.fields().iter().map(|f| f.name().as_str()).collect();
        (!names.contains(&column.as_str())).then(|| {
            format!(
                "key_column: no column '{column}' in the rows (they have {})",
                names.join(", ")
            )
        })
    }

    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.bootstrap.trim().is_empty() {
            problems.push("bootstrap: the far cluster's address is needed".into());
        }
        if self.topic.trim().is_empty() {
            problems.push("topic: a topic is needed".into());
        }
        if self.partitions < 1 || self.batch_rows == 0 || self.commit_interval_ms == 0 {
            problems.push("partitions, batch_rows and commit_interval_ms must be positive".into());
        }
        problems
    }
}

#[cfg(feature = "runtime")]
impl crate::connector::SourceConnector for KafkaSourceConfig {
    fn problems(&self) -> Vec<String> {
        KafkaSourceConfig::problems(self)
    }

    fn format(&self) -> LogFormat {
        self.format
    }

    /// The far cluster, with the reason it cannot be used (a refused login, an untrusted
    /// certificate, no Describe on the topic…).
    fn reach(&self, timeout: std::time::Duration) -> Result<(), crate::connector::Unreachable> {
        far_cluster(&self.client(), &self.bootstrap, &self.topic, timeout)
    }

    fn open(&self) -> Result<Box<dyn crate::source::Source>, crate::ConnectorError> {
        Ok(Box::new(super::KafkaSource::new(self.clone())?))
    }
}

#[cfg(feature = "runtime")]
#[async_trait::async_trait]
impl crate::connector::SinkConnector for KafkaSinkConfig {
    fn applies_changes(&self) -> bool {
        true
    }

    fn problems(&self) -> Vec<String> {
        KafkaSinkConfig::problems(self)
    }

    fn rows_problems(&self, rows: &arrow::datatypes::Schema, changes: bool) -> Vec<String> {
        self.key_column_problem(rows, changes).into_iter().collect()
    }

    fn open(
        &self,
        target: &crate::connector::SinkTarget<'_>,
    ) -> Result<Box<dyn crate::sink::Sink>, crate::ConnectorError> {
        let sink = super::KafkaSink::new(self.clone(), target.pipeline, target.topic)?;
        Ok(Box::new(sink))
    }

    /// The far cluster, with the reason it cannot be used (a refused login, an untrusted
    /// certificate, no Describe on the topic…).
    async fn reach(
        &self,
        timeout: std::time::Duration,
    ) -> Result<(), crate::connector::Unreachable> {
        let client = self.client();
        tokio::task::block_in_place(|| far_cluster(&client, &self.bootstrap, &self.topic, timeout))
    }
}

/// Whether the cluster at `bootstrap` can be used for `topic`, as a problem of the connector's
/// `bootstrap` field.
#[cfg(feature = "runtime")]
fn far_cluster(
    client: &ClientSettings,
    bootstrap: &str,
    topic: &str,
    timeout: std::time::Duration,
) -> Result<(), crate::connector::Unreachable> {
    client
        .reach_for(&[topic], timeout)
        .map_err(|unreached| crate::connector::Unreachable {
            field: "bootstrap",
            message: format!("cluster {bootstrap} cannot be used: {}", unreached.message),
            hint: unreached.hint,
        })
}
