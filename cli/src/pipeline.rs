//! `weir pipeline run|validate FILE_OR_DIRECTORY`: YAML pipelines (the pipelines crate).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::{Args, Subcommand};
use weir_pipelines::load::LoadedPipeline;
use weir_pipelines::metrics::PipelineMetrics;
use weir_pipelines::run::{run as run_pipelines, RunOptions};
use weir_pipelines::validate::check;

#[derive(Args)]
pub(crate) struct PipelineArgs {
    #[command(subcommand)]
    command: PipelineCommand,
}

#[derive(Subcommand)]
enum PipelineCommand {
    /// Run the pipelines of a YAML file or a directory of them until stopped (SIGINT/SIGTERM).
    Run(RunArgs),
    /// Check pipelines without running them (fields, connectors, SQL, cluster and databases).
    Validate(ValidateArgs),
}

#[derive(Args)]
struct RunArgs {
    /// A pipeline file, or a directory of *.yaml files.
    path: PathBuf,
    /// Where the embedded broker keeps its data (pipelines without `bootstrap`).
    #[arg(long, default_value = "./weir-data")]
    data_dir: PathBuf,
    /// End once the sources have nothing more and every sink committed it (files read to
    /// their end, a generator's count reached).
    #[arg(long)]
    until_caught_up: bool,
    /// Serve Prometheus metrics on this address (`/metrics`).
    #[arg(long)]
    metrics_listen: Option<std::net::SocketAddr>,
    /// Names this copy when several copies of the pipelines run at once (the pod's name on
    /// Kubernetes): they share sources, sinks and windowed jobs through consumer groups, and
    /// windowed jobs need a transactional id per copy.
    #[arg(long, env = "WEIR_INSTANCE")]
    instance: Option<String>,
}

#[derive(Args)]
struct ValidateArgs {
    path: PathBuf,
    /// Skip the checks that reach the cluster and databases.
    #[arg(long)]
    offline: bool,
}

pub(crate) async fn run(args: PipelineArgs) -> anyhow::Result<()> {
    match args.command {
        PipelineCommand::Run(run) => run_command(run).await,
        PipelineCommand::Validate(validate_args) => {
            let pipelines = checked(&validate_args.path, validate_args.offline).await?;
            for pipeline in &pipelines {
                println!(
                    "{}: pipeline {} is valid",
                    pipeline.file.display(),
                    pipeline.config.name
                );
            }
            Ok(())
        }
    }
}

/// Loaded and validated pipelines, or every problem found.
async fn checked(path: &std::path::Path, offline: bool) -> anyhow::Result<Vec<LoadedPipeline>> {
    match check(path, offline).await {
        Ok(pipelines) => Ok(pipelines),
        Err(diagnostics) => {
            let problems = format!("{} problem(s)", diagnostics.0.len());
            // Kept typed under its context: the exit status says it needs a change.
            Err(
                anyhow::Error::new(weir_pipelines::PipelineError::Invalid(diagnostics))
                    .context(problems),
            )
        }
    }
}

async fn run_command(args: RunArgs) -> anyhow::Result<()> {
    let pipelines = checked(&args.path, false).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let on_signal = Arc::clone(&stop);
    tokio::spawn(async move {
        if let Err(error) = crate::broker_command::wait_for_signal().await {
            tracing::warn!(%error, "no signal handling; stop the pipeline with kill -9");
            return;
        }
        tracing::info!("stopping: committing what was read");
        on_signal.store(true, Ordering::SeqCst);
    });
    let metrics = Arc::new(PipelineMetrics::default());
    if let Some(addr) = args.metrics_listen {
        let metrics = Arc::clone(&metrics);
        crate::job::serve_metrics(addr, "pipeline", move || metrics.render()).await?;
    }
    let options = RunOptions {
        data_dir: args.data_dir,
        until_caught_up: args.until_caught_up,
        instance: args.instance,
    };
    let summary = run_pipelines(pipelines, options, metrics, stop).await?;
    for sink in summary.sinks {
        eprintln!(
            "pipeline {} sink {}: {} rows committed in {} commits ({} files)",
            sink.pipeline,
            sink.sink,
            sink.stats.rows_committed,
            sink.stats.commits,
            sink.stats.files_published
        );
    }
    Ok(())
}
