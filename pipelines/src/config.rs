//! A pipeline as its YAML declares it. Unknown fields are errors everywhere.
//!
//! ```yaml
//! name: weblogs
//! source: { kind: file, paths: [/var/log/nginx/access.log*], format: nginx_combined }
//! topic: { name: weblogs-raw, partitions: 3 }
//! transform:
//!   table: requests
//!   sql: SELECT timestamp, status, path FROM requests WHERE status >= 400
//! sinks:
//!   - { kind: parquet, path: ./warehouse/errors, partition_by: ["date(timestamp)"] }
//!   - { kind: postgres, url: "postgres://weir@localhost/analytics", table: errors }
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
#[cfg(feature = "runtime")]
use weir_client::ClientSettings;
/// The source and sink configs, by `kind:`, come from the connectors' registry.
pub use weir_connectors::registry::{SinkConfig, SourceConfig};

/// A file holds one pipeline, or several under `pipelines:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelinesFile {
    pub pipelines: Vec<PipelineConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// Records, positions and sink offsets move together: nothing lost, nothing repeated.
    #[default]
    ExactlyOnce,
    /// No transactions: after a crash some records may be delivered again.
    AtLeastOnce,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// Names the pipeline's topics, transactional ids and offsets: keep it stable.
    pub name: String,
    /// The Kafka cluster (Weir or any Kafka); without it an embedded broker is started.
    #[serde(default)]
    pub bootstrap: Option<String>,
    /// librdkafka properties for every client of the pipeline (security settings, …).
    #[serde(default)]
    pub client_properties: BTreeMap<String, String>,
    pub source: SourceConfig,
    /// The topic the source's records land in.
    #[serde(default)]
    pub topic: TopicConfig,
    /// Where lines that do not parse go, with the reason in a header (default `<topic>-dead-letters`).
    #[serde(default)]
    pub dead_letter_topic: Option<String>,
    /// The columns of `json` records (`name:type,…`, types string, int, float, bool,
    /// timestamp); access-log formats have their columns already, `raw` has one, `value`.
    #[serde(default)]
    pub schema: Option<String>,
    #[serde(default)]
    pub transform: Option<TransformConfig>,
    #[serde(default)]
    pub sinks: Vec<SinkConfig>,
    #[serde(default)]
    pub delivery: Delivery,
    /// How often the source commits (a transaction with its records and positions).
    #[serde(default = "default_checkpoint_interval_ms")]
    pub checkpoint_interval_ms: u64,
    /// The most records per source checkpoint (bounds memory).
    #[serde(default = "default_checkpoint_max_records")]
    pub checkpoint_max_records: usize,
    /// How much runs at once: the default number of the topic's partitions (`topic.partitions`
    /// wins), the copies of a windowed transform's job, and each sink stage's row workers
    /// (decoding and the stateless SQL). Each sink commits from one stage per process.
    #[serde(default = "default_parallelism")]
    pub parallelism: usize,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicConfig {
    /// Default `<pipeline>-raw`.
    #[serde(default)]
    pub name: Option<String>,
    /// Default: the pipeline's parallelism.
    #[serde(default)]
    pub partitions: Option<i32>,
    /// Default: the cluster's `default.replication.factor`.
    #[serde(default)]
    pub replication_factor: Option<i32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformConfig {
    pub sql: String,
    /// The topic's table name in the query (default `input`).
    #[serde(default = "default_table")]
    pub table: String,
    /// Windowed queries: how late a record may be (event time behind its partition's largest).
    #[serde(default)]
    pub allowed_lateness_ms: i64,
    /// Windowed queries and interval joins: an input partition without records for this long
    /// stops holding the watermark back until it has records again (default: never).
    #[serde(default)]
    pub idle_timeout_ms: Option<u64>,
    /// Windowed queries: the most groups the open windows may hold (and joins: the most
    /// versions a table may hold).
    #[serde(default = "default_max_state_entries")]
    pub max_state_entries: usize,
    /// Tables the query joins the topic with: the latest value per key of a topic (a record
    /// without a value deletes its key; created compacted when missing), as of each record's
    /// event time (`JOIN name t ON … = t._key`).
    #[serde(default)]
    pub tables: Vec<TableConfig>,
    /// Other streams the query joins the topic with within a time bound (an interval join:
    /// `JOIN name p ON … AND p.time BETWEEN r.time - INTERVAL … AND r.time`); their topics are
    /// created when missing with the pipeline topic's partitions.
    #[serde(default)]
    pub streams: Vec<TableConfig>,
    /// Tables: how far back (ms) from the newest update of a table versions are kept, so records
    /// up to that much older are joined with the value current at their time.
    #[serde(default = "default_table_history_ms")]
    pub table_history_ms: i64,
}

/// A table or a stream the transform joins with.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableConfig {
    /// Its name in the query.
    pub name: String,
    /// The topic of its records (JSON values; a table's are keyed).
    pub topic: String,
    /// Its values' columns (`name:type,…`, as the pipeline's `schema`).
    pub schema: String,
}

impl TransformConfig {
    /// The transform runs as a job of its own (windows, or tables to keep current).
    pub fn joins_tables(&self) -> bool {
        !self.tables.is_empty()
    }

    /// The transform joins other streams (an interval join, run as a job of its own).
    pub fn joins_streams(&self) -> bool {
        !self.streams.is_empty()
    }

    /// Tables or streams: the job is `<pipeline>-joined`.
    pub fn joins(&self) -> bool {
        self.joins_tables() || self.joins_streams()
    }
}

fn default_checkpoint_interval_ms() -> u64 {
    1000
}
fn default_checkpoint_max_records() -> usize {
    100_000
}
fn default_parallelism() -> usize {
    1
}
fn default_table() -> String {
    "input".into()
}
fn default_max_state_entries() -> usize {
    1_000_000
}
fn default_table_history_ms() -> i64 {
    3_600_000
}

impl PipelineConfig {
    pub fn topic_name(&self) -> String {
        self.topic
            .name
            .clone()
            .unwrap_or_else(|| format!("{}-raw", self.name))
    }

    pub fn topic_partitions(&self) -> i32 {
        self.topic.partitions.unwrap_or(self.parallelism as i32)
    }

    pub fn dead_letter_topic(&self) -> String {
        self.dead_letter_topic
            .clone()
            .unwrap_or_else(|| format!("{}-dead-letters", self.topic_name()))
    }

    /// The compacted topic of the source's positions (file offsets, a bridge's input offsets).
    pub fn positions_topic(&self) -> String {
        format!("weir-{}-source-positions", self.name)
    }

    /// Where a windowed transform sends records too late for their window.
    pub fn late_topic(&self) -> String {
        format!("{}-late", self.topic_name())
    }

    /// The topic a windowed transform (or one joining tables) writes to and the sinks read
    /// (the raw topic otherwise).
    pub fn job_output_topic(&self) -> String {
        match &self.transform {
            Some(transform) if transform.joins() => format!("weir-{}-joined", self.name),
            _ => format!("weir-{}-windows", self.name),
        }
    }

    /// The pipeline's cluster at `bootstrap` (its own, or the embedded broker's) with its
    /// client properties.
    #[cfg(feature = "runtime")]
    pub fn client(&self, bootstrap: &str) -> ClientSettings {
        ClientSettings::new(bootstrap).with_properties(self.client_properties.clone())
    }
}
