//! `weir topic create|list|describe|delete|alter-config` and `weir cluster info`.

use std::collections::BTreeMap;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};

use crate::client::{ConnectArgs, REQUEST_TIMEOUT};

#[derive(Args)]
pub(crate) struct TopicArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: TopicCommand,
}

#[derive(Subcommand)]
enum TopicCommand {
    /// Create a topic.
    Create {
        name: String,
        /// Number of partitions (default: the broker's num.partitions).
        #[arg(short, long)]
        partitions: Option<i32>,
        /// Replication factor (default: the broker's default).
        #[arg(short, long)]
        replicas: Option<i32>,
        /// Topic config, e.g. -c retention.ms=60000 (repeatable).
        #[arg(short = 'c', long = "config", value_name = "NAME=VALUE")]
        configs: Vec<String>,
    },
    /// List topics.
    List,
    /// Show partitions, leaders and configs of a topic.
    Describe { name: String },
    /// Delete topics.
    Delete { names: Vec<String> },
    /// Grow a topic to this many partitions.
    AddPartitions {
        name: String,
        /// The new partition count.
        #[arg(long)]
        count: i32,
    },
    /// Move a partition's replicas to other brokers, or cancel a move in progress.
    Reassign {
        name: String,
        #[arg(short, long)]
        partition: i32,
        /// The new replicas, the preferred leader first, e.g. --replicas 2,3,4.
        #[arg(long, value_delimiter = ',', required_unless_present = "cancel")]
        replicas: Vec<i32>,
        /// Cancel the move in progress (back to the replicas before it).
        #[arg(long, conflicts_with = "replicas")]
        cancel: bool,
        /// Return once the move is complete.
        #[arg(long)]
        wait: bool,
    },
    /// Partition moves in progress.
    Reassignments,
    /// Set topic configs (only the ones named change).
    AlterConfig {
        name: String,
        #[arg(
            short = 'c',
            long = "config",
            value_name = "NAME=VALUE",
            required = true
        )]
        configs: Vec<String>,
    },
}

#[derive(Args)]
pub(crate) struct ClusterArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: ClusterCommand,
}

#[derive(Subcommand)]
enum ClusterCommand {
    /// Brokers, the active controller, under-replicated and offline partitions.
    Info,
    /// The Kafka APIs and versions the bootstrap broker supports (like kafka-broker-api-versions).
    ApiVersions,
}

fn parse_configs(configs: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    configs
        .iter()
        .map(|c| {
            c.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .with_context(|| format!("config '{c}' must be NAME=VALUE"))
        })
        .collect()
}

fn admin(connect: &ConnectArgs) -> anyhow::Result<AdminClient<DefaultClientContext>> {
    connect
        .client_config()?
        .create()
        .context("cannot create admin client")
}

