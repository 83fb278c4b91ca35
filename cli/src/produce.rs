//! `weir produce TOPIC`: one record per line of standard input.

use std::io::BufRead;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use futures::stream::{FuturesUnordered, StreamExt};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::DeliveryFuture;

use crate::client::ConnectArgs;

/// 1 when a delivery failed, else 0.
fn settle(outcome: Option<<DeliveryFuture as std::future::Future>::Output>) -> u64 {
    match outcome {
        Some(Ok(Ok(_))) | None => 0,
        Some(Ok(Err((error, _)))) => {
            eprintln!("delivery failed: {error}");
            1
        }
        Some(Err(_canceled)) => {
            eprintln!("delivery failed: producer closed");
            1
        }
    }
}

/// Records in flight before reading more input.
const MAX_IN_FLIGHT: usize = 10_000;

#[derive(Args)]
pub(crate) struct ProduceArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    topic: String,
    /// Split each line at the first SEP into key and value.
    #[arg(short = 'K', long)]
    key_separator: Option<String>,
    /// Send every record to this partition (default: by key, or sticky when keyless).
    #[arg(short, long)]
    partition: Option<i32>,
    /// none, gzip, snappy, lz4 or zstd.
    #[arg(short = 'z', long, default_value = "none")]
    compression: String,
    /// 0, 1 or all (-1).
    #[arg(long, default_value = "all")]
    acks: String,
    /// Header added to every record, KEY=VALUE (repeatable).
    #[arg(short = 'H', long = "header", value_name = "KEY=VALUE")]
    headers: Vec<String>,
    /// linger.ms of the producer.
    #[arg(long, default_value_t = 5)]
    linger_ms: u64,
}

pub(crate) async fn run(args: ProduceArgs) -> anyhow::Result<()> {
    let mut config = args.connect.client_config()?;
    config
        .set("compression.type", &args.compression)
        .set("acks", &args.acks)
        .set("linger.ms", args.linger_ms.to_string());
    let producer: FutureProducer = config.create().context("cannot create producer")?;
    let mut headers = OwnedHeaders::new();
    for header in &args.headers {
        let (key, value) = header
            .split_once('=')
            .with_context(|| format!("header '{header}' must be KEY=VALUE"))?;
        headers = headers.insert(Header {
            key,
            value: Some(value),
        });
    }
    let stdin = std::io::stdin();
    let mut pending = FuturesUnordered::new();
    let mut sent = 0u64;
    let mut failed = 0u64;
    for line in stdin.lock().lines() {
        let line = line.context("cannot read standard input")?;
        let (key, value) = match &args.key_separator {
            Some(separator) => match line.split_once(separator.as_str()) {
                Some((key, value)) => (Some(key.to_string()), value.to_string()),
                None => (None, line),
            },
            None => (None, line),
        };
        let mut record = FutureRecord::<String, String>::to(&args.topic)
            .payload(&value)
            .headers(headers.clone());
        if let Some(key) = &key {
            record = record.key(key);
        }
        if let Some(partition) = args.partition {
            record = record.partition(partition);
        }
        loop {
            match producer.send_result(record) {
                Ok(delivery) => {
                    pending.push(delivery);
                    break;
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                    record = returned;
                    failed += settle(pending.next().await);
                    producer.poll(Duration::from_millis(10));
                }
                Err((error, _)) => bail!("cannot produce: {error}"),
            }
        }
        sent += 1;
        while pending.len() >= MAX_IN_FLIGHT {
            failed += settle(pending.next().await);
        }
    }
    while !pending.is_empty() {
        failed += settle(pending.next().await);
    }
    producer
        .flush(Duration::from_secs(30))
        .context("flush failed")?;
    eprintln!("produced {} records to {}", sent - failed, args.topic);
    if failed > 0 {
        bail!("{failed} of {sent} records were not delivered");
    }
    Ok(())
}
