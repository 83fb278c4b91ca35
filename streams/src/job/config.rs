//! A job's settings.

use std::collections::{BTreeMap, BTreeSet};

use datafusion::arrow::datatypes::Schema;

use weir_client::ClientSettings;

use crate::error::{Result, StreamsError};
use crate::record::ValueFormat;

#[derive(Debug, Clone)]
pub struct JobConfig {
    /// The job's name: its consumer group, and the prefix of its transactional ids.
    pub name: String,
    /// This copy of the job: copies with the same name share the input's partitions. Stable
    /// across restarts, so that a restarted copy fences its previous incarnation at once.
    pub instance_id: String,
    /// The cluster, and the extra librdkafka properties (e.g. security) of every client.
    pub client: ClientSettings,
    /// The input topics; each is a table of the query, named after it (with one input, `table`
    /// overrides the name). A windowed query reads one input.
    pub inputs: Vec<String>,
    pub output: String,
    pub query: String,
    pub table: Option<String>,
    /// The query's table of each input, in the order of `inputs` (empty: each is named after
    /// its topic, or `table`).
    pub input_names: Vec<String>,
    /// The JSON values' schema of an input, by topic (else `schema`, or inferred).
    pub input_schemas: BTreeMap<String, Schema>,
    /// Declared tables (SQL name, topic): the latest value per key as of each record's event
    /// time, joined with `JOIN … ON stream_expression = name._key` (`crate::join`).
    pub tables: Vec<(String, String)>,
    /// Tables: how far back (ms) from the newest table update versions are kept for lookups.
    pub table_history_ms: i64,
    /// Declared tables' JSON value schemas, by table name; a table not here has JSON values
    /// (raw ones with a raw input) whose schema is inferred from its first records.
    pub table_schemas: BTreeMap<String, Schema>,
    pub input_format: ValueFormat,
    pub output_format: ValueFormat,
    /// The JSON values' schema; inferred from the input topic's first records when absent.
    pub schema: Option<Schema>,
    pub schema_sample_records: usize,
    /// A checkpoint (one transaction) at least this often…
    pub checkpoint_interval_ms: u64,
    /// …and at most this many input records (bounds memory).
    pub checkpoint_max_records: usize,
    /// A checkpoint holding records also ends once no record came for this long (ms): a
    /// burst's results are committed without waiting out the interval. 0: only the interval
    /// and the record bound end a checkpoint.
    pub checkpoint_quiet_ms: u64,
    pub transaction_timeout_ms: u32,
    /// Where records that cannot be decoded go (in the same transaction); logged and counted
    /// either way.
    pub dead_letter_topic: Option<String>,
    /// Windowed queries: how far behind the largest event time of its partition a record may
    /// be and still count (the watermark is that time minus this).
    pub allowed_lateness_ms: i64,
    /// Windowed queries and interval joins: an input partition without records for this long
    /// is idle and stops holding the watermark back until it has records again
    /// (`crate::watermark`; Flink's `table.exec.source.idle-timeout`). None: never idle.
    pub idle_timeout_ms: Option<u64>,
    /// Windowed queries: where records too late for every window go (in the same transaction);
    /// logged and counted either way.
    pub late_topic: Option<String>,
    /// Windowed queries: the most groups (and distinct values) the open windows may hold.
    pub max_state_entries: usize,
    /// The only input is a declared table's topic, whose changes the query aggregates
    /// (`crate::aggregate::changes`); set by [`JobConfig::resolved`].
    pub table_as_input: bool,
    /// A stage of a job (`crate::job::stages`) whose results go to its results topic as chunks
    /// of rows (`crate::job::chunks`).
    pub output_in_chunks: bool,
    /// The output topic's partitions when known before the job starts (a stage's results
    /// topic, created by the job): spares a lookup when the stage starts.
    pub output_partitions: Option<i32>,
    /// The inputs that are stages' results topics: chunks, expanded into their rows.
    pub inputs_in_chunks: BTreeSet<String>,
    /// How often (ms, at the least) the records of the job's internal topics that every reader
    /// committed past are deleted (`job::purge`; Kafka Streams' repartition.purge.interval.ms).
    pub purge_interval_ms: u64,
}

