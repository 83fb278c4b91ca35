//! Metadata: brokers, topics and partition leaders; auto-creates topics when allowed.
//!
//! Authorization as Kafka's: a topic the principal may not DESCRIBE is left out of an
//! all-topics answer and answered TOPIC_AUTHORIZATION_FAILED when named (existing or not); a
//! missing topic is auto-created only with CREATE on the cluster or the topic (else
//! TOPIC_AUTHORIZATION_FAILED); KIP-430's topic and cluster operations when asked.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::member::ClusterMember;
use crate::cluster::{MetadataImage, TopicState, NO_LEADER};
use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::handler::errors::{code, error_for};
use crate::security::acl::{Operation, ResourceType, CLUSTER_NAME};
use crate::topic::Topic;

/// Metadata as seen from `listener`: the brokers' addresses on that listener.
pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    listener: &str,
    request: MetadataRequest,
) -> MetadataResponse {
    let auto_create = context.config().auto_create_topics_enable()
        && (version < 4 || request.allow_auto_topic_creation);
    let may_create = |name: &str| {
        access.allows_cluster(Operation::Create) || access.allows_topic(Operation::Create, name)
    };
    let may_auto_create = |name: &str| {
        auto_create && access.allows_topic(Operation::Describe, name) && may_create(name)
    };
    let asked = Asked {
        all_topics: match &request.topics {
            None => true,
            Some(topics) => version == 0 && topics.is_empty(),
        },
        by_id: request
            .topics
            .iter()
            .flatten()
            .any(|topic| topic.name.is_none()),
        topic_operations: request.include_topic_authorized_operations,
        cluster_operations: request.include_cluster_authorized_operations,
    };
    let response = match &context.cluster {
        Some(cluster) => cluster_metadata(
            context,
            cluster,
            version,
            listener,
            request,
            &may_auto_create,
        ),
        None => single_node_metadata(context, version, listener, request, &may_auto_create),
    };
    authorize_topics(response, access, &asked, |name| {
        auto_create && !may_create(name)
    })
}

/// What the request asked beyond its topics.
struct Asked {
    all_topics: bool,
    /// Topics named by id (Kafka answers a refused one by id, a named one by name).
    by_id: bool,
    topic_operations: bool,
    cluster_operations: bool,
}

/// Applies the principal's DESCRIBE rights to the answer and fills in authorized operations.
/// `creation_refused(name)`: a missing topic would have been created but for its CREATE right.
fn authorize_topics(
    mut response: MetadataResponse,
    access: &Access,
    asked: &Asked,
    creation_refused: impl Fn(&str) -> bool,
) -> MetadataResponse {
    let refused = ResponseError::TopicAuthorizationFailed.code();
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    let topics = std::mem::take(&mut response.topics);
    response.topics = topics
        .into_iter()
        .filter_map(|topic| {
            let Some(name) = topic.name.clone() else {
                return Some(topic);
            };
            if !access.allows_topic(Operation::Describe, &name) {
                // Left out of all topics; named (or by id), refused without its details.
                return (!asked.all_topics).then(|| {
                    MetadataResponseTopic::default()
                        .with_name((!asked.by_id).then_some(name))
                        .with_topic_id(match asked.by_id {
                            true => topic.topic_id,
                            false => uuid::Uuid::nil(),
                        })
                        .with_error_code(refused)
                });
            }
            if topic.error_code == unknown && creation_refused(&name) {
                return Some(topic.with_error_code(refused));
            }
            let operations =
                access.authorized_operations(asked.topic_operations, ResourceType::Topic, &name);
            Some(topic.with_topic_authorized_operations(operations))
        })
        .collect();
    if asked.cluster_operations {
        response.cluster_authorized_operations = match access.allows_cluster(Operation::Describe) {
            true => access.authorized_operations(true, ResourceType::Cluster, CLUSTER_NAME),
            false => 0,
        };
    }
    response
}

fn single_node_metadata(
    context: &Arc<BrokerContext>,
    version: i16,
    listener: &str,
    request: MetadataRequest,
    may_auto_create: &dyn Fn(&str) -> bool,
) -> MetadataResponse {
    let topics = match request.topics {
        None => all_topics(context),
        Some(topics) if version == 0 && topics.is_empty() => all_topics(context),
        Some(topics) => topics
            .into_iter()
            .map(|requested| match requested.name {
                Some(name) => {
                    let auto_create = may_auto_create(name.as_str());
                    named_topic(context, name, auto_create)
                }
                None => topic_by_id(context, requested.topic_id),
            })
            .collect(),
    };
    let (host, port) = context.advertised(listener);
    MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(context.node_id))
            .with_host(StrBytes::from_string(host))
            .with_port(port as i32)])
        .with_cluster_id(Some(StrBytes::from_string(context.cluster_id())))
        .with_controller_id(BrokerId(context.node_id))
        .with_topics(topics)
}

fn all_topics(context: &Arc<BrokerContext>) -> Vec<MetadataResponseTopic> {
    context
        .topics
        .all()
        .iter()
        .map(|topic| describe_topic(context, topic))
        .collect()
}

fn named_topic(
    context: &Arc<BrokerContext>,
    name: TopicName,
    auto_create: bool,
) -> MetadataResponseTopic {
    if let Some(topic) = context.topics.get(name.as_str()) {
        return describe_topic(context, &topic);
    }
    let error = if auto_create {
        match context
            .topics
            .create(name.as_str(), -1, -1, BTreeMap::new())
        {
            Ok(topic) => return describe_topic(context, &topic),
            Err(crate::error::BrokerError::TopicAlreadyExists { .. }) => {
                if let Some(topic) = context.topics.get(name.as_str()) {
                    return describe_topic(context, &topic);
                }
                ResponseError::UnknownTopicOrPartition
            }
            Err(error) => error_for(&error),
        }
    } else if crate::topic::validate_topic_name(name.as_str()).is_err() {
        ResponseError::InvalidTopicException
    } else {
        ResponseError::UnknownTopicOrPartition
    };
    MetadataResponseTopic::default()
        .with_name(Some(name))
        .with_error_code(error.code())
}

