//! CreateTopics: validates name, partitions, replication factor and configs, then creates.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{
    CreateTopicsRequest, CreateTopicsResponse, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::cluster::controller::{check_operation_records, topic_creation_records};
use crate::cluster::member::ClusterMember;
use crate::cluster::quorum::rpc::ControllerRequest;
use crate::cluster::ControllerConfig;
use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::handler::access::Access;
use crate::handler::configs::{describe_topic_configs, ConfigEntry};
use crate::handler::errors::error_for;
use crate::handler::HandlerOutput;
use crate::security::acl::Operation;

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    request: CreateTopicsRequest,
) -> HandlerOutput {
    // CREATE on the cluster or on each topic, as Kafka.
    let everything = access.allows_cluster(Operation::Create);
    let refused: Refused = request
        .topics
        .iter()
        .map(|topic| topic.name.to_string())
        .filter(|name| !everything && !access.allows_topic(Operation::Create, name))
        .collect();
    let records = records_requested(&request, context.config().num_partitions(), &refused);
    if let Err(error) = check_operation_records(records) {
        let refusal = refuse_every_topic(request, &refused, &error.into());
        return HandlerOutput::Ready(Box::new(ResponseKind::CreateTopics(refusal)));
    }
    match &context.cluster {
        None => HandlerOutput::Ready(Box::new(ResponseKind::CreateTopics(create_here(
            context, version, request, &refused,
        )))),
        Some(cluster) => {
            let cluster = Arc::clone(cluster);
            let context = Arc::clone(context);
            HandlerOutput::Deferred(Box::pin(async move {
                ResponseKind::CreateTopics(
                    create_in_cluster(&context, &cluster, request, &refused).await,
                )
            }))
        }
    }
}

/// The metadata records the request's topics would write, as Kafka counts them for its bound
/// on one request (topics the principal may not create write none).
fn records_requested(
    request: &CreateTopicsRequest,
    default_partitions: i32,
    refused: &Refused,
) -> u64 {
    request
        .topics
        .iter()
        .filter(|topic| !refused.contains(topic.name.as_str()))
        .map(|topic| {
            let partitions = match (topic.assignments.len(), topic.num_partitions) {
                (0, -1) => default_partitions,
                (0, partitions) => partitions,
                (assigned, _) => i32::try_from(assigned).unwrap_or(i32::MAX),
            };
            let configs = topic.configs.iter().filter(|c| c.value.is_some()).count();
            topic_creation_records(partitions, configs)
        })
        .sum()
}

/// The answer to a request refused as a whole: each topic the principal may create gets
/// `error`, as Kafka's controller fails the whole operation.
fn refuse_every_topic(
    request: CreateTopicsRequest,
    refused: &Refused,
    error: &BrokerError,
) -> CreateTopicsResponse {
    let mut seen = std::collections::HashSet::new();
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            refused_early(&topic.name, &mut seen, refused).unwrap_or_else(|| {
                let result = CreatableTopicResult::default().with_name(topic.name.clone());
                with_error(result, error)
            })
        })
        .collect();
    CreateTopicsResponse::default().with_topics(topics)
}

/// A broker running alone creates topics in its own registry.
fn create_here(
    context: &Arc<BrokerContext>,
    version: i16,
    request: CreateTopicsRequest,
    refused: &Refused,
) -> CreateTopicsResponse {
    let mut seen = std::collections::HashSet::new();
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            if let Some(refusal) = refused_early(&topic.name, &mut seen, refused) {
                return refusal;
            }
            let name = topic.name.clone();
            let result = CreatableTopicResult::default().with_name(name.clone());
            let mut configs = BTreeMap::new();
            for config in &topic.configs {
                if let Some(value) = &config.value {
                    configs.insert(config.name.to_string(), value.to_string());
                }
            }
            let (partitions, replication_factor) = match explicit_assignment(&topic) {
                Ok(Some(count)) => (count, 1),
                Ok(None) => (topic.num_partitions, topic.replication_factor),
                Err(error) => return with_error(result, &error),
            };
            let outcome = if request.validate_only {
                let partitions = if partitions == -1 {
                    context.config().num_partitions()
                } else {
                    partitions
                };
                let factor = if replication_factor == -1 {
                    1
                } else {
                    replication_factor
                };
                context
                    .topics
                    .validate_new_topic(name.as_str(), partitions, factor, &configs)
                    .map(|()| (uuid::Uuid::nil(), partitions, configs.clone()))
            } else {
                context
                    .topics
                    .create(
                        name.as_str(),
                        partitions,
                        replication_factor,
                        configs.clone(),
                    )
                    .map(|t| (t.id, t.partition_count(), t.overrides.clone()))
            };
            match outcome {
                Ok((topic_id, partitions, overrides)) => {
                    let mut result = result
                        .with_topic_id(topic_id)
                        .with_num_partitions(partitions)
                        .with_replication_factor(1);
                    if version >= 5 {
                        let entries = describe_topic_configs(&context.config(), &overrides, None);
                        result.configs = Some(entries.into_iter().map(creatable_config).collect());
                    }
                    result
                }
                Err(error) => with_error(result, &error),
            }
        })
        .collect();
    CreateTopicsResponse::default().with_topics(topics)
}

