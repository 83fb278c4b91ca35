//! The source stage: records polled from the source, parsed by the source's format, and
//! produced to the pipeline's topic (lines that do not parse to the dead-letter topic, with the
//! reason in a header), together with the source's position records — one transaction per
//! checkpoint. A failed checkpoint is aborted and the source restored to the last committed
//! positions, so every line lands exactly once. Of several copies of a pipeline, one reads the
//! source at a time (a lease through the group protocol, [`crate::membership`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_client::{CheckpointProducer, ClientSettings, Outgoing};
use weir_connectors::weblog::LogFormat;
use weir_connectors::{PositionUpdate, Source, SourceRecord};

use crate::config::{Delivery, PipelineConfig, SourceConfig};
use crate::error::{PipelineError, Result};
use crate::membership::Membership;
use crate::metrics::PipelineMetrics;

/// The longest a single poll waits, so a stop request is seen promptly.
const POLL_SLICE: Duration = Duration::from_millis(100);
/// The pause after an aborted checkpoint before trying again.
const RETRY_PAUSE: Duration = Duration::from_secs(1);
/// Header of a dead letter: why the line was refused.
pub const ERROR_HEADER: &str = "weir.error";
/// The source stage's producer settings (the user's client properties win over them): large
/// compressed batches, since a checkpoint's records are only visible once it commits.
const PRODUCER_DEFAULTS: &[(&str, &str)] =
    &[("batch.size", "1000000"), ("compression.type", "lz4")];
/// How long the cluster waits before aborting a transaction left open by a stage that died.
const TRANSACTION_TIMEOUT_MS: u64 = 60_000;

pub struct IngestStage {
    pub config: PipelineConfig,
    /// The pipeline's cluster.
    pub client: ClientSettings,
    pub metrics: Arc<PipelineMetrics>,
    pub stop: Arc<AtomicBool>,
    /// End once the source has nothing more (a bounded run), after committing everything.
    pub until_caught_up: bool,
}

/// The source a pipeline's config declares, and the format of its records.
pub fn make_source(
    config: &SourceConfig,
) -> Result<(Box<dyn Source>, LogFormat), weir_connectors::ConnectorError> {
    let connector = config.connector();
    Ok((connector.open()?, connector.format()))
}

/// Where a checkpoint's records go (named once, not per record).
struct Topics {
    records: String,
    dead_letters: String,
    positions: String,
}

struct Checkpoint {
    started: Instant,
    records: u64,
    produced: u64,
    dead_letters: u64,
}

/// How a stretch of owning the source ended.
enum Ownership {
    /// Stopped, or (a bounded run) the source has nothing more.
    Finished,
    /// Another copy of the pipeline owns the source now.
    Lost,
}

impl IngestStage {
    /// Runs the source whenever this copy of the pipeline owns it: copies share one lease, the
    /// positions topic's single partition in the group `weir-pipeline-<name>-source`, so one
    /// reads at a time and another takes over when it goes.
    pub fn run(&self) -> Result<()> {
        let name = self.config.name.as_str();
        let mut membership = Membership::join(
            name,
            &self.client,
            &self.source_id(),
            &self.config.positions_topic(),
        )?;
        loop {
            while !membership.holds_lease() {
                if self.stop.load(Ordering::SeqCst) {
                    return Ok(());
                }
                if !membership.poll() {
                    std::thread::sleep(POLL_SLICE);
                }
            }
            match self.run_owned(&mut membership)? {
                Ownership::Finished => return Ok(()),
                Ownership::Lost => {
                    tracing::info!(
                        pipeline = name,
                        "another copy of the pipeline owns the source now; standing by"
                    );
                    std::thread::sleep(RETRY_PAUSE);
                }
            }
        }
    }

    /// The source's group (its lease) and transactional id: `weir-pipeline-<name>-source`.
    fn source_id(&self) -> String {
        format!("weir-pipeline-{}-source", self.config.name)
    }

