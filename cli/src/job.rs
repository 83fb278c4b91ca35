//! `weir job run`: run one SQL stream job (exactly once) until Ctrl-C / SIGTERM. Copies started
//! with the same `--name` and different `--instance` share the input's partitions.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use weir_streams::io::decode::parse_schema;
use weir_streams::job::{self, JobConfig, JobMetrics};
use weir_streams::record::ValueFormat;

use crate::client::ConnectArgs;

#[derive(Args)]
pub(crate) struct JobArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: JobCommand,
}

#[derive(Subcommand)]
enum JobCommand {
    /// Run a SQL job: input topic → query → output topic, one transaction per checkpoint.
    Run(RunArgs),
}

#[derive(Args)]
struct RunArgs {
    /// The job's name: its consumer group and transactional id prefix.
    #[arg(long)]
    name: String,
    /// This copy of the job (stable across restarts, unique among copies).
    #[arg(long, default_value = "0")]
    instance: String,
    /// An input topic (repeat for several: each is a table of the query).
    #[arg(long, required_unless_present = "table")]
    input: Vec<String>,
    /// A table the query joins its input with, NAME=TOPIC (repeat for several): the latest
    /// value per record key as of each input record's timestamp (tombstones delete), e.g.
    /// --table customers=customers and "… FROM orders o JOIN customers c ON o.customer = c._key".
    /// One table and no --input: the query aggregates the table's changes, e.g. "SELECT
    /// category, avg(price) FROM auctions GROUP BY category" (each update retracts the key's
    /// previous row; a tombstone deletes it).
    #[arg(long, value_parser = parse_table)]
    table: Vec<(String, String)>,
    /// Tables: how far back (ms) from the newest update of a table versions are kept, so input
    /// records that far behind still find the value of their time.
    #[arg(long, default_value_t = 3_600_000)]
    table_history_ms: i64,
    #[arg(long)]
    output: String,
    /// The transform, e.g. "SELECT path, status FROM weblogs WHERE status >= 500"; the input
    /// topic is the table. A WITH whose CTEs group or join runs each such CTE as a stage (a job
    /// named NAME-CTE, its results in topic weir-NAME-CTE-results) read by the ones naming it.
    #[arg(long)]
    query: String,
    #[arg(long, value_enum, default_value = "json")]
    input_format: Format,
    /// The JSON values' columns, e.g. "path:string,status:int,bytes:float" (types string, int,
    /// float, bool, timestamp); inferred from the input's first records when not given.
    #[arg(long)]
    schema: Option<String>,
    #[arg(long, value_enum, default_value = "json")]
    output_format: Format,
    #[arg(long, default_value_t = 1000)]
    checkpoint_interval_ms: u64,
    #[arg(long, default_value_t = 10_000)]
    checkpoint_max_records: usize,
    /// A checkpoint holding records also ends once no record came for this long (ms), so a
    /// burst's results are committed without waiting out the interval; 0: never early.
    #[arg(long, default_value_t = 100)]
    checkpoint_quiet_ms: u64,
    /// Where undecodable input records go (they are logged and counted either way).
    #[arg(long)]
    dead_letter_topic: Option<String>,
    /// Windowed queries: how far (ms) a record may be behind the largest event time of its
    /// partition and still count; the watermark is that time minus this.
    #[arg(long, default_value_t = 0)]
    allowed_lateness_ms: i64,
    /// Windowed queries and interval joins: an input partition without records for this long
    /// (ms) is idle and stops holding the watermark back until it has records again (like
    /// Flink's table.exec.source.idle-timeout); records it brings later may be too late. Off
    /// by default: a quiet partition holds windows and join rows back
    #[arg(long)]
    idle_timeout_ms: Option<u64>,
    /// Windowed queries: where records too late for every window go (they are logged and
    /// counted either way).
    #[arg(long)]
    late_topic: Option<String>,
    /// Windowed queries: the most groups (and distinct values) open windows may hold.
    #[arg(long, default_value_t = 1_000_000)]
    max_state_entries: usize,
    /// How often (ms, at the least) records of the job's internal topics (repartition, and
    /// stages' results) that every reader has committed past are deleted (Kafka Streams'
    /// repartition.purge.interval.ms). Those topics keep records without time limit until then.
    #[arg(long, default_value_t = job::purge::DEFAULT_PURGE_INTERVAL_MS)]
    purge_interval_ms: u64,
    /// Serve the job's Prometheus metrics on http://HOST:PORT/metrics (off by default).
    #[arg(long)]
    metrics_listen: Option<std::net::SocketAddr>,
}