#[allow(clippy::too_many_lines)] // one arm per subcommand
pub(crate) async fn run(args: TopicArgs) -> anyhow::Result<()> {
    let options = AdminOptions::new().request_timeout(Some(REQUEST_TIMEOUT));
    match args.command {
        TopicCommand::Create {
            name,
            partitions,
            replicas,
            configs,
        } => {
            let configs = parse_configs(&configs)?;
            let mut topic = NewTopic::new(
                &name,
                partitions.unwrap_or(-1),
                TopicReplication::Fixed(replicas.unwrap_or(-1)),
            );
            for (key, value) in &configs {
                topic = topic.set(key, value);
            }
            let results = admin(&args.connect)?
                .create_topics([&topic], &options)
                .await?;
            for result in results {
                match result {
                    Ok(name) => println!("created topic {name}"),
                    Err((name, code)) => bail!("cannot create topic {name}: {code}"),
                }
            }
        }
        TopicCommand::AddPartitions { name, count } => {
            let grow = rdkafka::admin::NewPartitions::new(&name, count as usize);
            let results = admin(&args.connect)?
                .create_partitions([&grow], &options)
                .await?;
            for result in results {
                match result {
                    Ok(name) => println!("topic {name} has {count} partitions"),
                    Err((name, code)) => bail!("cannot add partitions to {name}: {code}"),
                }
            }
        }
        TopicCommand::Reassign {
            name,
            partition,
            replicas,
            cancel,
            wait,
        } => {
            let target = (!cancel).then_some(replicas);
            crate::topic_reassign::reassign(&args.connect, &name, partition, target, wait).await?;
        }
        TopicCommand::Reassignments => crate::topic_reassign::list(&args.connect).await?,
        TopicCommand::List => {
            let metadata = metadata(&args.connect, None)?;
            for topic in metadata.topics() {
                println!("{}\t{} partitions", topic.name(), topic.partitions().len());
            }
        }
        TopicCommand::Describe { name } => {
            let metadata = metadata(&args.connect, Some(&name))?;
            let topic = metadata
                .topics()
                .first()
                .context("no such topic in metadata")?;
            if let Some(error) = topic.error() {
                bail!("topic {name}: {:?}", error);
            }
            println!("topic: {}", topic.name());
            println!("partitions: {}", topic.partitions().len());
            for partition in topic.partitions() {
                println!(
                    "  partition {}\tleader {}\treplicas {:?}\tisr {:?}",
                    partition.id(),
                    partition.leader(),
                    partition.replicas(),
                    partition.isr()
                );
            }
            let described = admin(&args.connect)?
                .describe_configs([&ResourceSpecifier::Topic(&name)], &options)
                .await?;
            println!("configs:");
            for resource in described {
                let resource = resource.map_err(|e| anyhow::anyhow!("describe configs: {e}"))?;
                for entry in resource.entries {
                    let marker = if entry.is_default { "" } else { "  (set)" };
                    println!(
                        "  {}={}{}",
                        entry.name,
                        entry.value.unwrap_or_default(),
                        marker
                    );
                }
            }
        }
        TopicCommand::Delete { names } => {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let results = admin(&args.connect)?.delete_topics(&refs, &options).await?;
            for result in results {
                match result {
                    Ok(name) => println!("deleted topic {name}"),
                    Err((name, code)) => bail!("cannot delete topic {name}: {code}"),
                }
            }
        }
        TopicCommand::AlterConfig { name, configs } => {
            alter_topic_configs(&args.connect, &name, &parse_configs(&configs)?).await?;
            println!("updated configs of {name}");
        }
    }
    Ok(())
}

/// IncrementalAlterConfigs (SET) for one topic, reporting the broker's error if it refuses.
async fn alter_topic_configs(
    connect: &ConnectArgs,
    topic: &str,
    configs: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    use kafka_protocol::messages::IncrementalAlterConfigsRequest;
    use kafka_protocol::protocol::StrBytes;
    const TOPIC_RESOURCE: i8 = 2;
    const SET: i8 = 0;
    let changes = configs
        .iter()
        .map(|(name, value)| {
            AlterableConfig::default()
                .with_name(StrBytes::from_string(name.clone()))
                .with_config_operation(SET)
                .with_value(Some(StrBytes::from_string(value.clone())))
        })
        .collect();
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(TOPIC_RESOURCE)
            .with_resource_name(StrBytes::from_string(topic.to_string()))
            .with_configs(changes),
    ]);
    let mut client = crate::protocol_client::connect(connect).await?;
    let response = client.call(0, &request).await?;
    for resource in response.responses {
        if resource.error_code != 0 {
            let error = kafka_protocol::ResponseError::try_from_code(resource.error_code)
                .map(|e| e.to_string())
                .unwrap_or_default();
            let message = resource
                .error_message
                .map(|m| m.to_string())
                .unwrap_or_default();
            bail!("cannot alter configs of {topic}: {error} ({message})");
        }
    }
    Ok(())
}

fn metadata(
    connect: &ConnectArgs,
    topic: Option<&str>,
) -> anyhow::Result<rdkafka::metadata::Metadata> {
    let mut config = connect.client_config()?;
    config.set("allow.auto.create.topics", "false");
    let consumer: BaseConsumer = config.create().context("cannot create client")?;
    consumer
        .fetch_metadata(topic, REQUEST_TIMEOUT)
        .context("metadata request failed")
}

