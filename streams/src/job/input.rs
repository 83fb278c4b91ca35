//! A job's input before the query sees it: the sample a JSON schema is inferred from, the
//! decoders and the planned query (`prepare`), stages' chunks expanded into rows, and each
//! checkpoint's records decoded (those that do not decode become dead letters).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use datafusion::arrow::record_batch::RecordBatch;
use weir_client::CLUSTER_TIMEOUT;

use super::chunks;
use super::config::JobConfig;
use super::poll::Polled;
use super::stats::JobStats;
use super::transaction::{Checkpoint, Destination, Outgoing};
use crate::error::{Result, StreamsError};
use crate::io::decode::RecordDecoder;
use crate::io::topic_reader::{self, Limit};
use crate::join::table::TableState;
use crate::record::{InputRecord, ValueFormat};
use crate::sql::SqlTransform;

/// The inputs that are stages' results: each chunk → its rows; a record that is not a chunk
/// is a dead letter.
pub(super) fn expand_chunks(
    config: &JobConfig,
    polled: &mut Polled,
    checkpoint: &mut Checkpoint,
    stats: &mut JobStats,
) {
    for (topic, records) in &mut polled.inputs {
        if !config.inputs_in_chunks.contains(topic) || records.is_empty() {
            continue;
        }
        let mut rows = Vec::with_capacity(records.len());
        for record in records.drain(..) {
            match chunks::expand(&record) {
                Ok(expanded) => rows.extend(expanded),
                Err(error) => {
                    tracing::warn!(job = %config.name, %topic, partition = record.partition, offset = record.offset, %error, "record rejected");
                    stats.records_rejected += 1;
                    checkpoint.records.push(Outgoing {
                        destination: Destination::DeadLetter,
                        key: record.key,
                        value: record.value,
                        timestamp_ms: None,
                    });
                }
            }
        }
        *records = rows;
    }
}

/// The records a JSON schema is inferred from: the input topic's first records, so every
/// restart infers the same schema (`Some(empty)` when the schema is known; `None` when stopped
/// while waiting for a first record).
pub(super) fn schema_sample(
    config: &JobConfig,
    input: &str,
    stop: &AtomicBool,
) -> Result<Option<Vec<InputRecord>>> {
    if config.schema.is_some()
        || config.input_schemas.contains_key(input)
        || config.input_format == ValueFormat::Raw
    {
        return Ok(Some(Vec::new()));
    }
    first_records(config, input, stop)
}

/// A declared table's first records, its JSON schema inferred from them (`--schema` describes
/// the inputs, not the tables), unless its schema was declared.
pub(super) fn table_sample(
    config: &JobConfig,
    name: &str,
    topic: &str,
    stop: &AtomicBool,
) -> Result<Option<Vec<InputRecord>>> {
    if config.input_format == ValueFormat::Raw || config.table_schemas.contains_key(name) {
        return Ok(Some(Vec::new()));
    }
    first_records(config, topic, stop)
}

/// How often a job waiting for its input's first record looks again (a job reading another
/// job's output starts as soon as the first result is committed).
const FIRST_RECORD_WAIT: Duration = Duration::from_millis(100);

/// How many chunks of a stage's results the schema of its rows is inferred from (at most).
const CHUNKS_SAMPLED: usize = 10;

/// The first records of `input` (with a value), waiting for one while it is empty; `None` when
/// stopped while waiting.
pub(super) fn first_records(
    config: &JobConfig,
    input: &str,
    stop: &AtomicBool,
) -> Result<Option<Vec<InputRecord>>> {
    let reader = topic_reader::consumer(&config.client)?;
    let partitions = topic_reader::partitions(&reader, input, CLUSTER_TIMEOUT)?;
    let mut waiting = false;
    let in_chunks = config.inputs_in_chunks.contains(input);
    // A chunk holds up to CHUNK_MAX_ROWS rows: a few are sample enough, and bound its memory.
    let records = match in_chunks {
        true => CHUNKS_SAMPLED,
        false => config.schema_sample_records,
    };
    while !stop.load(Ordering::SeqCst) {
        let mut sample = topic_reader::read(
            &reader,
            input,
            &partitions,
            Limit::StopAt(records),
            CLUSTER_TIMEOUT,
        )?;
        if in_chunks {
            sample = sample
                .iter()
                .flat_map(|r| chunks::expand(r).unwrap_or_default())
                .collect();
            sample.truncate(config.schema_sample_records);
        }
        if !sample.is_empty() {
            return Ok(Some(sample));
        }
        if !waiting {
            // At warn: the default level, so a user of an empty topic sees why nothing happens.
            tracing::warn!(
                job = %config.name,
                %input,
                "{input} is empty: waiting for a first record to infer its schema from \
                 (declare the schema to start without one: --schema, or a pipeline's `schema:`)"
            );
            waiting = true;
        }
        std::thread::sleep(FIRST_RECORD_WAIT);
    }
    Ok(None)
}

