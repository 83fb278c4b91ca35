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
//! While it processes one checkpoint, a helper thread polls the next one's records (`prefetch`)
//! and another commits the previous one (`committer`): each says what keeps that exactly-once.

mod chunks;
mod committer;
mod config;
mod consumer;
mod idle;
mod interval_join;
mod metrics;
mod prefetch;
pub mod purge;
mod route;
pub mod stages;
mod stateful;
mod stateless;
mod topics;
mod transaction;
mod windowed;

#[cfg(test)]
mod exactly_once_tests;
#[cfg(test)]
mod idle_tests;
#[cfg(test)]
mod route_tests;
#[cfg(test)]
mod stages_tests;
#[cfg(test)]
mod table_aggregate_tests;
#[cfg(test)]
mod table_join_tests;
#[cfg(test)]
mod window_order_tests;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use datafusion::arrow::record_batch::RecordBatch;
use rdkafka::consumer::Consumer;
use rdkafka::message::Message;
use weir_client::CLUSTER_TIMEOUT;

pub use config::JobConfig;
pub use metrics::JobMetrics;

use crate::decode::RecordDecoder;
use crate::error::{Result, StreamsError};
use crate::join::table::TableState;
use crate::record::{InputRecord, ValueFormat};
use crate::sql::SqlTransform;
use crate::topic_reader::{self, Limit};
use crate::window::spec::Windows;
use committer::Committer;
use consumer::JobConsumer;
use prefetch::{Prefetch, Prefetched};
use transaction::{Checkpoint, CheckpointWriter, Destination, Outgoing};

/// What a job did, for logs, metrics and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct JobStats {
    pub checkpoints: u64,
    pub records_in: u64,
    pub records_out: u64,
    pub records_rejected: u64,
    /// Windowed jobs: records too late for every window they fall in.
    pub records_late: u64,
    /// Windowed jobs: groups emitted (one per window and key).
    pub windows_emitted: u64,
    /// Windowed jobs: partial groups that reached their owner after the window was emitted.
    pub partials_too_late: u64,
    pub checkpoints_aborted: u64,
    pub rebalances: u64,
}

impl JobStats {
    fn add(&mut self, other: &JobStats) {
        self.checkpoints += other.checkpoints;
        self.records_in += other.records_in;
        self.records_out += other.records_out;
        self.records_rejected += other.records_rejected;
        self.records_late += other.records_late;
        self.windows_emitted += other.windows_emitted;
        self.partials_too_late += other.partials_too_late;
    }
}

/// The records of one checkpoint: from each input topic (in the order of the job's inputs), and
/// (windowed jobs) from the job's repartition topic.
#[derive(Default)]
pub struct Polled {
    pub inputs: Vec<(String, Vec<InputRecord>)>,
    pub internal: Vec<InputRecord>,
    internal_topic: String,
}

impl Polled {
    fn input_len(&self) -> usize {
        self.inputs.iter().map(|(_, records)| records.len()).sum()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn len(&self) -> usize {
        self.input_len() + self.internal.len()
    }

    /// Per consumed partition, the offset after its last record: what the checkpoint commits.
    fn next_offsets(&self) -> BTreeMap<(String, i32), (i64, String)> {
        let mut offsets = BTreeMap::new();
        let internal = (&self.internal_topic, &self.internal);
        let topics = self.inputs.iter().map(|(topic, records)| (topic, records));
        for (topic, records) in topics.chain([internal]) {
            for record in records {
                let next = offsets
                    .entry((topic.clone(), record.partition))
                    .or_insert((0, String::new()));
                next.0 = next.0.max(record.offset + 1);
            }
        }
        offsets
    }
}

/// One kind of job's work per checkpoint.
trait Processor {
    /// After a rebalance or an aborted checkpoint: rebuild what the owned partitions need.
    fn reload(&mut self, consumer: &JobConsumer) -> Result<()>;
    /// Window state held: (groups and distinct values, open windows).
    fn state_size(&self) -> (usize, usize) {
        (0, 0)
    }
    /// A bounded run's input ended (everything was consumed and committed): adds what announces
    /// it to `checkpoint`.
    fn end_of_input(
        &mut self,
        _consumer: &JobConsumer,
        _checkpoint: &mut Checkpoint,
        _stats: &mut JobStats,
    ) -> Result<()> {
        Ok(())
    }
    /// Announces the owned input partitions that became idle (`--idle-timeout-ms`) to
    /// `checkpoint` — also when nothing was polled, which is when they become idle.
    fn announce_idle(
        &mut self,
        _polled: &Polled,
        _checkpoint: &mut Checkpoint,
        _stats: &mut JobStats,
    ) -> Result<()> {
        Ok(())
    }
    /// Adds what one checkpoint produces to `checkpoint` (which holds the consumed offsets);
    /// `stats` counts what it did.
    fn checkpoint(
        &mut self,
        polled: &Polled,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()>;
}

/// The end of a bounded run's input, told to a running job: whoever watches the input requests it
/// once the job consumed and committed everything; the job announces it in its next checkpoint
/// (a windowed job then closes the windows still open) and marks it sent once that committed.
#[derive(Default)]
pub struct EndOfInput {
    requested: AtomicBool,
    sent: AtomicBool,
    /// How often a sent announcement was withdrawn (a rebalance after it).
    withdrawn: AtomicU64,
}

impl EndOfInput {
    pub fn request(&self) {
        self.requested.store(true, Ordering::SeqCst);
    }

