//! A sink stage: the pipeline's topic read (read_committed) from the offsets the sink holds,
//! decoded into Arrow batches and run through the stateless SQL transform (on `parallelism`
//! row workers, see [`crate::rows`]), written to the sink,
//! and committed — rows and offsets together, in the sink — whenever the sink asks to. An
//! updating aggregate's output reaches the sink as changes (upserts and deletions by key)
//! instead of rows to append. A crash
//! anywhere resumes from what the sink committed: nothing lost, nothing twice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::datatypes::SchemaRef;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::{Offset, TopicPartitionList};
use weir_client::{ClientSettings, CLUSTER_TIMEOUT};
use weir_connectors::registry::SinkTarget;
use weir_connectors::sink::{Sink, SinkOffsets, SinkStats};
use weir_connectors::ConnectorError;
use weir_streams::record::InputRecord;

use crate::config::{PipelineConfig, SinkConfig};
use crate::error::{PipelineError, Result};
use crate::membership::Membership;
use crate::metrics::PipelineMetrics;
use crate::rows::{RowWorkers, Rows, SinkInput};

/// The most records decoded and transformed at once.
const MAX_BATCH_RECORDS: usize = 20_000;
/// How long a batch waits for more records.
const BATCH_WAIT: Duration = Duration::from_millis(100);

pub struct DeliverStage {
    pub config: PipelineConfig,
    pub sink_index: usize,
    /// The pipeline's cluster.
    pub client: ClientSettings,
    pub metrics: Arc<PipelineMetrics>,
    pub stop: Arc<AtomicBool>,
    /// Set when what feeds the sink's topic ended (the source stage, or the windowed job after
    /// it) in a bounded run: the sink ends once it read everything.
    pub source_done: Arc<AtomicBool>,
}

/// The part of the input this copy writes now: the sink opened for it, the consumer reading
/// the owned partitions (none when the copy owns nothing), and the next offset of each.
struct Work {
    sink: Box<dyn Sink>,
    consumer: Option<StreamConsumer>,
    next: SinkOffsets,
    uncommitted: Uncommitted,
    last_commit: Instant,
    /// Another copy committed to one of the partitions: start again from the sink's offsets.
    fenced: bool,
}

impl Work {
    fn new(sink: Box<dyn Sink>, consumer: Option<StreamConsumer>, next: SinkOffsets) -> Self {
        Work {
            sink,
            consumer,
            next,
            uncommitted: Uncommitted::default(),
            last_commit: Instant::now(),
            fenced: false,
        }
    }
}

fn add(total: &mut SinkStats, more: SinkStats) {
    total.rows_committed += more.rows_committed;
    total.commits += more.commits;
    total.files_published += more.files_published;
}

/// What the sink reads: the topic, its rows' columns, and whether they come as changes.
struct Input<'a> {
    topic: &'a str,
    schema: &'a SchemaRef,
    changes: bool,
}

/// What was not committed yet.
#[derive(Default)]
struct Uncommitted {
    records_in: u64,
    rows_out: u64,
    rejected: u64,
}

/// A sink as its config declares it; `topic` is what it reads.
pub fn make_sink(pipeline: &str, config: &SinkConfig, topic: &str) -> Result<Box<dyn Sink>> {
    let target = SinkTarget { pipeline, topic };
    config
        .connector()
        .open(&target)
        .map_err(PipelineError::connector(pipeline))
}

impl DeliverStage {
    fn label(&self) -> String {
        format!(
            "{}-{}",
            self.config.sinks[self.sink_index].kind(),
            self.sink_index
        )
    }

    /// The group sharing this sink's work between copies: `weir-pipeline-<name>-<label>`.
    fn group(&self) -> String {
        format!("weir-pipeline-{}-{}", self.config.name, self.label())
    }

