//! FindCoordinator: alone, this broker coordinates every group and every transactional id
//! (creating `__consumer_offsets` / `__transaction_state` on first use, as Kafka does).
//!
//! In a cluster, a group's coordinator is the leader of its partition of `__consumer_offsets`,
//! which the controller creates on first use with `offsets.topic.replication.factor` replicas
//! (COORDINATOR_NOT_AVAILABLE until it exists and has a leader). Transactional ids are still
//! coordinated by the broker asked.

use std::sync::Arc;

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::member::ClusterMember;
use crate::cluster::NO_LEADER;
use crate::group::offsets::{self, OFFSETS_TOPIC};
use crate::handler::errors::error_for;
use crate::server::BrokerContext;

const GROUP_KEY_TYPE: i8 = 0;

const TRANSACTION_KEY_TYPE: i8 = 1;

/// (node id, host, port) of the coordinator of `key`.
type Found = (i32, StrBytes, i32);

fn find(
    context: &Arc<BrokerContext>,
    key_type: i8,
    key: &str,
) -> Result<Found, (ResponseError, String)> {
    if let (Some(cluster), GROUP_KEY_TYPE) = (&context.cluster, key_type) {
        return group_coordinator_in_cluster(context, cluster, key);
    }
    answer(context, key_type)?;
    let host = StrBytes::from_string(context.advertised_host.clone());
    Ok((context.node_id, host, context.advertised_port as i32))
}

fn group_coordinator_in_cluster(
    context: &Arc<BrokerContext>,
    cluster: &Arc<ClusterMember>,
    group_id: &str,
) -> Result<Found, (ResponseError, String)> {
    let image = cluster.image().image;
    let not_available = |message: String| (ResponseError::CoordinatorNotAvailable, message);
    let Some(topic) = image.topic_by_name(OFFSETS_TOPIC) else {
        let configs = context.groups.offsets_topic_configs(&context.topics);
        cluster.create_topic_soon(
            OFFSETS_TOPIC,
            context.config.offsets_topic_partitions(),
            Some(context.config.offsets_topic_replication_factor()),
            configs,
        );
        return Err(not_available(format!("{OFFSETS_TOPIC} is being created")));
    };
    let index = offsets::partition_for(group_id, topic.partitions.len() as i32);
    let leader = topic
        .partitions
        .get(index as usize)
        .map_or(NO_LEADER, |state| state.leader);
    match image.brokers.get(&leader) {
        Some(broker) if leader != NO_LEADER => Ok((
            leader,
            StrBytes::from_string(broker.host.clone()),
            broker.port as i32,
        )),
        _ => Err(not_available(format!(
            "{OFFSETS_TOPIC}-{index} has no leader"
        ))),
    }
}

fn answer(context: &Arc<BrokerContext>, key_type: i8) -> Result<(), (ResponseError, String)> {
    let ready = match key_type {
        GROUP_KEY_TYPE => context.groups.offsets_topic(&context.topics).map(|_| ()),
        TRANSACTION_KEY_TYPE => context
            .transactions
            .state_topic(&context.topics)
            .map(|_| ()),
        other => {
            return Err((
                ResponseError::InvalidRequest,
                format!("unknown coordinator key type {other}"),
            ))
        }
    };
    ready.map_err(|error| (error_for(&error), error.to_string()))
}

pub fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .into_iter()
            .map(|key| match find(context, request.key_type, key.as_str()) {
                Ok((node, host, port)) => Coordinator::default()
                    .with_key(key)
                    .with_node_id(BrokerId(node))
                    .with_host(host)
                    .with_port(port),
                Err((error, message)) => Coordinator::default()
                    .with_key(key)
                    .with_node_id(BrokerId(-1))
                    .with_port(-1)
                    .with_error_code(error.code())
                    .with_error_message(Some(StrBytes::from_string(message))),
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    match find(context, request.key_type, request.key.as_str()) {
        Ok((node, host, port)) => FindCoordinatorResponse::default()
            .with_node_id(BrokerId(node))
            .with_host(host)
            .with_port(port),
        Err((error, message)) => {
            let response = FindCoordinatorResponse::default()
                .with_error_code(error.code())
                .with_node_id(BrokerId(-1))
                .with_port(-1);
            if version >= 1 {
                response.with_error_message(Some(StrBytes::from_string(message)))
            } else {
                response
            }
        }
    }
}
