//! Ad-hoc SQL over topics (`weir sql`): every topic the query names is a table — its decoded
//! values (JSON by a schema inferred from a sample, or raw strings) plus `_key`, `_partition`,
//! `_offset`, `_timestamp` — read with read_committed from the beginning up to its end as it is
//! when the query starts. Works against Weir or any Kafka cluster (rdkafka only).
//!
//! Bounded: at most `max_records` records per topic are read (the query fails beyond, rather than
//! answering over part of a topic without saying so).

use std::time::Duration;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;

use crate::decode::RecordDecoder;
use crate::error::{Result, StreamsError};
use crate::record::{InputRecord, ValueFormat};
use crate::topic_reader::{self, Limit};
use crate::window::functions;

/// How to reach the cluster and how much to read.
#[derive(Debug, Clone)]
pub struct AdhocOptions {
    pub bootstrap: String,
    pub client_properties: Vec<(String, String)>,
    pub format: ValueFormat,
    /// The most records read from one topic.
    pub max_records: usize,
    /// Records the JSON schema is inferred from.
    pub schema_sample_records: usize,
    pub timeout: Duration,
}

impl AdhocOptions {
    pub fn new(bootstrap: &str) -> Self {
        AdhocOptions {
            bootstrap: bootstrap.into(),
            client_properties: Vec::new(),
            format: ValueFormat::Json,
            max_records: 1_000_000,
            schema_sample_records: 1000,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Runs `query` over the topics it names.
pub async fn query(options: &AdhocOptions, query: &str) -> Result<Vec<RecordBatch>> {
    let context = SessionContext::new();
    functions::register(&context);
    let state = context.state();
    let dialect = state.config().options().sql_parser.dialect;
    let statement = state.sql_to_statement(query, &dialect)?;
    for table in state.resolve_table_references(&statement)? {
        let topic = table.table().to_string();
        let records = read_topic(options, &topic)?;
        let schema = match options.format {
            ValueFormat::Raw => None,
            ValueFormat::Json if records.is_empty() => {
                return Err(StreamsError::Schema(format!("topic {topic} is empty")))
            }
            ValueFormat::Json => {
                let sample = &records[..records.len().min(options.schema_sample_records)];
                Some(RecordDecoder::infer(sample)?)
            }
        };
        let decoder = RecordDecoder::new(options.format, schema)?;
        let decoded = decoder.decode(&records)?;
        if !decoded.rejected.is_empty() {
            tracing::warn!(%topic, rejected = decoded.rejected.len(), first = ?decoded.rejected[0], "records left out: they do not decode");
        }
        context.register_batch(TableReference::bare(topic), decoded.batch)?;
    }
    Ok(context.sql(query).await?.collect().await?)
}

/// Every committed record of `topic`, up to the end each partition had when reading began.
fn read_topic(options: &AdhocOptions, topic: &str) -> Result<Vec<InputRecord>> {
    let consumer = topic_reader::consumer(&options.bootstrap, &options.client_properties)?;
    let partitions = topic_reader::partitions(&consumer, topic, options.timeout)?;
    topic_reader::read(
        &consumer,
        topic,
        &partitions,
        Limit::FailBeyond(options.max_records),
        options.timeout,
    )
}