    pub fn requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// The announcement is committed.
    pub fn sent(&self) -> bool {
        self.sent.load(Ordering::SeqCst)
    }

    /// How often an announcement was withdrawn, to be announced again for the partitions a
    /// rebalance gave: a watcher that read [`Self::sent`] and then the committed offsets
    /// reads this before and after — if it moved, what it read is not one state.
    pub fn withdrawals(&self) -> u64 {
        self.withdrawn.load(Ordering::SeqCst)
    }
}

/// Runs `config` until `stop` is set (the checkpoint under way completes first) or a fatal error
/// (fenced by a newer instance, a broken query, an unreachable cluster past the timeouts).
pub fn run(config: &JobConfig, stop: &AtomicBool) -> Result<JobStats> {
    let metrics = JobMetrics::new(&config.name, &config.instance_id);
    run_with_metrics(config, stop, None, &metrics)
}

/// [`run`], counting in `metrics`; with `end_of_input`, a bounded run's end can be announced.
pub fn run_with_metrics(
    config: &JobConfig,
    stop: &AtomicBool,
    end_of_input: Option<&EndOfInput>,
    metrics: &JobMetrics,
) -> Result<JobStats> {
    let resolved = config.resolved();
    let config = &resolved;
    config.validate()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StreamsError::Config(format!("cannot start the SQL runtime: {e}")))?;
    let mut samples = Vec::new();
    for input in &config.inputs {
        match schema_sample(config, input, stop)? {
            Some(sample) => samples.push(sample),
            None => return Ok(JobStats::default()),
        }
    }
    let mut table_samples = Vec::new();
    for (name, topic) in &config.tables {
        match table_sample(config, name, topic, stop)? {
            Some(sample) => table_samples.push(sample),
            None => return Ok(JobStats::default()),
        }
    }
    let (decoders, tables, transform) = prepare(config, &runtime, &samples, &table_samples)?;
    if config.table_as_input
        && transform
            .windowed()
            .is_none_or(|q| q.window != Windows::Updating)
    {
        return Err(StreamsError::Config(format!(
            "this query cannot run over a stream: table {} read on its own can only be \
             aggregated with GROUP BY and no window (an updating aggregate over its changes); \
             to look rows up in it, join it to a stream: JOIN … ON stream_expression = {}._key",
            config.table_names()[0],
            config.table_names()[0]
        )));
    }
    let mut internal_topic = None;
    let mut processor: Box<dyn Processor + '_> = match transform.windowed() {
        None if transform.interval_join().is_some() => {
            let partitions = topics::ensure(config, &runtime)?;
            internal_topic = Some(config.repartition_topic());
            Box::new(interval_join::IntervalJoin::new(
                config, &decoders, &transform, &runtime, partitions,
            )?)
        }
        None => Box::new(stateless::Stateless {
            config,
            decoders: &decoders,
            transform: &transform,
            runtime: &runtime,
            tables: stateless::Tables::open(config, tables)?,
        }),
        Some(_) => {
            let partitions = topics::ensure(config, &runtime)?;
            internal_topic = Some(config.repartition_topic());
            Box::new(windowed::Windowed::new(
                config, &decoders, &transform, &runtime, partitions,
            ))
        }
    };
    let consumer = consumer::create(config, internal_topic.as_deref())?;
    let mut writer = CheckpointWriter::create(config)?;
    tracing::info!(job = %config.name, instance = %config.instance_id, inputs = ?config.inputs, output = %config.output, windowed = internal_topic.is_some(), "job started");
    let stats = std::thread::scope(|scope| {
        let prefetch = Prefetch::start(scope, config, &consumer, internal_topic.as_deref(), stop);
        // The repartition topic is read by this job's group alone.
        let purger = internal_topic.clone().map(|topic| {
            let purge = purge::Purge {
                topic,
                readers: vec![config.name.clone()],
            };
            purge::Purger::new(&config.client, vec![purge], config.purge_interval())
        });
        let committer = Committer::start(scope, &mut writer, purger);
        let mut job = Loop {
            config,
            stop,
            end_of_input,
            metrics,
            consumer: &consumer,
            processor: processor.as_mut(),
            prefetch,
            committer,
        };
        job.run()
    })?;
    tracing::info!(job = %config.name, ?stats, "job stopped");
    Ok(stats)
}

