//! A job: consume an input topic, transform each checkpoint's records with SQL, produce the
//! result to an output topic — exactly once.
//!
//! Every checkpoint is one Kafka transaction holding the output records (and rejected records,
//! if a dead-letter topic is set) and the consumed offsets, sent with the consumer's group
//! metadata (KIP-447): a zombie instance that lost its partitions cannot commit. A checkpoint that
//! fails is aborted and the input rewound to the committed offsets; a rebalance drops what was
//! buffered (the new assignment starts from the committed offsets). Copies of a job with the same
//! name share the input's partitions through the consumer group.
//!
//! The loop is blocking (run it on its own thread); DataFusion runs on a small runtime of its own.

mod config;
mod consumer;
mod transaction;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer;

pub use config::JobConfig;

use crate::decode::RecordDecoder;
use crate::encode::encode;
use crate::error::{Result, StreamsError};
use crate::record::{InputRecord, ValueFormat};
use crate::sql::SqlTransform;
use consumer::JobConsumer;
use transaction::CheckpointWriter;

/// What a job did, for logs, metrics and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct JobStats {
    pub checkpoints: u64,
    pub records_in: u64,
    pub records_out: u64,
    pub records_rejected: u64,
    pub checkpoints_aborted: u64,
    pub rebalances: u64,
}

/// Runs `config` until `stop` is set (the checkpoint under way completes first) or a fatal error
/// (fenced by a newer instance, a broken query, an unreachable cluster past the timeouts).
pub fn run(config: &JobConfig, stop: &AtomicBool) -> Result<JobStats> {
    config.validate()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StreamsError::Config(format!("cannot start the SQL runtime: {e}")))?;
    let consumer = consumer::create(config)?;
    let writer = CheckpointWriter::create(config)?;
    // Without a declared schema, JSON input is planned at the first checkpoint, from its records.
    let known_schema = config.schema.is_some() || config.input_format == ValueFormat::Raw;
    let mut engine: Option<(RecordDecoder, SqlTransform)> = if known_schema {
        Some(prepare(config, &runtime, &[])?)
    } else {
        None
    };
    let mut stats = JobStats::default();
    tracing::info!(job = %config.name, instance = %config.instance_id, input = %config.input, output = %config.output, "job started");
    while !stop.load(Ordering::SeqCst) {
        let buffer = fill(config, &consumer, stop);
        if consumer.context().take_rebalanced() {
            stats.rebalances += 1;
            // Eager assignment: the partitions kept or gained start again from their committed
            // offsets, so dropping the buffer is all there is to do.
            tracing::info!(job = %config.name, dropped = buffer.len(), "rebalance: buffered records dropped");
            continue;
        }
        if buffer.is_empty() {
            continue;
        }
        if engine.is_none() {
            engine = Some(prepare(config, &runtime, &buffer)?);
        }
        let (decoder, transform) = engine.as_ref().expect("prepared above");
        let decoded = decoder.decode(&buffer)?;
        for rejected in &decoded.rejected {
            tracing::warn!(job = %config.name, partition = rejected.partition, offset = rejected.offset, reason = %rejected.reason, "record rejected");
        }
        let output = runtime.block_on(transform.apply(decoded.batch))?;
        let records = encode(&output, config.output_format)?;
        let dead_letters: Vec<&InputRecord> = match &config.dead_letter_topic {
            Some(_) => decoded.rejected.iter().map(|r| &buffer[r.index]).collect(),
            None => Vec::new(),
        };
        let offsets = next_offsets(&buffer);
        match writer.commit(&consumer, &records, &dead_letters, &offsets) {
            Ok(()) => {
                stats.checkpoints += 1;
                stats.records_in += buffer.len() as u64;
                stats.records_out += records.len() as u64;
                stats.records_rejected += decoded.rejected.len() as u64;
            }
            Err(StreamsError::Fenced(reason)) => return Err(StreamsError::Fenced(reason)),
            Err(error) => {
                stats.checkpoints_aborted += 1;
                tracing::warn!(job = %config.name, %error, "checkpoint aborted; rewinding to the committed offsets");
                consumer::rewind(&consumer)?;
            }
        }
    }
    tracing::info!(job = %config.name, ?stats, "job stopped");
    Ok(stats)
}

/// The decoder (with the declared schema, or one inferred from `sample`) and the planned query.
fn prepare(
    config: &JobConfig,
    runtime: &tokio::runtime::Runtime,
    sample: &[InputRecord],
) -> Result<(RecordDecoder, SqlTransform)> {
    let schema = match (&config.schema, config.input_format) {
        (_, ValueFormat::Raw) => None,
        (Some(schema), _) => Some(schema.clone()),
        (None, _) => {
            let sample = &sample[..sample.len().min(config.schema_sample_records)];
            Some(RecordDecoder::infer(sample)?)
        }
    };
    let decoder = RecordDecoder::new(config.input_format, schema)?;
    let transform = runtime.block_on(SqlTransform::new(
        config.table_name(),
        &config.query,
        decoder.schema(),
    ))?;
    Ok((decoder, transform))
}

/// Polls until the checkpoint is due: its interval has passed or it holds the most records a
/// checkpoint may; returns early on a rebalance or `stop`.
fn fill(config: &JobConfig, consumer: &JobConsumer, stop: &AtomicBool) -> Vec<InputRecord> {
    let due = Instant::now() + Duration::from_millis(config.checkpoint_interval_ms);
    let mut buffer = Vec::new();
    while buffer.len() < config.checkpoint_max_records && !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now >= due || consumer.context().rebalanced() {
            break;
        }
        let Some(message) = consumer.poll(due - now) else {
            continue;
        };
        match message {
            Ok(message) => buffer.push(InputRecord::from_message(&message)),
            Err(error) => tracing::warn!(job = %config.name, %error, "consumer error"),
        }
    }
    buffer
}

/// Per partition, the offset after the last buffered record: what the checkpoint commits.
fn next_offsets(buffer: &[InputRecord]) -> BTreeMap<i32, i64> {
    let mut offsets = BTreeMap::new();
    for record in buffer {
        let next = offsets.entry(record.partition).or_insert(0);
        *next = (*next).max(record.offset + 1);
    }
    offsets
}