/// In cluster mode the active controller places and creates each topic; the answer comes once
/// this broker's image holds it.
async fn create_in_cluster(
    context: &Arc<BrokerContext>,
    cluster: &Arc<ClusterMember>,
    request: CreateTopicsRequest,
    refused: &Refused,
) -> CreateTopicsResponse {
    let mut results = Vec::with_capacity(request.topics.len());
    let mut seen = std::collections::HashSet::new();
    for topic in request.topics {
        if let Some(refusal) = refused_early(&topic.name, &mut seen, refused) {
            results.push(refusal);
            continue;
        }
        let result = CreatableTopicResult::default().with_name(topic.name.clone());
        match create_one_in_cluster(context, cluster, &topic, request.validate_only).await {
            Ok((topic_id, partitions, replication_factor)) => results.push(
                result
                    .with_topic_id(topic_id)
                    .with_num_partitions(partitions)
                    .with_replication_factor(replication_factor),
            ),
            Err(error) => results.push(with_error(result, &error)),
        }
    }
    CreateTopicsResponse::default().with_topics(results)
}

async fn create_one_in_cluster(
    context: &Arc<BrokerContext>,
    cluster: &Arc<ClusterMember>,
    topic: &CreatableTopic,
    validate_only: bool,
) -> Result<(uuid::Uuid, i32, i16), BrokerError> {
    crate::topic::validate_topic_name(topic.name.as_str())?;
    let mut configs = BTreeMap::new();
    for config in &topic.configs {
        if let Some(value) = &config.value {
            crate::config::validate_topic_config(config.name.as_str(), value.as_str())?;
            configs.insert(config.name.to_string(), value.to_string());
        }
    }
    let assignments = if topic.assignments.is_empty() {
        None
    } else {
        check_assignments_alone(topic)?;
        let mut sorted: Vec<_> = topic.assignments.iter().collect();
        sorted.sort_by_key(|a| a.partition_index);
        Some(
            sorted
                .iter()
                .map(|a| a.broker_ids.iter().map(|id| id.0).collect())
                .collect::<Vec<Vec<i32>>>(),
        )
    };
    let partitions = match topic.num_partitions {
        -1 => context.config().num_partitions(),
        n => n,
    };
    let replication_factor =
        (topic.replication_factor != -1).then_some(topic.replication_factor as i32);
    if validate_only {
        let factor = replication_factor
            .unwrap_or(ControllerConfig::from_config(&context.config()).default_replication_factor);
        return Ok((uuid::Uuid::nil(), partitions, factor as i16));
    }
    cluster
        .request(ControllerRequest::CreateTopic {
            name: topic.name.to_string(),
            partitions,
            replication_factor,
            assignments,
            configs,
        })
        .await?;
    let image = cluster.image().image;
    let created =
        image
            .topic_by_name(topic.name.as_str())
            .ok_or_else(|| BrokerError::UnknownTopic {
                topic: topic.name.to_string(),
            })?;
    let factor = created.partitions.first().map_or(0, |p| p.replicas.len());
    Ok((
        created.topic_id,
        created.partitions.len() as i32,
        factor as i16,
    ))
}

/// With explicit replica assignments, the partition count is their number; each must name only
/// this broker.
fn explicit_assignment(topic: &CreatableTopic) -> Result<Option<i32>, BrokerError> {
    if topic.assignments.is_empty() {
        return Ok(None);
    }
    check_assignments_alone(topic)?;
    for assignment in &topic.assignments {
        if assignment.broker_ids.len() != 1 {
            return Err(BrokerError::InvalidReplicationFactor {
                factor: assignment.broker_ids.len() as i32,
                reason: "this broker runs alone: only 1 replica is possible".into(),
            });
        }
    }
    Ok(Some(topic.assignments.len() as i32))
}

/// Explicit replica assignments leave the partition count and replication factor unset (-1).
fn check_assignments_alone(topic: &CreatableTopic) -> Result<(), BrokerError> {
    if topic.num_partitions != -1 || topic.replication_factor != -1 {
        return Err(BrokerError::InvalidRequest(
            "both replica assignments and partitions/replication factor were given".into(),
        ));
    }
    Ok(())
}

/// The answer for a topic refused before anything else about it is looked at: named a second
/// time in the request (`seen` holds the names before it), or not the principal's to create.
fn refused_early(
    name: &TopicName,
    seen: &mut std::collections::HashSet<String>,
    refused: &Refused,
) -> Option<CreatableTopicResult> {
    let result = CreatableTopicResult::default().with_name(name.clone());
    if !seen.insert(name.to_string()) {
        return Some(with_error(result, &listed_twice(name)));
    }
    if refused.contains(name.as_str()) {
        return Some(not_authorized(result));
    }
    None
}

fn listed_twice(name: &str) -> BrokerError {
    BrokerError::InvalidRequest(format!("topic '{name}' appears more than once"))
}

/// The topics the principal may not create.
type Refused = std::collections::HashSet<String>;

fn not_authorized(result: CreatableTopicResult) -> CreatableTopicResult {
    result
        .with_error_code(kafka_protocol::ResponseError::TopicAuthorizationFailed.code())
        .with_error_message(Some(StrBytes::from_static_str("Authorization failed.")))
}

fn with_error(result: CreatableTopicResult, error: &BrokerError) -> CreatableTopicResult {
    result
        .with_error_code(error_for(error).code())
        .with_error_message(Some(StrBytes::from_string(error.to_string())))
        .with_num_partitions(-1)
        .with_replication_factor(-1)
}

fn creatable_config(entry: ConfigEntry) -> CreatableTopicConfigs {
    CreatableTopicConfigs::default()
        .with_name(StrBytes::from_string(entry.name))
        .with_value(entry.value.map(StrBytes::from_string))
        .with_config_source(entry.source)
        .with_read_only(entry.read_only)
}