/// How long a checkpoint took to commit once sent.
fn commit_ms(flight: &InFlight, finished: Option<Instant>) -> u64 {
    let finished = finished.unwrap_or_else(Instant::now);
    finished.saturating_duration_since(flight.sent).as_millis() as u64
}

/// The checkpoint loop's parts.
struct Loop<'a, 'p> {
    config: &'a JobConfig,
    stop: &'a AtomicBool,
    end_of_input: Option<&'a EndOfInput>,
    metrics: &'a JobMetrics,
    consumer: &'a JobConsumer,
    processor: &'a mut (dyn Processor + 'p),
    prefetch: Prefetch,
    committer: Committer,
}

/// A checkpoint sent to the committer: what it did, counted once it committed.
struct InFlight {
    done: JobStats,
    /// It announces the end of the input.
    ending: bool,
    started: Instant,
    polled_ms: u64,
    processed_ms: u64,
    sent: Instant,
    input: usize,
    internal: usize,
    produced: usize,
}

impl Loop<'_, '_> {
    /// Checkpoints until `stop` or a fatal error: while one is processed, the previous one is
    /// committed (`committer`) and the next one's records are polled (`prefetch`); each says
    /// what keeps that exactly-once.
    fn run(&mut self) -> Result<JobStats> {
        let mut stats = JobStats::default();
        let mut in_flight = None;
        let result = self.checkpoints(&mut stats, &mut in_flight);
        // Stopping, or a fatal error: the checkpoint in flight commits or aborts first.
        let settled = self.settle(&mut stats, in_flight.take(), true);
        result?;
        settled?;
        Ok(stats)
    }