    /// Writes the partitions of the input this copy of the pipeline owns (all of them when it
    /// runs alone) until stopped, following the group as other copies come and go.
    pub async fn run(&self) -> Result<SinkStats> {
        let name = self.config.name.clone();
        let SinkInput { topic, workers } = SinkInput::new(&self.config).await?;
        let output_schema = workers.output_schema();
        let changes = workers.changes();
        let sink = make_sink(&name, &self.config.sinks[self.sink_index], &topic)?;
        let shares = sink.shares_partitions();
        let membership_topic = if shares {
            topic.clone()
        } else {
            self.config.positions_topic()
        };
        let group = self.group();
        // Joining reads metadata (blocking): off the runtime's workers, which an embedded
        // broker on the same runtime needs to answer (two sink stages blocking both workers of
        // a 2-core machine starved it).
        let mut membership = tokio::task::block_in_place(|| {
            Membership::join(&name, &self.client, &group, &membership_topic)
        })?;
        let labels = [name.as_str(), &self.label()];
        let mut spare_sink = Some(sink);
        let mut work: Option<Work> = None;
        let mut stats = SinkStats::default();
        loop {
            let changed = membership.poll();
            let fenced = work.as_ref().is_some_and(|w| w.fenced);
            if changed || fenced {
                // A sink with one writer: the copy holding the lease writes every partition.
                let partitions = match (shares, membership.holds_lease()) {
                    (true, _) => Some(membership.owned().to_vec()),
                    (false, true) => None,
                    (false, false) => Some(Vec::new()),
                };
                if let Some(old) = work.take() {
                    add(&mut stats, old.sink.stats());
                }
                let sink = match spare_sink.take() {
                    Some(sink) => sink,
                    None => make_sink(&name, &self.config.sinks[self.sink_index], &topic)?,
                };
                let input = Input {
                    topic: &topic,
                    schema: &output_schema,
                    changes,
                };
                work = Some(self.start(sink, &input, partitions).await?);
            }
            let Some(current) = work.as_mut() else {
                // The group has not answered yet.
                if self.stop.load(Ordering::SeqCst) {
                    return Ok(stats);
                }
                tokio::time::sleep(BATCH_WAIT).await;
                continue;
            };
            let records = match &current.consumer {
                Some(consumer) => self.poll_batch(consumer).await?,
                None => {
                    tokio::time::sleep(BATCH_WAIT).await;
                    Vec::new()
                }
            };
            let polled_nothing = records.is_empty();
            if !records.is_empty() {
                for record in &records {
                    current.next.insert(record.partition, record.offset + 1);
                }
                let rows = self
                    .rows(&workers, records, &mut current.uncommitted)
                    .await?;
                for batch in &rows.batches {
                    current
                        .sink
                        .write(batch)
                        .await
                        .map_err(PipelineError::connector(&name))?;
                }
                for changes in &rows.changes {
                    current
                        .sink
                        .apply(changes)
                        .await
                        .map_err(PipelineError::connector(&name))?;
                }
            }
            let stopping = self.stop.load(Ordering::SeqCst)
                || (self.source_done.load(Ordering::SeqCst)
                    && polled_nothing
                    && self.lag(current, &topic)? == 0);
            if stopping || current.sink.should_commit(current.last_commit.elapsed()) {
                self.commit(current, &topic, &labels).await?;
            }
            if stopping {
                let current = work.take().expect("the work just used");
                add(&mut stats, current.sink.stats());
                tracing::info!(pipeline = %name, sink = %self.label(), ?stats, "sink stage ended");
                return Ok(stats);
            }
        }
    }

