//! Running pipelines: the cluster (embedded or named), each pipeline's topics, its source stage
//! on a thread of its own and a sink stage per sink. The first stage to fail stops the others
//! (each commits what it can) and its error is the run's; a stop request ends the run with a
//! last commit everywhere.

use std::future::Future;
use std::pin::Pin;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use weir_client::ClientSettings;
use weir_connectors::sink::SinkStats;
use weir_streams::job::JobConfig;

use crate::cluster::{ensure_topics, start_embedded, TransformRun};
use crate::config::PipelineConfig;
use crate::deliver::DeliverStage;
use crate::error::{PipelineError, Result};
use crate::http_ingest::serve;
use crate::ingest::IngestStage;
use crate::load::LoadedPipeline;
use crate::metrics::PipelineMetrics;
use crate::schema::{emits_changes, planned_transform, runs_as_job, topic_decoder};
use crate::windows;

#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Where the embedded broker keeps its data.
    pub data_dir: PathBuf,
    /// End once every source has nothing more and every sink committed all of it.
    pub until_caught_up: bool,
    /// Names this copy among the copies of the pipelines running at once (a pod's name): it
    /// goes into the transactional ids of windowed jobs, which must differ between copies.
    /// `None` for a copy running alone.
    pub instance: Option<String>,
}

/// What each sink committed during the run.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    pub sinks: Vec<SinkSummary>,
}

#[derive(Debug, Clone)]
pub struct SinkSummary {
    pub pipeline: String,
    pub sink: String,
    pub stats: SinkStats,
}

enum Finished {
    Source { pipeline: String },
    Sink(SinkSummary),
}

/// The stages of every pipeline, running: each ends with what it finished.
type Stages = FuturesUnordered<tokio::task::JoinHandle<Result<Finished>>>;

///
/// Boxed so that the running (DataFusion's planning, the connectors, the embedded broker) is
/// compiled once, in this crate, not again in each crate that awaits it.
pub fn run(
    pipelines: Vec<LoadedPipeline>,
    options: RunOptions,
    metrics: Arc<PipelineMetrics>,
    stop: Arc<AtomicBool>,
) -> Pin<Box<dyn Future<Output = Result<RunSummary>> + Send>> {
    Box::pin(run_all(pipelines, options, metrics, stop))
}

async fn run_all(
    pipelines: Vec<LoadedPipeline>,
    options: RunOptions,
    metrics: Arc<PipelineMetrics>,
    stop: Arc<AtomicBool>,
) -> Result<RunSummary> {
    let embedded = if pipelines.iter().any(|p| p.config.bootstrap.is_none()) {
        Some(start_embedded(&options.data_dir).await?)
    } else {
        None
    };
    let embedded_address = embedded.as_ref().map(|b| b.local_addr().to_string());
    let mut stages = Stages::new();
    for pipeline in pipelines {
        let config = pipeline.config;
        let bootstrap = config
            .bootstrap
            .clone()
            .or_else(|| embedded_address.clone())
            .unwrap_or_default();
        let wiring = Wiring {
            client: config.client(&bootstrap),
            config,
            options: &options,
            metrics: &metrics,
            stop: &stop,
        };
        wiring.start(&mut stages).await?;
    }
    let (summary, first_error) = finish(stages, &stop).await;
    if let Some(broker) = embedded {
        broker.shutdown().await?;
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(summary),
    }
}

/// Waits for every stage; the first failure stops the others.
async fn finish(mut stages: Stages, stop: &AtomicBool) -> (RunSummary, Option<PipelineError>) {
    let mut summary = RunSummary::default();
    let mut first_error = None;
    while let Some(joined) = stages.next().await {
        let result = joined.unwrap_or_else(|e| {
            Err(PipelineError::Stage {
                pipeline: "?".into(),
                message: format!("a stage panicked: {e}"),
            })
        });
        match result {
            Ok(Finished::Source { pipeline }) => tracing::debug!(%pipeline, "source stage ended"),
            Ok(Finished::Sink(sink)) => summary.sinks.push(sink),
            Err(error) => {
                tracing::error!(%error, "stage failed; stopping the run");
                stop.store(true, Ordering::SeqCst);
                first_error.get_or_insert(error);
            }
        }
    }
    (summary, first_error)
}

/// One pipeline's stages, wired in order: its transform job (when the SQL runs as one), its
/// source, its sinks.
struct Wiring<'a> {
    config: PipelineConfig,
    client: ClientSettings,
    options: &'a RunOptions,
    metrics: &'a Arc<PipelineMetrics>,
    stop: &'a Arc<AtomicBool>,
}