    fn checkpoints(
        &mut self,
        stats: &mut JobStats,
        in_flight: &mut Option<InFlight>,
    ) -> Result<()> {
        while !self.stop.load(Ordering::SeqCst) {
            let started = Instant::now();
            let Prefetched { mut polled, group } = self.prefetch.take()?;
            let filled = Instant::now();
            if self.consumer.context().take_rebalanced() {
                // The checkpoint in flight commits or aborts under the old assignment; the new
                // one starts from the committed offsets either way.
                self.settle(stats, in_flight.take(), false)?;
                self.rebalanced(stats, polled.len())?;
                continue;
            }
            let end_pending = self
                .end_of_input
                .is_some_and(|end| end.requested() && !end.sent());
            // Whether the end is still to be announced depends on the checkpoint in flight;
            // with nothing new polled, it commits before the loop polls again.
            if (end_pending || polled.is_empty()) && !self.settle(stats, in_flight.take(), true)? {
                continue;
            }
            let ending = self
                .end_of_input
                .filter(|end| end.requested() && !end.sent());
            let mut checkpoint = Checkpoint {
                records: Vec::new(),
                offsets: polled.next_offsets(),
            };
            let mut done = JobStats {
                checkpoints: 1,
                ..JobStats::default()
            };
            // Committed offsets are the chunks'; the query sees their rows.
            expand_chunks(self.config, &mut polled, &mut checkpoint, &mut done);
            done.records_in = polled.input_len() as u64;
            self.processor
                .announce_idle(&polled, &mut checkpoint, &mut done)?;
            if polled.is_empty() && ending.is_none() && checkpoint.records.is_empty() {
                continue;
            }
            // The end of input is announced after the checkpoint's records, reading the
            // assignment: the helper polls once that is done.
            if ending.is_none() {
                self.prefetch.request();
            }
            if !polled.is_empty() {
                self.processor
                    .checkpoint(&polled, &mut checkpoint, &mut done)?;
            }
            // This checkpoint begins its transaction once the previous one committed; if that
            // one aborted, the input was rewound and the state rebuilt: this one is dropped.
            if !self.settle(stats, in_flight.take(), true)? {
                continue;
            }
            if ending.is_some() {
                self.processor
                    .end_of_input(self.consumer, &mut checkpoint, &mut done)?;
                self.prefetch.request();
            }
            let processed = Instant::now();
            *in_flight = Some(InFlight {
                done,
                ending: ending.is_some(),
                started,
                polled_ms: (filled - started).as_millis() as u64,
                processed_ms: (processed - filled).as_millis() as u64,
                sent: processed,
                input: polled.input_len(),
                internal: polled.internal.len(),
                produced: checkpoint.records.len(),
            });
            self.committer.send(group, checkpoint)?;
        }
        Ok(())
    }

    /// Waits for the checkpoint in flight: counts it once committed (true), or, aborted,
    /// rewinds the input (when `rewind`: not after a rebalance, whose new assignment starts
    /// from the committed offsets anyway and whose partitions cannot be sought yet) and
    /// rebuilds the state (false). A fenced producer is fatal.
    fn settle(
        &mut self,
        stats: &mut JobStats,
        in_flight: Option<InFlight>,
        rewind: bool,
    ) -> Result<bool> {
        let config = self.config;
        let Some(flight) = in_flight else {
            return Ok(true);
        };
        let Some(committed) = self.committer.wait() else {
            return Ok(true);
        };
        match committed {
            Ok(()) => {
                if let Some(end) = self.end_of_input.filter(|_| flight.ending) {
                    tracing::info!(job = %config.name, "end of input announced");
                    end.sent.store(true, Ordering::SeqCst);
                }
                stats.add(&flight.done);
                // Timed to when the commit completed, not to now (the loop may have been
                // polling the next checkpoint meanwhile).
                let finished = self.committer.finished().unwrap_or_else(Instant::now);
                let took = finished.saturating_duration_since(flight.started);
                self.metrics.committed(&flight.done, took.as_secs_f64());
                let (entries, windows) = self.processor.state_size();
                self.metrics.window_state(entries, windows);
                tracing::debug!(job = %config.name, input = flight.input, internal = flight.internal, produced = flight.produced, poll_ms = flight.polled_ms, process_ms = flight.processed_ms, commit_ms = commit_ms(&flight, self.committer.finished()), "checkpoint committed");
                Ok(true)
            }
            Err(error) if error.fenced().is_some() => Err(error),
            Err(error) => {
                stats.checkpoints_aborted += 1;
                self.metrics.aborted();
                tracing::warn!(job = %config.name, %error, "checkpoint aborted; rewinding to the committed offsets");
                if rewind {
                    self.prefetch.settle();
                    // After a rebalance (seen by the next take) the assignment starts from
                    // the committed offsets anyway, and a partition just assigned cannot be
                    // sought.
                    if !self.consumer.context().rebalanced() {
                        consumer::rewind(self.consumer)?;
                    }
                    self.processor.reload(self.consumer)?;
                }
                Ok(false)
            }
        }
    }

    /// After a rebalance: what was polled is dropped (eager assignment: the partitions kept or
    /// gained start again from their committed offsets) and the processor reloads the state of
    /// what is owned now.
    fn rebalanced(&mut self, stats: &mut JobStats, dropped: usize) -> Result<()> {
        let config = self.config;
        stats.rebalances += 1;
        self.metrics.rebalanced();
        tracing::info!(job = %config.name, dropped, "rebalance: buffered records dropped");
        self.processor.reload(self.consumer)?;
        if let Some(end) = self
            .end_of_input
            .filter(|end| end.requested() && end.sent())
        {
            // What was announced went out for the partitions owned then (possibly none, by a
            // copy not yet assigned any), and the merging side rebuilds its state without
            // which inputs ended: announce again for what this copy owns now.
            tracing::info!(job = %config.name, "end of input to be announced again after the rebalance");
            end.sent.store(false, Ordering::SeqCst);
            end.withdrawn.fetch_add(1, Ordering::SeqCst);
        }
        let (entries, windows) = self.processor.state_size();
        self.metrics.window_state(entries, windows);
        Ok(())
    }
}