    /// Opens the sink and starts reading `partitions` (`None`: all of them) from the offsets
    /// it committed.
    async fn start(
        &self,
        mut sink: Box<dyn Sink>,
        input: &Input<'_>,
        partitions: Option<Vec<i32>>,
    ) -> Result<Work> {
        let (name, topic) = (&self.config.name, input.topic);
        if partitions.as_ref().is_some_and(Vec::is_empty) {
            // Owning nothing, the sink stays closed: opening a one-writer sink recovers its
            // store (a Parquet sink discards staged files) or fences its transactional id (a
            // Kafka sink), which would break the copy holding the lease.
            tracing::info!(pipeline = %name, sink = %self.label(), "sink stage owns no partitions; standing by");
            return Ok(Work::new(sink, None, SinkOffsets::new()));
        }
        if input.changes {
            sink.expect_changes()
                .map_err(PipelineError::connector(name))?;
        }
        let committed = sink
            .open(input.schema.clone())
            .await
            .map_err(PipelineError::connector(name))?;
        let (consumer, read) = tokio::task::block_in_place(|| {
            self.consumer(topic, partitions.as_deref(), &committed)
        })?;
        let next: SinkOffsets = committed
            .into_iter()
            .filter(|(partition, _)| read.contains(partition))
            .collect();
        tracing::info!(pipeline = %name, sink = %self.label(), partitions = ?read, committed = ?next, "sink stage owns its partitions");
        Ok(Work::new(sink, Some(consumer), next))
    }

    /// Commits what was written, with the offsets it covers. Fenced (another copy owns a
    /// partition now), the rows are dropped and the work restarts from what the sink holds.
    async fn commit(&self, work: &mut Work, topic: &str, labels: &[&str]) -> Result<()> {
        let started = Instant::now();
        let Some(consumer) = &work.consumer else {
            return Ok(()); // owning nothing, there is nothing to commit
        };
        let target = self.positions(consumer, topic, &work.next)?;
        match work.sink.commit(&target).await {
            Ok(()) => {}
            Err(ConnectorError::Fenced(fenced)) => {
                tracing::warn!(pipeline = %self.config.name, sink = %self.label(), reason = %fenced.reason, "fenced: dropping the uncommitted rows and reading again from the sink's offsets");
                work.fenced = true;
                return Ok(());
            }
            Err(error) => return Err(PipelineError::connector(&self.config.name)(error)),
        }
        work.next = target;
        self.count(labels, std::mem::take(&mut work.uncommitted), started);
        work.last_commit = Instant::now();
        if let Ok(lag) = self.lag(work, topic) {
            self.metrics
                .sink_lag_records
                .with_label_values(labels)
                .set(lag);
        }
        Ok(())
    }

    /// A consumer reading `partitions` (`None`: every partition of `topic`) from `committed`
    /// (the beginning where nothing is); also the partitions it reads.
    fn consumer(
        &self,
        topic: &str,
        partitions: Option<&[i32]>,
        committed: &SinkOffsets,
    ) -> Result<(StreamConsumer, Vec<i32>)> {
        let name = &self.config.name;
        let group = self.group();
        // librdkafka wants a group for assign(); this consumer never joins it (the membership
        // does) and never commits to it (the sink keeps the offsets).
        let consumer: StreamConsumer = self
            .client
            .config(&[
                ("group.id", &group),
                ("enable.auto.commit", "false"),
                ("enable.auto.offset.store", "false"),
                ("isolation.level", "read_committed"),
                ("auto.offset.reset", "earliest"),
                ("fetch.queue.backoff.ms", "20"),
            ])
            .create()
            .map_err(PipelineError::kafka(name, "creating the consumer"))?;
        let partitions = match partitions {
            Some(partitions) => partitions.to_vec(),
            None => {
                let metadata = consumer
                    .fetch_metadata(Some(topic), CLUSTER_TIMEOUT)
                    .map_err(PipelineError::kafka(name, "reading metadata"))?;
                metadata
                    .topics()
                    .iter()
                    .filter(|t| t.name() == topic)
                    .flat_map(|t| t.partitions().iter().map(|p| p.id()))
                    .collect()
            }
        };
        if partitions.is_empty() {
            return Err(PipelineError::Stage {
                pipeline: name.clone(),
                message: format!("topic {topic} has no partitions"),
            });
        }
        let mut assignment = TopicPartitionList::new();
        for partition in &partitions {
            let offset = committed
                .get(partition)
                .map_or(Offset::Beginning, |o| Offset::Offset(*o));
            assignment
                .add_partition_offset(topic, *partition, offset)
                .map_err(PipelineError::kafka(name, "assigning partitions"))?;
        }
        consumer
            .assign(&assignment)
            .map_err(PipelineError::kafka(name, "assigning partitions"))?;
        Ok((consumer, partitions))
    }