impl JobConfig {
    pub(crate) fn purge_interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.purge_interval_ms)
    }

    /// A job with Kafka-like defaults: checkpoints every second or 10,000 records.
    pub fn new(name: &str, bootstrap: &str, input: &str, output: &str, query: &str) -> Self {
        JobConfig {
            name: name.into(),
            instance_id: "0".into(),
            client: ClientSettings::new(bootstrap),
            inputs: vec![input.into()],
            output: output.into(),
            query: query.into(),
            table: None,
            input_names: Vec::new(),
            input_schemas: BTreeMap::new(),
            tables: Vec::new(),
            table_history_ms: 3_600_000,
            table_schemas: BTreeMap::new(),
            input_format: ValueFormat::Json,
            output_format: ValueFormat::Json,
            schema: None,
            schema_sample_records: 1000,
            checkpoint_interval_ms: 1000,
            checkpoint_max_records: 10_000,
            checkpoint_quiet_ms: 100,
            transaction_timeout_ms: 60_000,
            dead_letter_topic: None,
            allowed_lateness_ms: 0,
            idle_timeout_ms: None,
            late_topic: None,
            max_state_entries: 1_000_000,
            table_as_input: false,
            output_in_chunks: false,
            output_partitions: None,
            inputs_in_chunks: BTreeSet::new(),
            purge_interval_ms: super::purge::DEFAULT_PURGE_INTERVAL_MS,
        }
    }

    /// The job as it runs: one declared table and no input stream make the table's topic the
    /// input, whose changes the query aggregates (`SELECT … FROM table GROUP BY …`).
    pub fn resolved(&self) -> JobConfig {
        let mut resolved = self.clone();
        if self.inputs.is_empty() && self.tables.len() == 1 {
            let (name, topic) = resolved.tables.remove(0);
            if let Some(schema) = resolved.table_schemas.remove(&name) {
                resolved.input_schemas.insert(topic.clone(), schema);
            }
            resolved.inputs = vec![topic];
            resolved.input_names = vec![name];
            resolved.table = None;
            resolved.table_as_input = true;
        }
        resolved
    }

    /// The input that windowed jobs read (their only one).
    pub fn input(&self) -> &str {
        &self.inputs[0]
    }

    /// The query's table of each input, in the order of `inputs`.
    pub fn table_names(&self) -> Vec<&str> {
        if !self.input_names.is_empty() {
            return self.input_names.iter().map(String::as_str).collect();
        }
        match (&self.table, self.inputs.len()) {
            (Some(table), 1) => vec![table.as_str()],
            _ => self.inputs.iter().map(String::as_str).collect(),
        }
    }

    /// The transactional id of this copy of the job.
    pub fn transactional_id(&self) -> String {
        format!("weir-streams-{}-{}", self.name, self.instance_id)
    }

    /// A windowed job's internal topic of partial aggregates.
    pub fn repartition_topic(&self) -> String {
        format!("weir-{}-repartition", self.name)
    }

    /// A windowed job's compacted topic of window state.
    pub fn changelog_topic(&self) -> String {
        format!("weir-{}-changelog", self.name)
    }

    pub fn validate(&self) -> Result<()> {
        let problem = if self.name.is_empty() {
            Some("a job needs a name".to_string())
        } else if self.inputs.is_empty()
            || self.inputs.iter().any(String::is_empty)
            || self.output.is_empty()
        {
            Some(
                "a job needs an input and an output topic (or, to aggregate a table's changes, \
                 one declared table and no input)"
                    .to_string(),
            )
        } else if self.inputs.contains(&self.output) {
            Some(format!("{} is both an input and the output", self.output))
        } else if (1..self.inputs.len()).any(|i| self.inputs[..i].contains(&self.inputs[i])) {
            Some("an input topic is named twice".to_string())
        } else if self.table.is_some() && self.inputs.len() > 1 {
            Some("a table name can be given for a single input only".to_string())
        } else if !self.input_names.is_empty() && self.input_names.len() != self.inputs.len() {
            Some("each input needs its name in the query".to_string())
        } else if let Some(topic) = self
            .input_schemas
            .keys()
            .find(|topic| !self.inputs.contains(topic))
        {
            Some(format!(
                "a schema is given for {topic}, which is not an input"
            ))
        } else if let Some((name, topic)) = self.tables.iter().find(|(name, topic)| {
            name.is_empty()
                || topic.is_empty()
                || self.inputs.contains(topic)
                || *topic == self.output
                || self.table_names().contains(&name.as_str())
        }) {
            Some(format!(
                "table {name}={topic}: a table needs a name and a topic that is neither an input, \
                 the output nor named like an input"
            ))
        } else if let Some(name) = self
            .table_schemas
            .keys()
            .find(|name| !self.tables.iter().any(|(table, _)| table == *name))
        {
            Some(format!(
                "a schema is given for {name}, which is not a declared table"
            ))
        } else if self.table_history_ms < 0 {
            Some("the table history cannot be negative".into())
        } else if self.checkpoint_max_records == 0 || self.checkpoint_interval_ms == 0 {
            Some("checkpoint interval and size must be positive".to_string())
        } else if self.allowed_lateness_ms < 0 || self.max_state_entries == 0 {
            Some("allowed lateness cannot be negative, the state bound must be positive".into())
        } else if self.idle_timeout_ms == Some(0) {
            Some("the idle timeout must be positive (leave it out for none)".into())
        } else if self.schema_sample_records == 0 {
            Some("the schema sample must hold at least one record".to_string())
        } else {
            None
        };
        match problem {
            Some(problem) => Err(StreamsError::Config(problem)),
            None => Ok(()),
        }
    }
}
