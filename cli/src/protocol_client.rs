//! The Kafka protocol client for the admin calls where rdkafka falls short (rust-rdkafka 0.39
//! drops per-resource errors of AlterConfigs, so a refused config change would be reported as
//! success). It is `weir-wire`'s (`client/wire`), the client brokers reach each other with.
//!
//! In a cluster a request must reach the right broker: a coordinator (FindCoordinator), a
//! partition's leader, or every broker (Metadata) — the helpers below find it from the
//! bootstrap broker.

use anyhow::{bail, Context};
use kafka_protocol::messages::{FindCoordinatorRequest, MetadataRequest, MetadataResponse};
use kafka_protocol::protocol::StrBytes;
pub(crate) use weir_wire::ProtocolClient;
use weir_wire::DEFAULT_TIMEOUT;

use crate::client::ConnectArgs;

/// FindCoordinator key types.
pub(crate) const GROUP_KEY: i8 = 0;
pub(crate) const TRANSACTION_KEY: i8 = 1;

/// A connection to the first bootstrap broker, secured as the `-X` properties say.
/// A connection to the first bootstrap broker that answers, tried in the order given.
pub(crate) async fn connect(connect: &ConnectArgs) -> anyhow::Result<ProtocolClient> {
    let mut failures = Vec::new();
    for address in connect.bootstrap.split(',').map(str::trim) {
        match connect_at(connect, address).await {
            Ok(client) => return Ok(client),
            Err(error) => failures.push(format!("{address}: {error:#}")),
        }
    }
    bail!("no bootstrap broker answered: {}", failures.join("; "))
}

/// A connection to the broker at `address`, secured as the `-X` properties say.
pub(crate) async fn connect_at(
    connect: &ConnectArgs,
    address: &str,
) -> anyhow::Result<ProtocolClient> {
    let security = connect.security()?;
    Ok(ProtocolClient::connect_secured(address, "weir-cli", DEFAULT_TIMEOUT, &security).await?)
}

/// A connection to the coordinator of `key` (a group or a transactional id).
pub(crate) async fn connect_to_coordinator(
    connect: &ConnectArgs,
    key_type: i8,
    key: &str,
) -> anyhow::Result<ProtocolClient> {
    let mut client = self::connect(connect).await?;
    let request = FindCoordinatorRequest::default()
        .with_key(StrBytes::from_string(key.to_string()))
        .with_key_type(key_type);
    let coordinator = client.call(3, &request).await?;
    if coordinator.error_code != 0 {
        bail!(
            "FindCoordinator for {key} failed with error code {}",
            coordinator.error_code
        );
    }
    let address = format!("{}:{}", coordinator.host.as_str(), coordinator.port);
    connect_at(connect, &address).await
}

async fn metadata(connect: &ConnectArgs, topic: Option<&str>) -> anyhow::Result<MetadataResponse> {
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::TopicName;
    let mut client = self::connect(connect).await?;
    let topics = topic.map(|name| {
        vec![MetadataRequestTopic::default()
            .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))]
    });
    let request = MetadataRequest::default()
        .with_topics(topics)
        .with_allow_auto_topic_creation(false);
    Ok(client.call(12, &request).await?)
}

/// The address of every broker of the cluster.
pub(crate) async fn broker_addresses(connect: &ConnectArgs) -> anyhow::Result<Vec<String>> {
    let response = metadata(connect, None).await?;
    Ok(response
        .brokers
        .iter()
        .map(|b| format!("{}:{}", b.host.as_str(), b.port))
        .collect())
}

/// A connection to the leader of a partition.
pub(crate) async fn connect_to_leader(
    connect: &ConnectArgs,
    topic: &str,
    partition: i32,
) -> anyhow::Result<ProtocolClient> {
    let response = metadata(connect, Some(topic)).await?;
    let found = response
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.as_str() == topic))
        .with_context(|| format!("topic {topic} is not in the metadata"))?;
    if found.error_code != 0 {
        bail!("topic {topic}: error code {}", found.error_code);
    }
    let leader = found
        .partitions
        .iter()
        .find(|p| p.partition_index == partition)
        .with_context(|| format!("{topic} has no partition {partition}"))?
        .leader_id;
    let broker = response
        .brokers
        .iter()
        .find(|b| b.node_id == leader)
        .with_context(|| format!("{topic}-{partition} has no leader now"))?;
    let address = format!("{}:{}", broker.host.as_str(), broker.port);
    connect_at(connect, &address).await
}
