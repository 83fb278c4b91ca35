//! A windowed transform: the streams engine's windowed job (`weir_streams::job`) runs beside
//! the sinks, reading the pipeline's topic and writing each closed window once — exactly once,
//! with its state in a changelog — to `weir-<pipeline>-windows`, which the sinks then read.
//! Records later than `allowed_lateness_ms` go to `<topic>-late`. A transform joining declared
//! tables runs the same way, as job `<pipeline>-joined` writing to `weir-<pipeline>-joined`,
//! keeping its tables current as it reads. An updating aggregate (`GROUP BY` without a window)
//! runs as the windowed job too, its output topic compacted: upserts and tombstones keyed by
//! group, which the sinks apply as changes (`weir_connectors::sink::Changes`). A bounded run
//! (`--until-caught-up`) ends the job's input once everything was consumed: the windows still
//! open are closed and emitted before the job stops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use weir_client::{ClientSettings, CLUSTER_TIMEOUT};
use weir_streams::io::decode::RecordDecoder;
use weir_streams::job::{self, EndOfInput, JobConfig, JobMetrics};
use weir_streams::record::ValueFormat;
use weir_streams::io::topic_reader::{self, Limit, Range};

use crate::config::PipelineConfig;
use crate::error::{PipelineError, Result};
use crate::schema::{source_format, stream_schemas, table_schemas};

/// The job of a pipeline's windowed transform, or of one joining tables.
pub fn job_config(
    config: &PipelineConfig,
    client: &ClientSettings,
    decoder: &RecordDecoder,
) -> Result<Option<JobConfig>> {
    let Some(transform) = config.transform.as_ref() else {
        return Ok(None);
    };
    let mut job = JobConfig::new(
        &job_name(config),
        &client.bootstrap,
        &config.topic_name(),
        &config.job_output_topic(),
        &transform.sql,
    );
    job.tables = transform
        .tables
        .iter()
        .map(|t| (t.name.clone(), t.topic.clone()))
        .collect();
    job.table_schemas = table_schemas(config)?.into_iter().collect();
    job.table_history_ms = transform.table_history_ms;
    job.table = Some(transform.table.clone());
    if transform.joins_streams() {
        // The pipeline's topic and the streams are the job's inputs, named as in the query.
        job.inputs
            .extend(transform.streams.iter().map(|s| s.topic.clone()));
        job.input_names = std::iter::once(transform.table.clone())
            .chain(transform.streams.iter().map(|s| s.name.clone()))
            .collect();
        job.table = None;
        job.input_schemas = stream_schemas(config)?.into_iter().collect();
    }
    job.input_format = if source_format(config).is_json() {
        ValueFormat::Json
    } else {
        ValueFormat::Raw
    };
    job.schema = Some(decoder.value_schema().as_ref().clone());
    job.checkpoint_interval_ms = config.checkpoint_interval_ms;
    job.dead_letter_topic = Some(config.dead_letter_topic());
    job.allowed_lateness_ms = transform.allowed_lateness_ms;
    job.idle_timeout_ms = transform.idle_timeout_ms;
    job.late_topic = Some(config.late_topic());
    job.max_state_entries = transform.max_state_entries;
    job.client = client.clone();
    Ok(Some(job))
}

/// `<pipeline>-windows` (kept for windowed transforms, whose offsets and state are under it),
/// `<pipeline>-joined` for one joining tables.
fn job_name(config: &PipelineConfig) -> String {
    match &config.transform {
        Some(transform) if transform.joins() => format!("{}-joined", config.name),
        _ => format!("{}-windows", config.name),
    }
}

/// How many copies of the job this process runs, and what tells them from other processes'.
pub struct Copies {
    pub count: usize,
    /// Prefixes the copies' instance ids (their transactional ids): `<instance>-<index>`.
    pub instance: Option<String>,
}