    async fn poll_batch(&self, consumer: &StreamConsumer) -> Result<Vec<InputRecord>> {
        let deadline = tokio::time::Instant::now() + BATCH_WAIT;
        let mut records = Vec::new();
        while records.len() < MAX_BATCH_RECORDS {
            match tokio::time::timeout_at(deadline, consumer.recv()).await {
                Err(_) => break,
                Ok(Ok(message)) => records.push(InputRecord::from_message(&message)),
                Ok(Err(KafkaError::PartitionEOF(_))) => continue,
                Ok(Err(error)) => {
                    return Err(PipelineError::kafka(&self.config.name, "consuming")(error))
                }
            }
        }
        Ok(records)
    }

    /// Records → rows, on the stage's row workers; undecodable records are logged and counted.
    async fn rows(
        &self,
        workers: &RowWorkers,
        records: Vec<InputRecord>,
        uncommitted: &mut Uncommitted,
    ) -> Result<Rows> {
        let records_in = records.len() as u64;
        let rows = workers.rows(records).await?;
        for (partition, offset, reason) in &rows.rejected {
            tracing::warn!(pipeline = %self.config.name, sink = %self.label(), partition, offset, %reason, "record left out: it does not decode");
        }
        uncommitted.records_in += records_in;
        uncommitted.rejected += rows.rejected.len() as u64;
        uncommitted.rows_out += rows.rows_out;
        Ok(rows)
    }

    /// The offsets to commit: past every record handed out, and past the transaction markers
    /// that follow them (the consumer's position), so a resumed read starts at new data.
    fn positions(
        &self,
        consumer: &StreamConsumer,
        topic: &str,
        next: &SinkOffsets,
    ) -> Result<SinkOffsets> {
        let mut target = next.clone();
        let positions = consumer
            .position()
            .map_err(PipelineError::kafka(&self.config.name, "reading positions"))?;
        for element in positions.elements_for_topic(topic) {
            if let (Offset::Offset(position), Some(seen)) =
                (element.offset(), next.get(&element.partition()))
            {
                if position > *seen {
                    target.insert(element.partition(), position);
                }
            }
        }
        Ok(target)
    }

    /// Records not read yet: each owned partition's end minus the consumer's position (or,
    /// before the first record, where reading started). Nothing while the group has not
    /// answered: a bounded run waits for its partitions.
    fn lag(&self, work: &Work, topic: &str) -> Result<i64> {
        let name = &self.config.name;
        let Some(consumer) = &work.consumer else {
            return Ok(0);
        };
        let positions = consumer
            .position()
            .map_err(PipelineError::kafka(name, "reading positions"))?;
        let mut lag = 0;
        for element in positions.elements_for_topic(topic) {
            let (low, high) = tokio::task::block_in_place(|| {
                consumer.fetch_watermarks(topic, element.partition(), CLUSTER_TIMEOUT)
            })
            .map_err(PipelineError::kafka(name, "reading end offsets"))?;
            let position = match element.offset() {
                Offset::Offset(position) => position,
                _ => work.next.get(&element.partition()).copied().unwrap_or(low),
            };
            lag += (high - position).max(0);
        }
        Ok(lag)
    }

    fn count(&self, labels: &[&str], uncommitted: Uncommitted, started: Instant) {
        let metrics = &self.metrics;
        metrics
            .sink_records_in
            .with_label_values(labels)
            .inc_by(uncommitted.records_in);
        metrics
            .sink_rows_out
            .with_label_values(labels)
            .inc_by(uncommitted.rows_out);
        metrics
            .sink_records_rejected
            .with_label_values(labels)
            .inc_by(uncommitted.rejected);
        metrics.sink_commits.with_label_values(labels).inc();
        metrics
            .sink_commit_seconds
            .with_label_values(labels)
            .observe(started.elapsed().as_secs_f64());
    }
}