impl Wiring<'_> {
    async fn start(self, stages: &mut Stages) -> Result<()> {
        let config = &self.config;
        let decoder = topic_decoder(config)?;
        let transform_run = match planned_transform(config, &decoder).await? {
            Some(transform) if emits_changes(&transform) => TransformRun::ChangesJob,
            Some(transform) if runs_as_job(&transform) => TransformRun::Job,
            _ => TransformRun::InSinks,
        };
        let as_job = transform_run != TransformRun::InSinks;
        ensure_topics(config, &self.client, transform_run).await?;
        let source_done = Arc::new(AtomicBool::new(false));
        // What the sinks wait for in a bounded run: the source, or the transform's job after it.
        let upstream_done = if as_job {
            Arc::new(AtomicBool::new(false))
        } else {
            Arc::clone(&source_done)
        };
        if let Some(job) = windows::job_config(config, &self.client, &decoder)?.filter(|_| as_job) {
            stages.push(self.transform_job(job, &source_done, &upstream_done));
        }
        stages.push(self.source(&source_done));
        for sink_index in 0..config.sinks.len() {
            stages.push(self.sink(sink_index, &upstream_done));
        }
        Ok(())
    }

    /// The transform's job (windows, joins, views), marking `done` when it ends.
    fn transform_job(
        &self,
        job: JobConfig,
        source_done: &Arc<AtomicBool>,
        done: &Arc<AtomicBool>,
    ) -> tokio::task::JoinHandle<Result<Finished>> {
        let (pipeline, stop, done) = (
            self.config.name.clone(),
            Arc::clone(self.stop),
            Arc::clone(done),
        );
        let bounded = self.options.until_caught_up.then(|| Arc::clone(source_done));
        let copies = windows::Copies {
            count: self.config.parallelism,
            instance: self.options.instance.clone(),
        };
        tokio::spawn(async move {
            let name = pipeline.clone();
            let result =
                tokio::task::spawn_blocking(move || windows::run(job, &name, copies, stop, bounded))
                    .await;
            let result = result.unwrap_or_else(|e| {
                Err(PipelineError::Stage {
                    pipeline: pipeline.clone(),
                    message: format!("transform job panicked: {e}"),
                })
            });
            done.store(true, Ordering::SeqCst);
            result.map(|()| Finished::Source { pipeline })
        })
    }

    /// The source: served (HTTP) or polled, marking `done` when it ends.
    fn source(&self, done: &Arc<AtomicBool>) -> tokio::task::JoinHandle<Result<Finished>> {
        let config = &self.config;
        let done = Arc::clone(done);
        if let Some(http) = config.source.served() {
            let served = serve(
                config.clone(),
                http.clone(),
                self.client.clone(),
                Arc::clone(self.metrics),
                Arc::clone(self.stop),
            );
            let pipeline = config.name.clone();
            return tokio::spawn(async move {
                served.await?;
                done.store(true, Ordering::SeqCst);
                Ok(Finished::Source { pipeline })
            });
        }
        let ingest = IngestStage {
            config: config.clone(),
            client: self.client.clone(),
            metrics: Arc::clone(self.metrics),
            stop: Arc::clone(self.stop),
            until_caught_up: self.options.until_caught_up,
        };
        tokio::spawn(async move {
            let pipeline = ingest.config.name.clone();
            let result = tokio::task::spawn_blocking(move || ingest.run()).await;
            let result = result.unwrap_or_else(|e| {
                Err(PipelineError::Stage {
                    pipeline: pipeline.clone(),
                    message: format!("source stage panicked: {e}"),
                })
            });
            done.store(true, Ordering::SeqCst);
            result.map(|()| Finished::Source { pipeline })
        })
    }

    /// Sink `sink_index`, delivering until `upstream_done` (in a bounded run).
    fn sink(
        &self,
        sink_index: usize,
        upstream_done: &Arc<AtomicBool>,
    ) -> tokio::task::JoinHandle<Result<Finished>> {
        let stage = DeliverStage {
            config: self.config.clone(),
            sink_index,
            client: self.client.clone(),
            metrics: Arc::clone(self.metrics),
            stop: Arc::clone(self.stop),
            source_done: Arc::clone(upstream_done),
        };
        tokio::spawn(async move {
            let stats = stage.run().await?;
            Ok(Finished::Sink(SinkSummary {
                pipeline: stage.config.name.clone(),
                sink: format!("{}-{sink_index}", stage.config.sinks[sink_index].kind()),
                stats,
            }))
        })
    }
}
