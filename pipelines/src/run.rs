//! Running pipelines: the cluster (embedded or named), each pipeline's topics, its source stage
//! on a thread of its own and a sink stage per sink. The first stage to fail stops the others
//! (each commits what it can) and its error is the run's; a stop request ends the run with a
//! last commit everywhere.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt};
use weir_connectors::sink::SinkStats;

use crate::cluster::{ensure_topics, start_embedded, TransformRun};
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

#[allow(clippy::too_many_lines)] // a pipeline's stages wired in order; to be split (#51)
pub async fn run(
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
    let mut stages = FuturesUnordered::new();
    for pipeline in pipelines {
        let config = pipeline.config;
        let bootstrap = config
            .bootstrap
            .clone()
            .or_else(|| embedded_address.clone())
            .unwrap_or_default();
        let client = config.client(&bootstrap);
        let decoder = topic_decoder(&config)?;
        let transform_run = match planned_transform(&config, &decoder).await? {
            Some(transform) if emits_changes(&transform) => TransformRun::ChangesJob,
            Some(transform) if runs_as_job(&transform) => TransformRun::Job,
            _ => TransformRun::InSinks,
        };
        let as_job = transform_run != TransformRun::InSinks;
        ensure_topics(&config, &client, transform_run).await?;
        let source_done = Arc::new(AtomicBool::new(false));
        // What the sinks wait for in a bounded run: the source, or the transform's job after it.
        let upstream_done = if as_job {
            Arc::new(AtomicBool::new(false))
        } else {
            Arc::clone(&source_done)
        };
        if let Some(job) = windows::job_config(&config, &client, &decoder)?.filter(|_| as_job) {
            let (pipeline, stop, done) = (
                config.name.clone(),
                Arc::clone(&stop),
                Arc::clone(&upstream_done),
            );
            let bounded = options.until_caught_up.then(|| Arc::clone(&source_done));
            let copies = windows::Copies {
                count: config.parallelism,
                instance: options.instance.clone(),
            };
            stages.push(tokio::spawn(async move {
                let name = pipeline.clone();
                let result = tokio::task::spawn_blocking(move || {
                    windows::run(job, &name, copies, stop, bounded)
                })
                .await;
                let result = result.unwrap_or_else(|e| {
                    Err(PipelineError::Stage {
                        pipeline: pipeline.clone(),
                        message: format!("transform job panicked: {e}"),
                    })
                });
                done.store(true, Ordering::SeqCst);
                result.map(|()| Finished::Source { pipeline })
            }));
        }
        let ingest = IngestStage {
            config: config.clone(),
            client: client.clone(),
            metrics: Arc::clone(&metrics),
            stop: Arc::clone(&stop),
            until_caught_up: options.until_caught_up,
        };
        let done = Arc::clone(&source_done);
        if let Some(http) = config.source.served() {
            let served = serve(
                config.clone(),
                http.clone(),
                client.clone(),
                Arc::clone(&metrics),
                Arc::clone(&stop),
            );
            let pipeline = config.name.clone();
            stages.push(tokio::spawn(async move {
                served.await?;
                done.store(true, Ordering::SeqCst);
                Ok(Finished::Source { pipeline })
            }));
        } else {
            stages.push(tokio::spawn(async move {
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
            }));
        }
        for sink_index in 0..config.sinks.len() {
            let stage = DeliverStage {
                config: config.clone(),
                sink_index,
                client: client.clone(),
                metrics: Arc::clone(&metrics),
                stop: Arc::clone(&stop),
                source_done: Arc::clone(&upstream_done),
            };
            stages.push(tokio::spawn(async move {
                let stats = stage.run().await?;
                Ok(Finished::Sink(SinkSummary {
                    pipeline: stage.config.name.clone(),
                    sink: format!("{}-{sink_index}", stage.config.sinks[sink_index].kind()),
                    stats,
                }))
            }));
        }
    }
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
    if let Some(broker) = embedded {
        broker.shutdown().await?;
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(summary),
    }
}
