//! `weir`: the Weir binary. Thin: parses arguments and calls into the libraries.
//!
//! - `weir broker`: run a broker (see `broker_command`).
//! - `weir topic …`, `weir produce`, `weir consume`, `weir cluster info`: a Kafka client
//!   (rdkafka), so they work against Weir or any Kafka cluster (`-b host:port`).
//! - `weir job run`: a SQL stream job (the streams crate), also against any Kafka cluster.
//! - `weir sql`: ad-hoc SQL over topics.
//! - `weir pipeline run|validate`: YAML pipelines (the pipelines crate).

mod acl;
mod broker_command;
mod client;
mod consume;
mod group;
mod group_seek;
mod job;
mod nexmark;
mod pipeline;
mod produce;
mod protocol_client;
mod sql;
mod topic;
mod topic_reassign;
mod txn;
mod user;
mod weblog;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "weir",
    version,
    about = "Weir: a Kafka-compatible broker and stream processor"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a broker.
    Broker(broker_command::BrokerArgs),
    /// Create, list, describe, delete and configure topics.
    Topic(topic::TopicArgs),
    /// Produce lines from standard input, one record per line.
    Produce(produce::ProduceArgs),
    /// Consume records and print them.
    Consume(consume::ConsumeArgs),
    /// Cluster information.
    Cluster(topic::ClusterArgs),
    /// List, describe (members, offsets, lag) and delete consumer groups.
    Group(group::GroupArgs),
    /// List and describe transactions; find and abort hanging ones.
    Txn(txn::TxnArgs),
    /// Run stream jobs: SQL over a topic into another, exactly once.
    Job(job::JobArgs),
    /// Run and validate YAML pipelines: sources → topic → SQL → sinks, exactly once.
    Pipeline(pipeline::PipelineArgs),
    /// Web-server logs: generate realistic access-log lines.
    Weblog(weblog::WeblogArgs),
    /// The Nexmark benchmark: generate its persons, auctions and bids into topics.
    Nexmark(nexmark::NexmarkArgs),
    /// Ad-hoc SQL over topics (each topic a table); a prompt when no query is given.
    Sql(sql::SqlArgs),
    /// Create, list and delete SCRAM users (KIP-554's APIs: Weir or any Kafka cluster).
    User(user::UserArgs),
    /// Create, list and delete ACLs (Kafka's ACL APIs: Weir or any Kafka cluster).
    Acl(acl::AclArgs),
}

/// mimalloc rather than glibc's malloc: a job's per-record allocations (records, JSON tapes,
/// Arrow arrays, repartition rows) and frees are a large part of its time (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // Servers keep SIGPIPE ignored: a client that closes its connection while a response is
    // written (over TLS the write is a writev, which cannot suppress the signal) must not kill
    // the broker or a pipeline.
    let serves = matches!(
        cli.command,
        Command::Broker(_) | Command::Pipeline(_) | Command::Job(_)
    );
    if !serves {
        restore_default_sigpipe();
    }
    // What serves logs at info (a job: what it reads, its first checkpoint, then its progress
    // every 10 s, as a pipeline does); commands that print log only warnings.
    init_tracing(serves);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Broker(args) => broker_command::run(args).await,
            Command::Topic(args) => topic::run(args).await,
            Command::Produce(args) => produce::run(args).await,
            Command::Consume(args) => consume::run(args).await,
            Command::Cluster(args) => topic::run_cluster(args).await,
            Command::Group(args) => group::run(args).await,
            Command::User(args) => user::run(args).await,
            Command::Acl(args) => acl::run(args).await,
            Command::Txn(args) => txn::run(args).await,
            Command::Job(args) => job::run(args).await,
            Command::Pipeline(args) => pipeline::run(args).await,
            Command::Weblog(args) => weblog::run(args),
            Command::Nexmark(args) => nexmark::run(args).await,
            Command::Sql(args) => sql::run(args).await,
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", one_line(&error));
            match remedy(&error) {
                // A job's or a pipeline's error says what can be done, and its exit status
                // tells a supervisor whether restarting can help (README: "Exit status").
                Some(remedy) => {
                    eprintln!("hint: {}", remedy.advice());
                    std::process::ExitCode::from(remedy.exit_code())
                }
                None => std::process::ExitCode::FAILURE,
            }
        }
    }
}

/// What can be done about an error of a job, a pipeline, a connector or a cluster client.
fn remedy(error: &anyhow::Error) -> Option<weir_client::Remedy> {
    error.chain().find_map(|cause| {
        if let Some(error) = cause.downcast_ref::<weir_pipelines::PipelineError>() {
            return Some(error.remedy());
        }
        if let Some(error) = cause.downcast_ref::<weir_streams::StreamsError>() {
            return Some(error.remedy());
        }
        if let Some(error) = cause.downcast_ref::<weir_connectors::ConnectorError>() {
            return Some(error.remedy());
        }
        cause
            .downcast_ref::<weir_client::ClientError>()
            .map(weir_client::ClientError::remedy)
    })
}

/// The error and its causes on one line, leaving out a cause its wrapper already quotes.
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

fn init_tracing(is_server: bool) {
    let default = if is_server { "info" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// Rust ignores SIGPIPE, so printing into a closed pipe (`weir consume … | head`) would panic.
/// Like other command-line tools, end quietly instead (commands that print, not servers).
#[allow(unsafe_code)] // system calls; each block says why it is sound
fn restore_default_sigpipe() {
    // SAFETY: resetting a signal disposition to its default at start-up, before any threads
    // (argument parsing starts none).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
