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
mod input;
mod interval_join;
mod metrics;
mod poll;
mod prefetch;
mod processor;
pub mod purge;
mod repartition;
mod route;
pub mod stages;
mod stateful;
mod stateless;
mod stats;
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

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use rdkafka::consumer::Consumer;

pub use config::JobConfig;
pub use metrics::JobMetrics;
pub use poll::Polled;
pub use stats::JobStats;

use crate::error::{Result, StreamsError};
use crate::plan::window_spec::Windows;
use committer::Committer;
use consumer::JobConsumer;
use input::{expand_chunks, prepare, schema_sample, table_sample};
use prefetch::{Prefetch, Prefetched};
use processor::Processor;
use stats::Progress;
use transaction::{Checkpoint, CheckpointWriter};

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
        .map_err(|e| StreamsError::Internal(format!("cannot start the SQL runtime: {e}")))?;
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
        return Err(StreamsError::Query(format!(
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
            progress: Progress::new(),
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
    /// The info lines of what was committed.
    progress: Progress,
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
                self.progress.committed(&config.name, &flight.done);
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
