//! `weir nexmark generate`: the Nexmark benchmark's events (persons, auctions, bids) into three
//! topics, each record stamped with its event time and keyed by its id (bids by their auction),
//! for benchmarks and their oracles (`weir_connectors::generator::nexmark`).

use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use rdkafka::admin::{AdminClient, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use weir_connectors::generator::nexmark::{Event, NexmarkGenerator};

use crate::client::ConnectArgs;

#[derive(Args)]
pub(crate) struct NexmarkArgs {
    #[command(subcommand)]
    command: NexmarkCommand,
}

#[derive(Subcommand)]
enum NexmarkCommand {
    /// Produce events to <prefix>person, <prefix>auction and <prefix>bid (created if missing,
    /// without time-based retention: the events' times are in November 2023).
    Generate(GenerateArgs),
}

#[derive(Args)]
struct GenerateArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    /// How many events (1 in 50 a person, 3 auctions, 46 bids).
    #[arg(long, default_value_t = 1_000_000)]
    events: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Event time between two events, in microseconds.
    #[arg(long, default_value_t = 100)]
    event_interval_us: i64,
    /// The topics' names start with this.
    #[arg(long, default_value = "nexmark-")]
    prefix: String,
    /// Partitions of each topic created.
    #[arg(long, default_value_t = 3)]
    partitions: i32,
}

pub(crate) async fn run(args: NexmarkArgs) -> anyhow::Result<()> {
    let NexmarkCommand::Generate(args) = args.command;
    let kinds = ["person", "auction", "bid"].map(|kind| format!("{}{kind}", args.prefix));
    create_topics(&args, &kinds).await?;
    let mut config = args.connect.client_config()?;
    config
        .set("compression.type", "lz4")
        .set("linger.ms", "20")
        .set("enable.idempotence", "true");
    let producer: BaseProducer = config.create().context("cannot create producer")?;
    let generator = NexmarkGenerator {
        event_interval_us: args.event_interval_us,
        ..NexmarkGenerator::new(args.seed)
    };
    for n in 0..args.events {
        let event = generator.event(n);
        let (topic, key) = match &event {
            Event::Person(p) => (&kinds[0], p.id),
            Event::Auction(a) => (&kinds[1], a.id),
            Event::Bid(b) => (&kinds[2], b.auction),
        };
        let (key, value) = (key.to_string(), event.json());
        let mut record = BaseRecord::to(topic)
            .key(&key)
            .payload(&value)
            .timestamp(event.date_time());
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                    record = returned;
                    producer.poll(Duration::from_millis(10));
                }
                Err((error, _)) => bail!("cannot produce event {n}: {error}"),
            }
        }
    }
    producer
        .flush(Duration::from_secs(120))
        .context("not every event was delivered")?;
    eprintln!("{} events produced to {}", args.events, kinds.join(", "));
    Ok(())
}

async fn create_topics(args: &GenerateArgs, kinds: &[String]) -> anyhow::Result<()> {
    let admin: AdminClient<DefaultClientContext> = args
        .connect
        .client_config()?
        .create()
        .context("cannot create an admin client")?;
    // The events' times are fixed (from November 2023, so runs compare): time-based retention
    // would delete them at the broker's next retention pass.
    let topics: Vec<NewTopic> = kinds
        .iter()
        .map(|name| {
            NewTopic::new(name, args.partitions, TopicReplication::Fixed(-1))
                .set("retention.ms", "-1")
        })
        .collect();
    weir_client::create_topics(&admin, &topics, Duration::from_secs(30)).await?;
    Ok(())
}
