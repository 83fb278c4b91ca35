//! FindCoordinator: alone, this broker coordinates every group and every transactional id
//! (creating `__consumer_offsets` / `__transaction_state` on first use, as Kafka does).
//!
//! In a cluster, a group's coordinator is the leader of its partition of `__consumer_offsets`
//! and a transactional id's the leader of its partition of `__transaction_state`; the
//! controller creates them on first use with `offsets.topic.replication.factor` /
//! `transaction.state.log.replication.factor` replicas (COORDINATOR_NOT_AVAILABLE until the
//! topic exists and the partition has a leader).

use std::sync::Arc;

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::member::ClusterMember;
use crate::cluster::NO_LEADER;
use crate::context::BrokerContext;
use crate::group::offsets::{self, OFFSETS_TOPIC};
use crate::handler::access::Access;
use crate::handler::errors::error_for;
use crate::security::acl::Operation;
use crate::transaction::records::TRANSACTION_STATE_TOPIC;

const GROUP_KEY_TYPE: i8 = 0;

const TRANSACTION_KEY_TYPE: i8 = 1;

/// (node id, host, port) of the coordinator of `key`.
type Found = (i32, StrBytes, i32);

/// The coordinator of a key the principal may DESCRIBE (Kafka's check; refused keys learn
/// nothing of their coordinator).
fn find_authorized(
    context: &Arc<BrokerContext>,
    access: &Access,
    listener: &str,
    key_type: i8,
    key: &str,
) -> Result<Found, (ResponseError, String)> {
    let refusal = match key_type {
        GROUP_KEY_TYPE if !access.allows_group(Operation::Describe, key) => {
            Some(ResponseError::GroupAuthorizationFailed)
        }
        TRANSACTION_KEY_TYPE if !access.allows_transactional_id(Operation::Describe, key) => {
            Some(ResponseError::TransactionalIdAuthorizationFailed)
        }
        _ => None,
    };
    match refusal {
        Some(error) => Err((
            error,
            format!("Not authorized to describe the coordinator of {key}"),
        )),
        None => find(context, listener, key_type, key),
    }
}

fn find(
    context: &Arc<BrokerContext>,
    listener: &str,
    key_type: i8,
    key: &str,
) -> Result<Found, (ResponseError, String)> {
    if let Some(cluster) = &context.cluster {
        let internal = match key_type {
            GROUP_KEY_TYPE => InternalTopic {
                name: OFFSETS_TOPIC,
                partitions: context.config().offsets_topic_partitions(),
                replication_factor: context.config().offsets_topic_replication_factor(),
                configs: context.groups.offsets_topic_configs(&context.topics),
            },
            TRANSACTION_KEY_TYPE => {
                let settings = context.transactions.settings();
                InternalTopic {
                    name: TRANSACTION_STATE_TOPIC,
                    partitions: settings.state_partitions,
                    replication_factor: settings.state_replication_factor,
                    configs: context.transactions.state_topic_configs(),
                }
            }
            other => return Err(unknown_key_type(other)),
        };
        return coordinator_in_cluster(cluster, listener, internal, key);
    }
    answer(context, key_type)?;
    let (host, port) = context.advertised(listener);
    Ok((context.node_id, StrBytes::from_string(host), port as i32))
}

/// The internal topic whose partition leaders coordinate a kind of key.
struct InternalTopic {
    name: &'static str,
    partitions: i32,
    replication_factor: i32,
    configs: std::collections::BTreeMap<String, String>,
}

/// In a cluster: the leader of the key's partition of the internal topic, which the controller
/// creates on first use (COORDINATOR_NOT_AVAILABLE until it exists and has a leader).
fn coordinator_in_cluster(
    cluster: &Arc<ClusterMember>,
    listener: &str,
    internal: InternalTopic,
    key: &str,
) -> Result<Found, (ResponseError, String)> {
    let image = cluster.image().image;
    let not_available = |message: String| (ResponseError::CoordinatorNotAvailable, message);
    let Some(topic) = image.topic_by_name(internal.name) else {
        cluster.create_topic_soon(
            internal.name,
            internal.partitions,
            Some(internal.replication_factor),
            internal.configs,
        );
        return Err(not_available(format!("{} is being created", internal.name)));
    };
    let index = offsets::partition_for(key, topic.partitions.len() as i32);
    let leader = topic
        .partitions
        .get(index as usize)
        .map_or(NO_LEADER, |state| state.leader);
    let endpoint = image
        .brokers
        .get(&leader)
        .and_then(|broker| broker.endpoint(listener));
    match endpoint {
        Some((host, port)) if leader != NO_LEADER => {
            Ok((leader, StrBytes::from_string(host.to_string()), port as i32))
        }
        _ => Err(not_available(format!(
            "{}-{index} has no leader",
            internal.name
        ))),
    }
}

fn unknown_key_type(key_type: i8) -> (ResponseError, String) {
    (
        ResponseError::InvalidRequest,
        format!("unknown coordinator key type {key_type}"),
    )
}

fn answer(context: &Arc<BrokerContext>, key_type: i8) -> Result<(), (ResponseError, String)> {
    let ready = match key_type {
        GROUP_KEY_TYPE => context.groups.offsets_topic(&context.topics).map(|_| ()),
        TRANSACTION_KEY_TYPE => context
            .transactions
            .state_topic(&context.topics)
            .map(|_| ()),
        other => return Err(unknown_key_type(other)),
    };
    ready.map_err(|error| (error_for(&error), error.to_string()))
}

/// The coordinators' addresses on `listener`, the one the request came in on.
pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    listener: &str,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .into_iter()
            .map(|key| {
                match find_authorized(context, access, listener, request.key_type, key.as_str()) {
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
                }
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    match find_authorized(
        context,
        access,
        listener,
        request.key_type,
        request.key.as_str(),
    ) {
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