fn parse_table(declared: &str) -> Result<(String, String), String> {
    match declared.split_once('=') {
        Some((name, topic)) if !name.is_empty() && !topic.is_empty() => {
            Ok((name.to_string(), topic.to_string()))
        }
        _ => Err(format!("expected NAME=TOPIC, got {declared:?}")),
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Json,
    Raw,
}

impl From<Format> for ValueFormat {
    fn from(format: Format) -> Self {
        match format {
            Format::Json => ValueFormat::Json,
            Format::Raw => ValueFormat::Raw,
        }
    }
}

pub(crate) async fn run(args: JobArgs) -> anyhow::Result<()> {
    let JobCommand::Run(run) = args.command;
    let mut config = JobConfig::new(
        &run.name,
        &args.connect.bootstrap,
        run.input.first().map_or("", String::as_str),
        &run.output,
        &run.query,
    );
    config.inputs = run.input;
    config.tables = run.table;
    config.table_history_ms = run.table_history_ms;
    config.instance_id = run.instance;
    config.input_format = run.input_format.into();
    config.schema = run.schema.as_deref().map(parse_schema).transpose()?;
    config.output_format = run.output_format.into();
    config.checkpoint_interval_ms = run.checkpoint_interval_ms;
    config.checkpoint_max_records = run.checkpoint_max_records;
    config.checkpoint_quiet_ms = run.checkpoint_quiet_ms;
    config.dead_letter_topic = run.dead_letter_topic;
    config.allowed_lateness_ms = run.allowed_lateness_ms;
    config.idle_timeout_ms = run.idle_timeout_ms;
    config.late_topic = run.late_topic;
    config.max_state_entries = run.max_state_entries;
    config.purge_interval_ms = run.purge_interval_ms;
    config.client = args.connect.settings()?;
    let stop = Arc::new(AtomicBool::new(false));
    let on_signal = Arc::clone(&stop);
    tokio::spawn(async move {
        if let Err(error) = crate::broker_command::wait_for_signal().await {
            tracing::warn!(%error, "no signal handling; stop the job with kill -9");
            return;
        }
        on_signal.store(true, Ordering::SeqCst);
    });
    // A WITH of grouping or joining CTEs runs as stages, each a job of its own.
    let mut stages = job::stages::plan(&config)?.unwrap_or_else(|| vec![config.clone()]);
    let metrics: Arc<Vec<JobMetrics>> = Arc::new(
        stages
            .iter()
            .map(|stage| JobMetrics::new(&stage.name, &stage.instance_id))
            .collect(),
    );
    if let Some(addr) = run.metrics_listen {
        let metrics = Arc::clone(&metrics);
        serve_metrics(addr, "job", move || JobMetrics::render_all(&metrics)).await?;
    }
    let stats = tokio::task::spawn_blocking(move || match stages.len() {
        1 => job::run_with_metrics(&config, &stop, None, &metrics[0]),
        _ => {
            for (at, stage) in stages.iter().enumerate() {
                tracing::info!(stage = %stage.name, inputs = ?stage.inputs, output = %stage.output, query = %stage.query, "stage {} of {}", at + 1, stages.len());
            }
            job::stages::ensure_results_topics(&config, &mut stages)?;
            job::stages::run(&stages, &stop, &metrics)
        }
    })
    .await
    .context("the job thread failed")??;
    eprintln!(
        "job stopped: {} checkpoints, {} records in, {} out, {} rejected, {} late, {} windows \
         emitted, {} checkpoints aborted",
        stats.checkpoints,
        stats.records_in,
        stats.records_out,
        stats.records_rejected,
        stats.records_late,
        stats.windows_emitted,
        stats.checkpoints_aborted
    );
    Ok(())
}

/// `/metrics` (Prometheus text) of `render`, and `/health` (liveness: the process answers),
/// until the process ends.
pub(crate) async fn serve_metrics(
    addr: std::net::SocketAddr,
    what: &'static str,
    render: impl Fn() -> String + Clone + Send + Sync + 'static,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen for metrics on {addr}"))?;
    tracing::info!(addr = %listener.local_addr()?, "{what} metrics on /metrics");
    let app = axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(move || {
                let render = render.clone();
                async move {
                    (
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "text/plain; version=0.0.4",
                        )],
                        render(),
                    )
                }
            }),
        )
        .route("/health", axum::routing::get(|| async { "ok\n" }));
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "metrics endpoint failed");
        }
    });
    Ok(())
}
