//! `weir topic reassign` and `weir topic reassignments`: moving a partition's replicas to other
//! brokers (AlterPartitionReassignments / ListPartitionReassignments, KIP-455), as Kafka's
//! kafka-reassign-partitions.sh does for one partition at a time.

use std::time::{Duration, Instant};

use anyhow::bail;
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, BrokerId, ListPartitionReassignmentsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::ConnectArgs;
use crate::protocol_client::ProtocolClient;

/// How long `--wait` waits for a move to complete.
const WAIT_LIMIT: Duration = Duration::from_secs(600);

/// Starts moving `topic`-`partition` to `replicas` (`None`: cancels the move in progress);
/// with `wait`, returns once the move is complete.
pub(crate) async fn reassign(
    connect: &ConnectArgs,
    topic: &str,
    partition: i32,
    replicas: Option<Vec<i32>>,
    wait: bool,
) -> anyhow::Result<()> {
    let target = replicas
        .clone()
        .map(|ids| ids.into_iter().map(BrokerId).collect());
    let request = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(vec![ReassignableTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![ReassignablePartition::default()
                .with_partition_index(partition)
                .with_replicas(target)])]);
    let mut client = crate::protocol_client::connect(connect).await?;
    let response = client.call(0, &request).await?;
    if let Some(error) = kafka_protocol::ResponseError::try_from_code(response.error_code) {
        bail!("cannot reassign {topic}-{partition}: {error}");
    }
    let answer = response
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.partition_index == partition);
    if let Some(answer) = answer {
        if let Some(error) = kafka_protocol::ResponseError::try_from_code(answer.error_code) {
            let message = answer
                .error_message
                .as_ref()
                .map(|m| m.to_string())
                .unwrap_or_default();
            bail!("cannot reassign {topic}-{partition}: {error} ({message})");
        }
    }
    match &replicas {
        Some(replicas) => println!("moving {topic}-{partition} to replicas {replicas:?}"),
        None => println!("cancelled the move of {topic}-{partition}"),
    }
    if !wait {
        return Ok(());
    }
    let started = Instant::now();
    while in_progress(&mut client)
        .await?
        .iter()
        .any(|(t, p, ..)| t == topic && *p == partition)
    {
        if started.elapsed() > WAIT_LIMIT {
            bail!("{topic}-{partition} is still moving after {WAIT_LIMIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("{topic}-{partition} moved");
    Ok(())
}

/// Prints the moves in progress.
pub(crate) async fn list(connect: &ConnectArgs) -> anyhow::Result<()> {
    let mut client = crate::protocol_client::connect(connect).await?;
    println!("TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING");
    for (topic, partition, replicas, adding, removing) in in_progress(&mut client).await? {
        println!("{topic}\t{partition}\t{replicas:?}\t{adding:?}\t{removing:?}");
    }
    Ok(())
}

type Ongoing = (String, i32, Vec<i32>, Vec<i32>, Vec<i32>);

async fn in_progress(client: &mut ProtocolClient) -> anyhow::Result<Vec<Ongoing>> {
    let request = ListPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(None);
    let response = client.call(0, &request).await?;
    if let Some(error) = kafka_protocol::ResponseError::try_from_code(response.error_code) {
        bail!("cannot list reassignments: {error}");
    }
    let ids = |brokers: &[BrokerId]| brokers.iter().map(|b| b.0).collect::<Vec<i32>>();
    Ok(response
        .topics
        .iter()
        .flat_map(|topic| {
            topic.partitions.iter().map(move |p| {
                (
                    topic.name.to_string(),
                    p.partition_index,
                    ids(&p.replicas),
                    ids(&p.adding_replicas),
                    ids(&p.removing_replicas),
                )
            })
        })
        .collect())
}