/// Runs copies of the job (they share the input's partitions through the job's consumer
/// group, with the copies other processes run too) until `stop`; with `source_done` given (a bounded run), ends their input once
/// the source ended and the job committed everything up to the topic's end, and stops them once
/// the windows that closed were committed.
pub fn run(
    job: JobConfig,
    pipeline: &str,
    copies: Copies,
    stop: Arc<AtomicBool>,
    source_done: Option<Arc<AtomicBool>>,
) -> Result<()> {
    let job_stop = Arc::new(AtomicBool::new(false));
    let ends: Vec<Arc<EndOfInput>> = (0..copies.count.max(1))
        .map(|_| Arc::new(EndOfInput::default()))
        .collect();
    let watcher = {
        let (job_stop, job, ends) = (Arc::clone(&job_stop), job.clone(), ends.clone());
        std::thread::spawn(move || {
            let mut watch = None;
            while !stop.load(Ordering::SeqCst)
                && !bounded_run_finished(source_done.as_deref(), &mut watch, &job, &ends)
            {
                std::thread::sleep(Duration::from_millis(200));
            }
            job_stop.store(true, Ordering::SeqCst);
        })
    };
    let threads: Vec<_> = ends
        .iter()
        .enumerate()
        .map(|(index, end)| {
            let mut copy = job.clone();
            copy.instance_id = match &copies.instance {
                Some(instance) => format!("{instance}-{index}"),
                None => index.to_string(),
            };
            let (job_stop, end) = (Arc::clone(&job_stop), Arc::clone(end));
            std::thread::spawn(move || {
                let metrics = JobMetrics::new(&copy.name, &copy.instance_id);
                let result = job::run_with_metrics(&copy, &job_stop, Some(&end), &metrics);
                // One copy failing stops the others (the pipeline stops with its error).
                job_stop.store(true, Ordering::SeqCst);
                result
            })
        })
        .collect();
    let mut result = Ok(());
    for copy in threads {
        let outcome = copy.join().map_err(|_| PipelineError::Stage {
            pipeline: pipeline.to_string(),
            message: "a windowed job copy panicked".into(),
        });
        if let Err(error) =
            outcome.and_then(|r| r.map(|_| ()).map_err(PipelineError::streams(pipeline)))
        {
            if result.is_ok() {
                result = Err(error);
            }
        }
    }
    job_stop.store(true, Ordering::SeqCst);
    let _ = watcher.join();
    result
}

/// A bounded run's source ended, the job committed everything, announced the end of its input
/// and committed what that closed (the watch's clients are made when first needed).
fn bounded_run_finished(
    source_done: Option<&AtomicBool>,
    watch: &mut Option<CommitWatch>,
    job: &JobConfig,
    ends: &[Arc<EndOfInput>],
) -> bool {
    if !source_done.is_some_and(|done| done.load(Ordering::SeqCst)) {
        return false;
    }
    if watch.is_none() {
        *watch = CommitWatch::new(job).ok();
    }
    // Read before looking at the offsets: announced, then everything after it committed. A
    // rebalance while the offsets are read (reading them can wait for it) withdraws the
    // announcement: then the two reads are not one state, and the next look decides.
    let withdrawals = || ends.iter().map(|end| end.withdrawals()).sum::<u64>();
    let withdrawn_before = withdrawals();
    let sent = ends.iter().all(|end| end.sent());
    let committed = watch
        .as_ref()
        .is_some_and(|watch| watch.committed_to_end(job).unwrap_or(false));
    if committed {
        ends.iter().for_each(|end| end.request());
    }
    committed && sent && withdrawals() == withdrawn_before
}

/// Tells whether the job has committed everything there is: the clients are made once and
/// asked every time the watcher looks.
struct CommitWatch {
    /// A consumer in the job's group, to read its committed offsets.
    group: BaseConsumer,
    reader: topic_reader::Reader,
}

impl CommitWatch {
    fn new(job: &JobConfig) -> Result<Self> {
        let pipeline = job.name.as_str();
        let group = job
            .client
            .config(&[("group.id", &job.name)])
            .create()
            .map_err(PipelineError::kafka(pipeline, "creating a consumer"))?;
        let reader =
            topic_reader::consumer(&job.client).map_err(PipelineError::streams(pipeline))?;
        Ok(CommitWatch { group, reader })
    }

    /// No committed record of the job's inputs, nor of its repartition topic (a windowed job's
    /// partial aggregates, an interval join's rows it still has to join), lies at or after the
    /// job's committed offsets.
    fn committed_to_end(&self, job: &JobConfig) -> Result<bool> {
        let mut topics = job.inputs.clone();
        // A job joining tables has no repartition topic (windows cannot join tables yet).
        if job.tables.is_empty() {
            topics.push(job.repartition_topic());
        }
        for topic in topics {
            if !self.topic_committed_to_end(&job.name, &topic)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn topic_committed_to_end(&self, pipeline: &str, topic: &str) -> Result<bool> {
        let mut partitions = TopicPartitionList::new();
        for partition in topic_reader::partitions(&self.reader, topic, CLUSTER_TIMEOUT)
            .map_err(PipelineError::streams(pipeline))?
        {
            partitions.add_partition(topic, partition);
        }
        let committed = self
            .group
            .committed_offsets(partitions, CLUSTER_TIMEOUT)
            .map_err(PipelineError::kafka(pipeline, "reading committed offsets"))?;
        let ranges: Vec<Range> = committed
            .elements()
            .iter()
            .map(|element| Range {
                partition: element.partition(),
                start: match element.offset() {
                    Offset::Offset(offset) => Some(offset),
                    _ => None,
                },
                end: None,
            })
            .collect();
        let left = topic_reader::read_ranges(
            &self.reader,
            topic,
            &ranges,
            Limit::StopAt(1),
            CLUSTER_TIMEOUT,
        )
        .map_err(PipelineError::streams(pipeline))?;
        Ok(left.is_empty())
    }
}
