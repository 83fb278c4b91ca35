//! `weir consume TOPIC`: read records from chosen partitions and offsets, without a group.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};

use crate::client::{ConnectArgs, REQUEST_TIMEOUT};

#[derive(Args)]
pub(crate) struct ConsumeArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    topic: String,
    /// Where to start: beginning, end, an offset, or @TIMESTAMP_MS.
    #[arg(short = 'o', long, default_value = "beginning")]
    offset: String,
    /// Only this partition (default: all).
    #[arg(short, long)]
    partition: Option<i32>,
    /// Stop after this many records.
    #[arg(short = 'c', long)]
    count: Option<u64>,
    /// Keep waiting for new records instead of stopping at the end.
    #[arg(short, long)]
    follow: bool,
    /// Print the key before the value (KEY<TAB>VALUE).
    #[arg(long)]
    print_key: bool,
    /// Print headers.
    #[arg(long)]
    print_headers: bool,
    /// Print the timestamp (ms).
    #[arg(long)]
    print_timestamp: bool,
    /// One JSON object per record with topic, partition, offset, timestamp, key, headers, value.
    #[arg(long)]
    json: bool,
    /// isolation.level: read_uncommitted or read_committed.
    #[arg(long, default_value = "read_uncommitted")]
    isolation: String,
    /// Consume as a member of this consumer group: partitions are shared with the other members
    /// and progress is committed. Starts from the committed offsets (else per --offset
    /// beginning/end); without --follow, stops after --idle-ms without records.
    #[arg(short, long)]
    group: Option<String>,
    /// With --group and without --follow: stop after this long without a record (counted from
    /// when the group assigns partitions).
    #[arg(long, default_value_t = 5000)]
    idle_ms: u64,
}

fn start_offset(spec: &str) -> anyhow::Result<Offset> {
    Ok(match spec {
        "beginning" | "earliest" => Offset::Beginning,
        "end" | "latest" => Offset::End,
        s if s.starts_with('@') => Offset::Offset(-1), // resolved by timestamp below
        s => Offset::Offset(s.parse().with_context(|| format!("bad --offset '{s}'"))?),
    })
}