fn topic_by_id(context: &Arc<BrokerContext>, topic_id: uuid::Uuid) -> MetadataResponseTopic {
    match context.topics.get_by_id(topic_id) {
        Some(topic) => describe_topic(context, &topic),
        None => MetadataResponseTopic::default()
            .with_topic_id(topic_id)
            .with_error_code(code(Some(ResponseError::UnknownTopicId))),
    }
}

pub fn describe_topic(context: &Arc<BrokerContext>, topic: &Topic) -> MetadataResponseTopic {
    let node = BrokerId(context.node_id);
    let partitions = topic
        .hosted()
        .map(|partition| {
            MetadataResponsePartition::default()
                .with_partition_index(partition.index)
                .with_leader_id(node)
                .with_leader_epoch(partition.leader_epoch())
                .with_replica_nodes(vec![node])
                .with_isr_nodes(vec![node])
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(
            topic.name.to_string(),
        ))))
        .with_topic_id(topic.id)
        .with_is_internal(topic.is_internal())
        .with_partitions(partitions)
}

/// Metadata in cluster mode: the whole cluster, from this broker's metadata image.
fn cluster_metadata(
    context: &Arc<BrokerContext>,
    cluster: &Arc<ClusterMember>,
    version: i16,
    listener: &str,
    request: MetadataRequest,
    may_auto_create: &dyn Fn(&str) -> bool,
) -> MetadataResponse {
    let image = cluster.image().image;
    // A broker without this listener is left out, as Kafka does.
    let brokers = image
        .live_brokers()
        .filter_map(|broker| {
            let (host, port) = broker.endpoint(listener)?;
            Some(
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(broker.broker_id))
                    .with_host(StrBytes::from_string(host.to_string()))
                    .with_port(port as i32)
                    .with_rack(broker.rack.clone().map(StrBytes::from_string)),
            )
        })
        .collect();
    let all_topics = match &request.topics {
        None => true,
        Some(topics) => version == 0 && topics.is_empty(),
    };
    let topics = match request.topics {
        _ if all_topics => image
            .topics
            .values()
            .map(|topic| describe_image_topic(&image, topic))
            .collect(),
        None => Vec::new(),
        Some(topics) => topics
            .into_iter()
            .map(|requested| match requested.name {
                Some(name) => match image.topic_by_name(name.as_str()) {
                    Some(topic) => describe_image_topic(&image, topic),
                    None => {
                        let auto_create = may_auto_create(name.as_str());
                        missing_topic(context, cluster, name, auto_create)
                    }
                },
                None => match image.topics.get(&requested.topic_id) {
                    Some(topic) => describe_image_topic(&image, topic),
                    None => MetadataResponseTopic::default()
                        .with_topic_id(requested.topic_id)
                        .with_error_code(code(Some(ResponseError::UnknownTopicId))),
                },
            })
            .collect(),
    };
    MetadataResponse::default()
        .with_brokers(brokers)
        .with_cluster_id(Some(StrBytes::from_string(context.cluster_id())))
        .with_controller_id(BrokerId(cluster.active_controller().unwrap_or(-1)))
        .with_topics(topics)
}

/// A topic the image does not hold: created in the background when auto-creation is on (the
/// client retries on LEADER_NOT_AVAILABLE, as with Kafka).
fn missing_topic(
    context: &Arc<BrokerContext>,
    cluster: &Arc<ClusterMember>,
    name: TopicName,
    auto_create: bool,
) -> MetadataResponseTopic {
    let error = if crate::topic::validate_topic_name(name.as_str()).is_err() {
        ResponseError::InvalidTopicException
    } else if auto_create {
        let partitions = context.config().num_partitions();
        cluster.create_topic_soon(name.as_str(), partitions, None, BTreeMap::new());
        ResponseError::LeaderNotAvailable
    } else {
        ResponseError::UnknownTopicOrPartition
    };
    MetadataResponseTopic::default()
        .with_name(Some(name))
        .with_error_code(error.code())
}

fn describe_image_topic(image: &MetadataImage, topic: &TopicState) -> MetadataResponseTopic {
    let brokers = |ids: &[i32]| ids.iter().copied().map(BrokerId).collect::<Vec<_>>();
    let partitions = topic
        .partitions
        .iter()
        .enumerate()
        .map(|(index, state)| {
            let offline: Vec<i32> = state
                .replicas
                .iter()
                .copied()
                .filter(|replica| !image.is_live(*replica))
                .collect();
            let error = (state.leader == NO_LEADER).then_some(ResponseError::LeaderNotAvailable);
            MetadataResponsePartition::default()
                .with_error_code(code(error))
                .with_partition_index(index as i32)
                .with_leader_id(BrokerId(state.leader))
                .with_leader_epoch(state.leader_epoch)
                .with_replica_nodes(brokers(&state.replicas))
                .with_isr_nodes(brokers(&state.isr))
                .with_offline_replicas(brokers(&offline))
        })
        .collect();
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(topic.name.clone()))))
        .with_topic_id(topic.topic_id)
        .with_is_internal(crate::topic::is_internal(&topic.name))
        .with_partitions(partitions)
}
