//! Metadata: brokers, topics and partition leaders; auto-creates topics when allowed.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::handler::errors::{code, error_for};
use crate::server::BrokerContext;
use crate::topic::Topic;

pub fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    request: MetadataRequest,
) -> MetadataResponse {
    let auto_create = context.config.auto_create_topics_enable()
        && (version < 4 || request.allow_auto_topic_creation);
    let topics = match request.topics {
        None => all_topics(context),
        Some(topics) if version == 0 && topics.is_empty() => all_topics(context),
        Some(topics) => topics
            .into_iter()
            .map(|requested| match requested.name {
                Some(name) => named_topic(context, name, auto_create),
                None => topic_by_id(context, requested.topic_id),
            })
            .collect(),
    };
    MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(context.node_id))
            .with_host(StrBytes::from_string(context.advertised_host.clone()))
            .with_port(context.advertised_port as i32)])
        .with_cluster_id(Some(StrBytes::from_string(context.cluster_id.clone())))
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
        .partitions
        .iter()
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