    /// Reads the source from the committed positions, one transaction per checkpoint, while
    /// this copy owns it.
    fn run_owned(&self, membership: &mut Membership) -> Result<Ownership> {
        let name = self.config.name.as_str();
        let transactional_id = self.source_id();
        let exactly_once = self.config.delivery == Delivery::ExactlyOnce;
        // Fences the transactions of any copy that owned the source before.
        let producer = if exactly_once {
            CheckpointProducer::transactional(
                &self.client,
                &transactional_id,
                TRANSACTION_TIMEOUT_MS,
                PRODUCER_DEFAULTS,
            )
        } else {
            CheckpointProducer::idempotent(&self.client, PRODUCER_DEFAULTS)
        };
        let mut producer = producer.map_err(PipelineError::client(name))?;
        let topics = Topics {
            records: self.config.topic_name(),
            dead_letters: self.config.dead_letter_topic(),
            positions: self.config.positions_topic(),
        };
        let mut committed = crate::positions::read(name, &self.client, &topics.positions)?;
        let mut source = self.restored_source(&committed)?;
        tracing::info!(
            pipeline = name,
            positions = committed.len(),
            "source stage started"
        );
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return Ok(Ownership::Finished);
            }
            membership.poll();
            if !membership.holds_lease() {
                // Between checkpoints: nothing is open to abort.
                return Ok(Ownership::Lost);
            }
            match self.checkpoint(&mut producer, &topics, source.0.as_mut(), source.1) {
                Ok(Some(updates)) => {
                    apply(&mut committed, updates);
                    source.0.committed();
                }
                Ok(None) => {
                    if self.until_caught_up && source.0.caught_up() {
                        tracing::info!(pipeline = name, "source caught up");
                        return Ok(Ownership::Finished);
                    }
                }
                Err(error) if error.fenced().is_some() => {
                    tracing::warn!(pipeline = name, %error, "source fenced by a newer copy of the pipeline");
                    return Ok(Ownership::Lost);
                }
                Err(error) => {
                    tracing::warn!(pipeline = name, %error, "source checkpoint failed; aborting it and resuming from the committed positions");
                    self.metrics
                        .source_checkpoints_aborted
                        .with_label_values(&[name])
                        .inc();
                    producer.abort().map_err(PipelineError::client(name))?;
                    std::thread::sleep(RETRY_PAUSE);
                    source = self.restored_source(&committed)?;
                }
            }
        }
    }

    fn restored_source(
        &self,
        committed: &HashMap<String, Vec<u8>>,
    ) -> Result<(Box<dyn Source>, LogFormat)> {
        let (mut source, format) = make_source(&self.config.source)
            .map_err(PipelineError::connector(&self.config.name))?;
        source
            .restore(committed)
            .map_err(PipelineError::connector(&self.config.name))?;
        Ok((source, format))
    }

    /// One checkpoint: poll for up to the interval, produce as records come, then commit them
    /// with the positions. `None` when there was nothing to commit.
    fn checkpoint(
        &self,
        producer: &mut CheckpointProducer,
        topics: &Topics,
        source: &mut dyn Source,
        format: LogFormat,
    ) -> Result<Option<Vec<PositionUpdate>>> {
        let name = self.config.name.as_str();
        let interval = Duration::from_millis(self.config.checkpoint_interval_ms);
        let max_records = self.config.checkpoint_max_records;
        let mut checkpoint = Checkpoint {
            started: Instant::now(),
            records: 0,
            produced: 0,
            dead_letters: 0,
        };
        let mut polled: Vec<SourceRecord> = Vec::new();
        let mut value = Vec::new();
        let mut begun = false;
        while checkpoint.started.elapsed() < interval && (checkpoint.records as usize) < max_records
        {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            let wait = interval
                .saturating_sub(checkpoint.started.elapsed())
                .min(POLL_SLICE);
            polled.clear();
            source
                .poll(max_records - checkpoint.records as usize, wait, &mut polled)
                .map_err(PipelineError::connector(name))?;
            if polled.is_empty() {
                if source.caught_up() && self.until_caught_up {
                    break;
                }
                continue;
            }
            if !begun {
                producer.begin().map_err(PipelineError::client(name))?;
                begun = true;
            }
            for record in &polled {
                self.send(
                    producer,
                    topics,
                    record,
                    format,
                    &mut value,
                    &mut checkpoint,
                )?;
            }
        }
        let updates = source
            .take_positions()
            .map_err(PipelineError::connector(name))?;
        if !begun && updates.is_empty() {
            return Ok(None);
        }
        if !begun {
            producer.begin().map_err(PipelineError::client(name))?;
        }
        for update in &updates {
            let position = Outgoing::new(
                &topics.positions,
                Some(update.key.as_bytes()),
                update.value.as_deref(),
            );
            producer
                .send(&position)
                .map_err(PipelineError::client(name))?;
        }
        producer.commit().map_err(PipelineError::client(name))?;
        self.count(&checkpoint);
        Ok(Some(updates))
    }

    fn send(
        &self,
        producer: &CheckpointProducer,
        topics: &Topics,
        record: &SourceRecord,
        format: LogFormat,
        value: &mut Vec<u8>,
        checkpoint: &mut Checkpoint,
    ) -> Result<()> {
        checkpoint.records += 1;
        let problem = match &record.problem {
            Some(problem) => Some(problem.clone()),
            None => {
                value.clear();
                let line = String::from_utf8_lossy(&record.value);
                parse(format, &line, value).err()
            }
        };
        let sent = match problem {
            None => {
                checkpoint.produced += 1;
                producer.send(&Outgoing::new(
                    &topics.records,
                    record.key.as_deref(),
                    Some(value),
                ))
            }
            Some(reason) => {
                checkpoint.dead_letters += 1;
                producer.send(&Outgoing {
                    headers: &[(ERROR_HEADER, reason.as_bytes())],
                    ..Outgoing::new(
                        &topics.dead_letters,
                        record.key.as_deref(),
                        Some(&record.value),
                    )
                })
            }
        };
        sent.map_err(PipelineError::client(&self.config.name))
    }

    fn count(&self, checkpoint: &Checkpoint) {
        let labels = [self.config.name.as_str()];
        let metrics = &self.metrics;
        metrics
            .source_records
            .with_label_values(&labels)
            .inc_by(checkpoint.records);
        metrics
            .records_produced
            .with_label_values(&labels)
            .inc_by(checkpoint.produced);
        metrics
            .parse_errors
            .with_label_values(&labels)
            .inc_by(checkpoint.dead_letters);
        metrics.source_checkpoints.with_label_values(&labels).inc();
        metrics
            .source_checkpoint_seconds
            .with_label_values(&labels)
            .observe(checkpoint.started.elapsed().as_secs_f64());
    }
}

fn parse(format: LogFormat, line: &str, value: &mut Vec<u8>) -> Result<(), String> {
    format.parse_into(line, value).map_err(|e| e.to_string())
}

fn apply(committed: &mut HashMap<String, Vec<u8>>, updates: Vec<PositionUpdate>) {
    for update in updates {
        match update.value {
            Some(value) => committed.insert(update.key, value),
            None => committed.remove(&update.key),
        };
    }
}