/// Each input's decoder (with the declared schema, or one inferred from its sample) and the
/// planned query.
pub(super) fn prepare(
    config: &JobConfig,
    runtime: &tokio::runtime::Runtime,
    samples: &[Vec<InputRecord>],
    table_samples: &[Vec<InputRecord>],
) -> Result<(Vec<RecordDecoder>, Vec<TableState>, SqlTransform)> {
    let mut decoders = Vec::new();
    for (input, sample) in config.inputs.iter().zip(samples) {
        let declared = config.input_schemas.get(input).or(config.schema.as_ref());
        let schema = match (declared, config.input_format) {
            (_, ValueFormat::Raw) => None,
            (Some(schema), _) => Some(schema.clone()),
            (None, _) => Some(RecordDecoder::infer(sample)?),
        };
        decoders.push(RecordDecoder::new(config.input_format, schema)?);
    }
    let mut tables = Vec::new();
    for ((name, _), sample) in config.tables.iter().zip(table_samples) {
        let decoder = match (config.table_schemas.get(name), config.input_format) {
            (Some(declared), _) => RecordDecoder::new(ValueFormat::Json, Some(declared.clone()))?,
            (None, ValueFormat::Raw) => RecordDecoder::new(ValueFormat::Raw, None)?,
            (None, ValueFormat::Json) => {
                RecordDecoder::new(ValueFormat::Json, Some(RecordDecoder::infer(sample)?))?
            }
        };
        tables.push(TableState::new(
            name,
            decoder,
            config.table_history_ms,
            config.max_state_entries,
        ));
    }
    let inputs: Vec<_> = config
        .table_names()
        .into_iter()
        .zip(&decoders)
        .map(|(table, decoder)| (table, decoder.schema()))
        .collect();
    let declared: Vec<_> = tables
        .iter()
        .map(|t| (t.name.as_str(), t.decoder.schema()))
        .collect();
    let transform =
        runtime.block_on(SqlTransform::with_tables(&inputs, &declared, &config.query))?;
    // Each input's values are parsed only as far as the query reads them.
    for (decoder, table) in decoders.iter_mut().zip(config.table_names()) {
        if let Some(columns) = transform.columns_read(table) {
            decoder.read_only(columns);
        }
    }
    if !tables.is_empty() && !transform.joins_tables() {
        return Err(StreamsError::Query(
            "tables are declared but the query joins none of them".into(),
        ));
    }
    Ok((decoders, tables, transform))
}

/// Decodes a checkpoint's input; records that do not decode become dead letters.
pub(super) fn decode_input(
    config: &JobConfig,
    decoder: &RecordDecoder,
    input: &[InputRecord],
    checkpoint: &mut Checkpoint,
    stats: &mut JobStats,
) -> Result<RecordBatch> {
    Ok(decode_input_rejecting(config, decoder, input, checkpoint, stats)?.0)
}

/// [`decode_input`], also answering the (partition, offset) of the records that did not decode.
pub(super) fn decode_input_rejecting(
    config: &JobConfig,
    decoder: &RecordDecoder,
    input: &[InputRecord],
    checkpoint: &mut Checkpoint,
    stats: &mut JobStats,
) -> Result<(RecordBatch, Vec<(i32, i64)>)> {
    let decoded = decoder.decode(input)?;
    for rejected in &decoded.rejected {
        tracing::warn!(job = %config.name, partition = rejected.partition, offset = rejected.offset, reason = %rejected.reason, "record rejected");
        let record = &input[rejected.index];
        checkpoint.records.push(Outgoing {
            destination: Destination::DeadLetter,
            key: record.key.clone(),
            value: record.value.clone(),
            timestamp_ms: None,
        });
    }
    stats.records_rejected += decoded.rejected.len() as u64;
    let rejected = decoded
        .rejected
        .iter()
        .map(|r| (r.partition, r.offset))
        .collect();
    Ok((decoded.batch, rejected))
}
