//! `weir sql`: ad-hoc SQL over topics (every topic a table, read_committed, up to its current
//! end). With no query, an interactive prompt: statements end with `;`, `exit` or end of input
//! quits; the prompt is one session (`SET`, views and tables made with SQL last to the end), and
//! statements that would write (`COPY … TO`, `INSERT`) are refused with the reason.

use std::io::{BufRead, IsTerminal, Write};

use clap::{Args, ValueEnum};
use datafusion::arrow::record_batch::RecordBatch;
use weir_streams::adhoc::{AdhocOptions, AdhocSession};
use weir_streams::record::ValueFormat;

use weir_connectors::parquet::read_published_at;

use crate::client::ConnectArgs;

#[derive(Args)]
pub(crate) struct SqlArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// e.g. "SELECT status, count(*) FROM weblogs GROUP BY status"; none: a prompt.
    query: Option<String>,
    #[arg(long, value_enum, default_value = "table")]
    format: Output,
    /// How topic values are read: JSON objects (schema inferred) or raw strings (`value`).
    #[arg(long, value_enum, default_value = "json")]
    values: Values,
    /// The most records read from one topic; a larger topic fails the query.
    #[arg(long, default_value_t = 1_000_000)]
    max_records: usize,
    /// A table read from Parquet files a pipeline published: NAME=DIRECTORY or
    /// NAME=s3://BUCKET/PREFIX (endpoint and credentials from the AWS_* environment;
    /// repeatable; at most --max-records rows each).
    #[arg(long, value_name = "NAME=LOCATION")]
    parquet: Vec<String>,
    /// A topic read as a table: the latest value of each key, a tombstone deleting it (e.g. a
    /// job's updating aggregate); NAME=TOPIC, or TOPIC to keep its name (repeatable).
    #[arg(long, value_name = "NAME=TOPIC")]
    table: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    Table,
    /// One JSON object per row per line.
    Json,
    Csv,
}

#[derive(Clone, Copy, ValueEnum)]
enum Values {
    Json,
    Raw,
}

pub(crate) async fn run(args: SqlArgs) -> anyhow::Result<()> {
    let mut options = AdhocOptions::new(&args.connect.bootstrap);
    options.format = match args.values {
        Values::Json => ValueFormat::Json,
        Values::Raw => ValueFormat::Raw,
    };
    options.max_records = args.max_records;
    options.client = args.connect.settings()?;
    for table in &args.table {
        let (name, topic) = table.split_once('=').unwrap_or((table, table));
        if name.is_empty() || topic.is_empty() {
            anyhow::bail!("--table {table}: expected NAME=TOPIC or TOPIC");
        }
        options.latest.push((name.to_string(), topic.to_string()));
    }
    for table in &args.parquet {
        let Some((name, location)) = table.split_once('=') else {
            anyhow::bail!("--parquet {table}: expected NAME=DIRECTORY or NAME=s3://BUCKET/PREFIX");
        };
        // An object store's endpoint, region and credentials come from the AWS_* environment.
        let (schema, batches) =
            read_published_at(location, &Default::default(), args.max_records).await?;
        options.tables.push((name.to_string(), schema, batches));
    }
    let mut session = AdhocSession::new(options)?;
    if let Some(query) = &args.query {
        return run_one(&mut session, query, args.format).await;
    }
    let interactive = std::io::stdin().is_terminal();
    let mut statement = String::new();
    let mut lines = std::io::stdin().lock().lines();
    loop {
        if interactive {
            eprint!(
                "{}",
                if statement.is_empty() {
                    "weir> "
                } else {
                    "  ... "
                }
            );
        }
        let Some(line) = lines.next().transpose()? else {
            break;
        };
        let trimmed = line.trim();
        if statement.is_empty() && matches!(trimmed, "exit" | "quit" | "\\q") {
            break;
        }
        statement.push_str(&line);
        statement.push('\n');
        if let Some(query) = statement.trim().strip_suffix(';') {
            if let Err(error) = run_one(&mut session, query, args.format).await {
                eprintln!("error: {error:#}");
            }
            statement.clear();
        }
    }
    Ok(())
}

async fn run_one(session: &mut AdhocSession, query: &str, format: Output) -> anyhow::Result<()> {
    let batches = session.run(query).await?;
    print(&batches, format)
}

fn print(batches: &[RecordBatch], format: Output) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match format {
        Output::Table => {
            let table = datafusion::arrow::util::pretty::pretty_format_batches(batches)?;
            writeln!(out, "{table}")?;
        }
        Output::Json => {
            let mut writer = arrow_json::LineDelimitedWriter::new(&mut out);
            for batch in batches {
                writer.write(batch)?;
            }
            writer.finish()?;
        }
        Output::Csv => {
            let mut writer = datafusion::arrow::csv::Writer::new(&mut out);
            for batch in batches {
                writer.write(batch)?;
            }
        }
    }
    Ok(())
}
