//! Ad-hoc SQL over topics (`weir sql`): every topic the query names is a table — its decoded
//! values (JSON by a schema inferred from a sample, or raw strings) plus `_key`, `_partition`,
//! `_offset`, `_timestamp` — read with read_committed from the beginning up to its end as it is
//! when the query starts. Works against Weir or any Kafka cluster (rdkafka only).
//!
//! Bounded: at most `max_records` records per topic are read (the query fails beyond, rather than
//! answering over part of a topic without saying so).

use std::time::{Duration, Instant};

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use crate::decode::RecordDecoder;
use crate::error::{Result, StreamsError};
use crate::record::{InputRecord, ValueFormat};

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
    let mut client = ClientConfig::new();
    client
        .set("bootstrap.servers", &options.bootstrap)
        .set("group.id", "weir-sql")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("isolation.level", "read_committed");
    for (name, value) in &options.client_properties {
        client.set(name, value);
    }
    let consumer: BaseConsumer = client
        .create()
        .map_err(StreamsError::kafka("creating the consumer"))?;
    let metadata = consumer
        .fetch_metadata(Some(topic), options.timeout)
        .map_err(StreamsError::kafka("reading metadata"))?;
    let partitions: Vec<i32> = metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic && t.error().is_none())
        .map(|t| t.partitions().iter().map(|p| p.id()).collect())
        .ok_or_else(|| StreamsError::Config(format!("no topic named {topic}")))?;
    let mut assignment = TopicPartitionList::new();
    let mut ends = Vec::new();
    for partition in partitions {
        let (low, end) = consumer
            .fetch_watermarks(topic, partition, options.timeout)
            .map_err(StreamsError::kafka("reading the end offsets"))?;
        if end > low {
            assignment
                .add_partition_offset(topic, partition, Offset::Beginning)
                .map_err(StreamsError::kafka("assigning"))?;
            ends.push((partition, end));
        }
    }
    consumer
        .assign(&assignment)
        .map_err(StreamsError::kafka("assigning"))?;
    let mut records = Vec::new();
    let deadline = Instant::now() + options.timeout;
    while !ends.is_empty() {
        if Instant::now() > deadline {
            return Err(StreamsError::Config(format!(
                "reading {topic} took longer than {:?}; partitions left {ends:?}",
                options.timeout
            )));
        }
        let Some(message) = consumer.poll(Duration::from_millis(100)) else {
            continue;
        };
        let (partition, next) = match message {
            Ok(message) => {
                if records.len() == options.max_records {
                    return Err(StreamsError::Config(format!(
                        "{topic} holds more than {} records; raise the limit",
                        options.max_records
                    )));
                }
                records.push(InputRecord::from_message(&message));
                (message.partition(), message.offset() + 1)
            }
            Err(KafkaError::PartitionEOF(partition)) => {
                let position = consumer.position().ok().and_then(|positions| {
                    positions
                        .find_partition(topic, partition)?
                        .offset()
                        .to_raw()
                });
                (partition, position.unwrap_or(-1))
            }
            Err(error) => return Err(StreamsError::kafka("reading")(error)),
        };
        ends.retain(|&(p, end)| !(p == partition && next >= end));
    }
    Ok(records)
}