/// The inputs that are stages' results: each chunk → its rows; a record that is not a chunk
/// is a dead letter.
fn expand_chunks(
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
fn schema_sample(
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
fn table_sample(
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
fn first_records(
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
            tracing::info!(job = %config.name, %input, "waiting for a first record to infer the schema from");
            waiting = true;
        }
        std::thread::sleep(FIRST_RECORD_WAIT);
    }
    Ok(None)
}

/// Each input's decoder (with the declared schema, or one inferred from its sample) and the
/// planned query.
fn prepare(
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
        return Err(StreamsError::Config(
            "tables are declared but the query joins none of them".into(),
        ));
    }
    Ok((decoders, tables, transform))
}

/// Decodes a checkpoint's input; records that do not decode become dead letters.
fn decode_input(
    config: &JobConfig,
    decoder: &RecordDecoder,
    input: &[InputRecord],
    checkpoint: &mut Checkpoint,
    stats: &mut JobStats,
) -> Result<RecordBatch> {
    Ok(decode_input_rejecting(config, decoder, input, checkpoint, stats)?.0)
}

/// [`decode_input`], also answering the (partition, offset) of the records that did not decode.
fn decode_input_rejecting(
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

/// The longest a job's poll blocks before it looks at `stop` and rebalances again.
const POLL_SLICE: Duration = Duration::from_millis(100);

/// Polls until the checkpoint is due: its interval has passed, it holds the most records a
/// checkpoint may, or it holds records and the input has been quiet for
/// `checkpoint_quiet_ms` (what a burst brought is committed without waiting out the
/// interval); returns early on a rebalance or `stop`.
fn fill(
    config: &JobConfig,
    consumer: &JobConsumer,
    internal_topic: Option<&str>,
    stop: &AtomicBool,
) -> Polled {
    let due = Instant::now() + Duration::from_millis(config.checkpoint_interval_ms);
    let quiet =
        (config.checkpoint_quiet_ms > 0).then(|| Duration::from_millis(config.checkpoint_quiet_ms));
    let mut polled = Polled {
        inputs: config
            .inputs
            .iter()
            .map(|t| (t.clone(), Vec::new()))
            .collect(),
        internal_topic: internal_topic.unwrap_or_default().to_string(),
        ..Polled::default()
    };
    // When the newest record came — the next turn's clock read, not one more per record: with
    // `quiet`, the checkpoint is due that long after it.
    let mut last_record: Option<Instant> = None;
    let mut record_came = false;
    // The bound counts rows: a stage's results come as chunks of many (`chunks`).
    let mut rows = 0;
    while rows < config.checkpoint_max_records && !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if record_came {
            last_record = Some(now);
            record_came = false;
        }
        let quiet_until = quiet.zip(last_record).map(|(quiet, last)| last + quiet);
        let until = quiet_until.map_or(due, |quiet_until| quiet_until.min(due));
        if now >= until || consumer.context().rebalanced() {
            break;
        }
        // In slices, so that `stop` and a rebalance are seen at once whatever the interval.
        let Some(message) = consumer.poll((until - now).min(POLL_SLICE)) else {
            continue;
        };
        match message {
            Ok(message) => {
                record_came = true;
                rows += match !config.inputs_in_chunks.is_empty()
                    && config.inputs_in_chunks.contains(message.topic())
                {
                    true => chunks::rows_in(message.payload()),
                    false => 1,
                };
                let record = InputRecord::from_message(&message);
                match polled.inputs.iter_mut().find(|(t, _)| t == message.topic()) {
                    Some((_, records)) => records.push(record),
                    None => polled.internal.push(record),
                }
            }
            Err(error) => tracing::warn!(job = %config.name, %error, "consumer error"),
        }
    }
    polled
}