pub(crate) async fn run(args: ConsumeArgs) -> anyhow::Result<()> {
    if let Some(group) = &args.group {
        return run_in_group(&args, group);
    }
    let mut config = args.connect.client_config()?;
    config
        .set("group.id", "weir-cli-unused")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("isolation.level", &args.isolation);
    let consumer: BaseConsumer = config.create().context("cannot create consumer")?;
    let metadata = consumer
        .fetch_metadata(Some(&args.topic), REQUEST_TIMEOUT)
        .context("metadata request failed")?;
    let topic = metadata
        .topics()
        .first()
        .context("topic missing from metadata")?;
    if let Some(error) = topic.error() {
        bail!("topic {}: {:?}", args.topic, error);
    }
    let partitions: Vec<i32> = match args.partition {
        Some(p) => vec![p],
        None => topic.partitions().iter().map(|p| p.id()).collect(),
    };
    let mut assignment = TopicPartitionList::new();
    let offset = start_offset(&args.offset)?;
    for &partition in &partitions {
        assignment.add_partition_offset(&args.topic, partition, offset)?;
    }
    if let Some(timestamp) = args.offset.strip_prefix('@') {
        let timestamp: i64 = timestamp
            .parse()
            .with_context(|| format!("bad timestamp in --offset '{}'", args.offset))?;
        let mut query = TopicPartitionList::new();
        for &partition in &partitions {
            query.add_partition_offset(&args.topic, partition, Offset::Offset(timestamp))?;
        }
        assignment = consumer.offsets_for_times(query, REQUEST_TIMEOUT)?;
    }
    // Where each partition ends now; without --follow we stop there.
    let mut remaining: HashMap<i32, i64> = HashMap::new();
    for &partition in &partitions {
        let (_, high) = consumer.fetch_watermarks(&args.topic, partition, REQUEST_TIMEOUT)?;
        let start = match assignment
            .find_partition(&args.topic, partition)
            .map(|e| e.offset())
        {
            Some(Offset::Offset(o)) => o,
            Some(Offset::End) => high,
            _ => 0,
        };
        if start < high {
            remaining.insert(partition, high);
        }
    }
    consumer.assign(&assignment)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut printed = 0u64;
    loop {
        if args.count.is_some_and(|c| printed >= c) || (!args.follow && remaining.is_empty()) {
            break;
        }
        let Some(message) = consumer.poll(Duration::from_millis(200)) else {
            // A transactional partition ends with a marker, never handed out as a record: the
            // consumer's position tells when it was read past.
            passed_ends(&consumer, &args.topic, &mut remaining)?;
            continue;
        };
        let message = message.context("consume failed")?;
        print_message(&mut out, &message, &args)?;
        printed += 1;
        if let Some(&end) = remaining.get(&message.partition()) {
            if message.offset() + 1 >= end {
                remaining.remove(&message.partition());
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// Drops from `remaining` the partitions whose position reached their end.
fn passed_ends(
    consumer: &BaseConsumer,
    topic: &str,
    remaining: &mut HashMap<i32, i64>,
) -> anyhow::Result<()> {
    let positions = consumer.position()?;
    remaining.retain(|partition, end| {
        !matches!(
            positions.find_partition(topic, *partition).map(|e| e.offset()),
            Some(Offset::Offset(position)) if position >= *end
        )
    });
    Ok(())
}

/// How often a group consumer commits what it has printed.
const GROUP_COMMIT_INTERVAL: Duration = Duration::from_secs(1);

fn run_in_group(args: &ConsumeArgs, group: &str) -> anyhow::Result<()> {
    let reset = match args.offset.as_str() {
        "beginning" | "earliest" => "earliest",
        "end" | "latest" => "latest",
        other => bail!("with --group, --offset must be beginning or end (got '{other}'); committed offsets decide otherwise"),
    };
    let mut config = args.connect.client_config()?;
    // Commits are explicit: exactly the records printed, every second and at the end.
    config
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", reset)
        .set("isolation.level", &args.isolation);
    let consumer: BaseConsumer = config.create().context("cannot create consumer")?;
    consumer.subscribe(&[&args.topic])?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut printed = 0u64;
    let mut last_record = std::time::Instant::now();
    let mut last_commit = std::time::Instant::now();
    let mut next_offsets: HashMap<i32, i64> = HashMap::new();
    loop {
        if args.count.is_some_and(|c| printed >= c) {
            break;
        }
        if !args.follow && last_record.elapsed() >= Duration::from_millis(args.idle_ms) {
            break;
        }
        if last_commit.elapsed() >= GROUP_COMMIT_INTERVAL {
            commit_printed(&consumer, &args.topic, &next_offsets)?;
            last_commit = std::time::Instant::now();
        }
        let Some(message) = consumer.poll(Duration::from_millis(200)) else {
            // The idle clock starts once the group has given us partitions.
            if consumer
                .assignment()
                .map(|a| a.count() == 0)
                .unwrap_or(true)
            {
                last_record = std::time::Instant::now();
            }
            continue;
        };
        let message = message.context("consume failed")?;
        print_message(&mut out, &message, args)?;
        next_offsets.insert(message.partition(), message.offset() + 1);
        printed += 1;
        last_record = std::time::Instant::now();
    }
    out.flush()?;
    commit_printed(&consumer, &args.topic, &next_offsets)
}

fn commit_printed(
    consumer: &BaseConsumer,
    topic: &str,
    next_offsets: &HashMap<i32, i64>,
) -> anyhow::Result<()> {
    if next_offsets.is_empty() {
        return Ok(());
    }
    let mut offsets = TopicPartitionList::new();
    for (partition, offset) in next_offsets {
        offsets.add_partition_offset(topic, *partition, Offset::Offset(*offset))?;
    }
    consumer
        .commit(&offsets, rdkafka::consumer::CommitMode::Sync)
        .context("offset commit failed")
}

fn print_message(
    out: &mut impl Write,
    message: &rdkafka::message::BorrowedMessage<'_>,
    args: &ConsumeArgs,
) -> anyhow::Result<()> {
    let value = message
        .payload()
        .map(|v| String::from_utf8_lossy(v).into_owned());
    let key = message
        .key()
        .map(|k| String::from_utf8_lossy(k).into_owned());
    let headers: Vec<(String, Option<String>)> = message
        .headers()
        .map(|hs| {
            hs.iter()
                .map(|h| {
                    (
                        h.key.to_string(),
                        h.value.map(|v| String::from_utf8_lossy(v).into_owned()),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let timestamp = message.timestamp().to_millis();
    if args.json {
        let object = serde_json::json!({
            "topic": message.topic(),
            "partition": message.partition(),
            "offset": message.offset(),
            "timestamp": timestamp,
            "key": key,
            "headers": headers.iter().map(|(k, v)| serde_json::json!({"key": k, "value": v})).collect::<Vec<_>>(),
            "value": value,
        });
        writeln!(out, "{object}")?;
        return Ok(());
    }
    let mut line = String::new();
    if args.print_timestamp {
        line.push_str(&timestamp.map_or("-".to_string(), |t| t.to_string()));
        line.push('\t');
    }
    if args.print_headers {
        let rendered: Vec<String> = headers
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("")))
            .collect();
        line.push_str(&rendered.join(","));
        line.push('\t');
    }
    if args.print_key {
        line.push_str(key.as_deref().unwrap_or(""));
        line.push('\t');
    }
    line.push_str(value.as_deref().unwrap_or(""));
    writeln!(out, "{line}")?;
    Ok(())
}
