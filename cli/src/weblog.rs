//! `weir weblog generate`: made-up, realistic access-log lines (the generator source's lines)
//! for demos, tests and benchmarks.

use std::io::{BufWriter, Write};

use clap::{Args, Subcommand, ValueEnum};
use weir_connectors::generator::AccessLogGenerator;
use weir_connectors::weblog::LogFormat;

#[derive(Args)]
pub(crate) struct WeblogArgs {
    #[command(subcommand)]
    command: WeblogCommand,
}

#[derive(Subcommand)]
enum WeblogCommand {
    /// Print access-log lines to standard output.
    Generate(GenerateArgs),
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    NginxCombined,
    ApacheCombined,
    ApacheCommon,
}

#[derive(Args)]
struct GenerateArgs {
    /// How many lines.
    #[arg(long, default_value_t = 1000)]
    lines: u64,
    /// The first line's number (lines are a function of seed and number).
    #[arg(long, default_value_t = 0)]
    first: u64,
    #[arg(long, value_enum, default_value = "nginx-combined")]
    format: Format,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The first line's time, epoch milliseconds.
    #[arg(long, default_value_t = 1_767_225_600_000)]
    start_time_ms: i64,
    /// Event time between two lines.
    #[arg(long, default_value_t = 10)]
    line_interval_ms: i64,
    /// Every n-th line is garbage (to exercise dead letters).
    #[arg(long)]
    bad_line_every: Option<u64>,
}

pub(crate) fn run(args: WeblogArgs) -> anyhow::Result<()> {
    let WeblogCommand::Generate(generate) = args.command;
    let generator = AccessLogGenerator {
        format: match generate.format {
            Format::NginxCombined => LogFormat::NginxCombined,
            Format::ApacheCombined => LogFormat::ApacheCombined,
            Format::ApacheCommon => LogFormat::ApacheCommon,
        },
        seed: generate.seed,
        start_time_ms: generate.start_time_ms,
        line_interval_ms: generate.line_interval_ms,
        bad_line_every: generate.bad_line_every.filter(|every| *every > 0),
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for n in generate.first..generate.first + generate.lines {
        writeln!(out, "{}", generator.line(n))?;
    }
    out.flush()?;
    Ok(())
}