/// Brokers, the active controller, and partitions that are under-replicated (ISR smaller than
/// the replicas) or offline (no leader), from one Metadata answer (as `kafka-topics
/// --describe --under-replicated-partitions` and `--unavailable-partitions` would list them).
async fn cluster_info(connect: &ConnectArgs) -> anyhow::Result<()> {
    use kafka_protocol::messages::MetadataRequest;
    let mut client = crate::protocol_client::connect(connect).await?;
    let response = client
        .call(12, &MetadataRequest::default().with_topics(None))
        .await?;
    let cluster_id = response
        .cluster_id
        .map(|id| id.to_string())
        .unwrap_or_default();
    println!("cluster id: {cluster_id}");
    println!("controller: {}", response.controller_id.0);
    print_quorum(&mut client).await?;
    println!("brokers:");
    let mut brokers = response.brokers;
    brokers.sort_by_key(|b| b.node_id.0);
    for broker in &brokers {
        let rack = broker
            .rack
            .as_ref()
            .map(|r| format!("\track {r}"))
            .unwrap_or_default();
        println!(
            "  {}\t{}:{}{rack}",
            broker.node_id.0, broker.host, broker.port
        );
    }
    let mut partitions = 0;
    let mut under_replicated = Vec::new();
    let mut offline = Vec::new();
    for topic in &response.topics {
        let name = topic
            .name
            .as_ref()
            .map(|n| n.to_string())
            .unwrap_or_default();
        for partition in &topic.partitions {
            partitions += 1;
            let place = format!("{name}-{}", partition.partition_index);
            if partition.leader_id.0 < 0 {
                offline.push(place);
            } else if partition.isr_nodes.len() < partition.replica_nodes.len() {
                under_replicated.push(format!(
                    "{place} (isr {:?} of {:?})",
                    partition.isr_nodes.iter().map(|b| b.0).collect::<Vec<_>>(),
                    partition
                        .replica_nodes
                        .iter()
                        .map(|b| b.0)
                        .collect::<Vec<_>>()
                ));
            }
        }
    }
    println!(
        "topics: {}, partitions: {partitions}",
        response.topics.len()
    );
    println!("under-replicated partitions: {}", under_replicated.len());
    for place in &under_replicated {
        println!("  {place}");
    }
    println!("offline partitions: {}", offline.len());
    for place in &offline {
        println!("  {place}");
    }
    Ok(())
}

/// The metadata quorum from DescribeQuorum: leader, epoch, high watermark, and each voter's
/// and observer's log end and lag (as `kafka-metadata-quorum describe --status --replication`).
async fn print_quorum(client: &mut crate::protocol_client::ProtocolClient) -> anyhow::Result<()> {
    use kafka_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
    use kafka_protocol::messages::{DescribeQuorumRequest, TopicName};
    let request = DescribeQuorumRequest::default().with_topics(vec![TopicData::default()
        .with_topic_name(TopicName(
            kafka_protocol::protocol::StrBytes::from_static_str("__cluster_metadata"),
        ))
        .with_partitions(vec![PartitionData::default().with_partition_index(0)])]);
    let response = client.call(2, &request).await?;
    let Some(partition) = response.topics.first().and_then(|t| t.partitions.first()) else {
        bail!("DescribeQuorum answered no partition");
    };
    if partition.error_code != 0 {
        let reason = partition
            .error_message
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default();
        println!("quorum: unavailable ({reason})");
        return Ok(());
    }
    println!(
        "quorum: leader {}, epoch {}, high watermark {}",
        partition.leader_id.0, partition.leader_epoch, partition.high_watermark
    );
    let replicas = [
        ("voter", &partition.current_voters),
        ("observer", &partition.observers),
    ];
    for (role, states) in replicas {
        for state in states.iter() {
            let lag = if state.log_end_offset < 0 {
                "unknown".to_string()
            } else {
                (partition.high_watermark - state.log_end_offset)
                    .max(0)
                    .to_string()
            };
            println!(
                "  {role} {}\tlog end {}\tlag {lag}",
                state.replica_id.0, state.log_end_offset
            );
        }
    }
    Ok(())
}

pub(crate) async fn run_cluster(args: ClusterArgs) -> anyhow::Result<()> {
    match args.command {
        ClusterCommand::Info => cluster_info(&args.connect).await?,
        ClusterCommand::ApiVersions => {
            use kafka_protocol::messages::{ApiKey, ApiVersionsRequest};
            let mut client = crate::protocol_client::connect(&args.connect).await?;
            let request = ApiVersionsRequest::default()
                .with_client_software_name(kafka_protocol::protocol::StrBytes::from_static_str(
                    "weir-cli",
                ))
                .with_client_software_version(kafka_protocol::protocol::StrBytes::from_static_str(
                    env!("CARGO_PKG_VERSION"),
                ));
            let response = client.call(3, &request).await?;
            if response.error_code != 0 {
                bail!("ApiVersions failed with error code {}", response.error_code);
            }
            for api in response.api_keys {
                let name = ApiKey::try_from(api.api_key)
                    .map(|key| format!("{key:?}"))
                    .unwrap_or_else(|_| format!("Unknown{}", api.api_key));
                println!(
                    "{name}({})\t{}-{}",
                    api.api_key, api.min_version, api.max_version
                );
            }
        }
    }
    Ok(())
}
