//! DescribeQuorum (`kafka-metadata-quorum describe --status|--replication`): the metadata
//! quorum's leader, epoch, high watermark, and how far each voter and observer got, as the
//! active controller sees it (a broker forwards the question there, as Kafka's brokers do).

use std::sync::Arc;

use kafka_protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use kafka_protocol::messages::{
    BrokerId, DescribeQuorumRequest, DescribeQuorumResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::quorum::{QuorumDescription, ReplicaProgress};
use crate::context::BrokerContext;

/// The metadata log's name in Kafka (KRaft): the only partition a quorum describes.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

pub async fn handle(
    context: &Arc<BrokerContext>,
    request: DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    let asks_metadata_log = request.topics.iter().all(|topic| {
        topic.topic_name.0.as_str() == METADATA_TOPIC
            && topic.partitions.iter().all(|p| p.partition_index == 0)
    });
    if !asks_metadata_log {
        return failed(
            ResponseError::UnknownTopicOrPartition,
            format!("only {METADATA_TOPIC}-0 has a quorum"),
        );
    }
    let Some(cluster) = &context.cluster else {
        return failed(
            ResponseError::InvalidRequest,
            "this broker runs alone (no controller.quorum.voters): there is no metadata quorum"
                .to_string(),
        );
    };
    match cluster.describe_quorum().await {
        Ok(description) => described(&description),
        Err(error) => failed(ResponseError::NotLeaderOrFollower, error.to_string()),
    }
}

fn described(description: &QuorumDescription) -> DescribeQuorumResponse {
    let replica = |progress: &ReplicaProgress| {
        ReplicaState::default()
            .with_replica_id(BrokerId(progress.node_id as i32))
            .with_log_end_offset(progress.log_end_offset.map_or(-1, |offset| offset as i64))
            .with_last_fetch_timestamp(-1)
            .with_last_caught_up_timestamp(-1)
    };
    let partition = PartitionData::default()
        .with_partition_index(0)
        .with_leader_id(BrokerId(description.leader_id as i32))
        .with_leader_epoch(description.leader_epoch as i32)
        .with_high_watermark(description.high_watermark as i64)
        .with_current_voters(description.voters.iter().map(replica).collect())
        .with_observers(description.observers.iter().map(replica).collect());
    let nodes = description
        .voters
        .iter()
        .filter_map(|voter| {
            let (host, port) = voter.address.rsplit_once(':')?;
            Some(
                Node::default()
                    .with_node_id(BrokerId(voter.node_id as i32))
                    .with_listeners(vec![Listener::default()
                        .with_name(StrBytes::from_static_str("CONTROLLER"))
                        .with_host(StrBytes::from_string(host.to_string()))
                        .with_port(port.parse().ok()?)]),
            )
        })
        .collect();
    DescribeQuorumResponse::default()
        .with_error_message(None)
        .with_topics(vec![metadata_topic(partition)])
        .with_nodes(nodes)
}

/// The answer when the quorum cannot be described: the reason on the partition, as Kafka's
/// controller reports it.
fn failed(error: ResponseError, message: String) -> DescribeQuorumResponse {
    let partition = PartitionData::default()
        .with_partition_index(0)
        .with_error_code(error.code())
        .with_error_message(Some(StrBytes::from_string(message)))
        .with_leader_id(BrokerId(-1))
        .with_leader_epoch(-1)
        .with_high_watermark(-1);
    DescribeQuorumResponse::default()
        .with_error_message(None)
        .with_topics(vec![metadata_topic(partition)])
}

fn metadata_topic(partition: PartitionData) -> TopicData {
    TopicData::default()
        .with_topic_name(TopicName(StrBytes::from_static_str(METADATA_TOPIC)))
        .with_partitions(vec![partition])
}
