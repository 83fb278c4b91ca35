//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs.
//!
//! Topics report every config Weir knows, defaults included, with the source of each value
//! (topic override, or the layers of its broker synonym: dynamic per broker, dynamic cluster
//! default, static, default) and, on request, its synonyms as Kafka lists them. A BROKER
//! resource is one broker by id (every property, read-only unless dynamic) or "" (the cluster
//! default: its dynamic configs only); its changes go through `crate::broker_configs`.
//! In a cluster a topic's overrides live in the metadata image: changes go to the controller
//! and every broker applies them to its replicas.
//!
//! `entries`: what is described of a resource (values, sources, synonyms); `incremental`:
//! IncrementalAlterConfigs' operations on a set of configs.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{
    alter_configs_response, incremental_alter_configs_response, AlterConfigsRequest,
    AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::broker_configs::{self, BrokerConfigSets};
use crate::cluster::quorum::rpc::ControllerRequest;
use crate::config::BrokerResource;
use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::handler::access::Access;
use crate::handler::errors::error_for;
use crate::security::acl::Operation;

mod entries;
mod incremental;

use entries::describe_broker_configs;
pub use entries::{describe_topic_configs, ConfigEntry, SOURCE_DYNAMIC_TOPIC_CONFIG};
use incremental::apply_incremental;

pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;
pub const RESOURCE_BROKER_LOGGER: i8 = 8;

/// Kafka's check of one config resource: `operation` on the topic, or on the cluster for a
/// broker (or broker logger); the refusal's code and message.
fn refusal(
    access: &Access,
    operation: Operation,
    resource_type: i8,
    name: &str,
) -> Option<(i16, Option<StrBytes>)> {
    let (allowed, error) = match resource_type {
        RESOURCE_TOPIC => (
            access.allows_topic(operation, name),
            ResponseError::TopicAuthorizationFailed,
        ),
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER => (
            access.allows_cluster(operation),
            ResponseError::ClusterAuthorizationFailed,
        ),
        _ => return None,
    };
    (!allowed).then(|| (error.code(), None))
}

pub fn describe(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let results = request
        .resources
        .into_iter()
        .map(|resource| {
            // As in Kafka, a null or empty key list means every config.
            let keys: Option<Vec<String>> = resource
                .configuration_keys
                .as_ref()
                .filter(|keys| !keys.is_empty())
                .map(|keys| keys.iter().map(|k| k.to_string()).collect());
            let result = DescribeConfigsResult::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            if let Some((code, message)) = refusal(
                access,
                Operation::DescribeConfigs,
                resource.resource_type,
                resource.resource_name.as_str(),
            ) {
                return result.with_error_code(code).with_error_message(message);
            }
            let entries = match resource.resource_type {
                RESOURCE_TOPIC => match topic_overrides(context, resource.resource_name.as_str()) {
                    Some(overrides) => {
                        describe_topic_configs(&context.config(), &overrides, keys.as_deref())
                    }
                    None => {
                        return result
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                            .with_error_message(Some(StrBytes::from_string(format!(
                                "unknown topic '{}'",
                                resource.resource_name.as_str()
                            ))));
                    }
                },
                RESOURCE_BROKER => {
                    let name = resource.resource_name.as_str();
                    let broker = match BrokerResource::parse(name) {
                        Ok(BrokerResource::Broker(id)) if id != context.node_id => Err(format!(
                            "Unexpected broker id, expected {} or empty string, but received \
                             {name}",
                            context.node_id
                        )),
                        Ok(broker) => Ok(broker),
                        Err(error) => Err(error.to_string()),
                    };
                    match broker {
                        Ok(broker) => {
                            describe_broker_configs(&context.config(), broker, keys.as_deref())
                        }
                        Err(message) => {
                            return result
                                .with_error_code(ResponseError::InvalidRequest.code())
                                .with_error_message(Some(StrBytes::from_string(message)));
                        }
                    }
                }
                other => {
                    return result
                        .with_error_code(ResponseError::InvalidRequest.code())
                        .with_error_message(Some(StrBytes::from_string(format!(
                            "resource type {other} is not supported"
                        ))));
                }
            };
            let configs = entries
                .into_iter()
                .map(|entry| {
                    let mut out = DescribeConfigsResourceResult::default()
                        .with_name(StrBytes::from_string(entry.name))
                        .with_value(entry.value.map(StrBytes::from_string))
                        .with_read_only(entry.read_only)
                        .with_is_sensitive(entry.sensitive)
                        .with_config_source(entry.source);
                    if request.include_synonyms {
                        out.synonyms = entry
                            .synonyms
                            .into_iter()
                            .map(|(name, value, source)| {
                                DescribeConfigsSynonym::default()
                                    .with_name(StrBytes::from_string(name))
                                    .with_value(Some(StrBytes::from_string(value)))
                                    .with_source(source)
                            })
                            .collect();
                    }
                    if version >= 3 {
                        out.config_type = entry.kind.describe_configs_type();
                    }
                    out
                })
                .collect();
            result.with_configs(configs)
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

/// AlterConfigs replaces a topic's whole set of overrides.
pub async fn alter(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.as_str();
        if let Some((code, message)) = refusal(
            access,
            Operation::AlterConfigs,
            resource.resource_type,
            name,
        ) {
            responses.push(
                alter_configs_response::AlterConfigsResourceResponse::default()
                    .with_resource_type(resource.resource_type)
                    .with_resource_name(resource.resource_name)
                    .with_error_code(code)
                    .with_error_message(message),
            );
            continue;
        }
        let overrides: BTreeMap<String, String> = resource
            .configs
            .iter()
            .filter_map(|c| {
                c.value
                    .as_ref()
                    .map(|v| (c.name.to_string(), v.to_string()))
            })
            .collect();
        let outcome = apply(
            context,
            resource.resource_type,
            resource.resource_name.as_str(),
            request.validate_only,
            |_| Ok(overrides.clone()),
        )
        .await;
        let (code, message) = outcome_codes(outcome);
        responses.push(
            alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name)
                .with_error_code(code)
                .with_error_message(message),
        );
    }
    AlterConfigsResponse::default().with_responses(responses)
}

/// IncrementalAlterConfigs sets, deletes, appends to or subtracts from single configs.
pub async fn incremental_alter(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let name = resource.resource_name.as_str();
        if let Some((code, message)) = refusal(
            access,
            Operation::AlterConfigs,
            resource.resource_type,
            name,
        ) {
            responses.push(
                incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                    .with_resource_type(resource.resource_type)
                    .with_resource_name(resource.resource_name)
                    .with_error_code(code)
                    .with_error_message(message),
            );
            continue;
        }
        let changes: Vec<(String, i8, Option<String>)> = resource
            .configs
            .iter()
            .map(|c| {
                (
                    c.name.to_string(),
                    c.config_operation,
                    c.value.as_ref().map(|v| v.to_string()),
                )
            })
            .collect();
        let outcome = apply(
            context,
            resource.resource_type,
            resource.resource_name.as_str(),
            request.validate_only,
            |current| apply_incremental(current, &changes),
        )
        .await;
        let (code, message) = outcome_codes(outcome);
        responses.push(
            incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name)
                .with_error_code(code)
                .with_error_message(message),
        );
    }
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

async fn apply(
    context: &Arc<BrokerContext>,
    resource_type: i8,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, BrokerError>,
) -> Result<(), BrokerError> {
    match resource_type {
        RESOURCE_TOPIC => {
            let unknown = || BrokerError::UnknownTopic {
                topic: name.to_string(),
            };
            let Some(cluster) = &context.cluster else {
                let topic = context.topics.get(name).ok_or_else(unknown)?;
                let overrides = change(&topic.overrides)?;
                return context.topics.set_overrides(name, overrides, validate_only);
            };
            // In a cluster the controller holds the overrides; every broker applies them.
            let current = topic_overrides(context, name).ok_or_else(unknown)?;
            let overrides = change(&current)?;
            for (key, value) in &overrides {
                crate::config::validate_topic_config(key, value)?;
            }
            if validate_only {
                return Ok(());
            }
            let request = ControllerRequest::AlterTopicConfigs {
                name: name.to_string(),
                configs: overrides,
            };
            cluster.request(request).await.map(|_| ())
        }
        RESOURCE_BROKER => {
            let resource = BrokerResource::parse(name).map_err(BrokerError::BrokerConfig)?;
            alter_broker_configs(context, resource, validate_only, change).await
        }
        other => Err(BrokerError::InvalidRequest(format!(
            "resource type {other} is not supported"
        ))),
    }
}

/// Changes a BROKER resource's dynamic configs: alone in the broker's own store, in a cluster
/// through the controller (every broker applies them from its image).
async fn alter_broker_configs(
    context: &Arc<BrokerContext>,
    resource: BrokerResource,
    validate_only: bool,
    change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, BrokerError>,
) -> Result<(), BrokerError> {
    let check = |sets: &BrokerConfigSets| {
        broker_configs::check_sets(&context.live_config, context.node_id, resource, sets)
    };
    // Every refusal of a broker resource's change is INVALID_REQUEST, as in Kafka.
    let change = |current: &BTreeMap<String, String>| {
        change(current).map_err(|error| match error {
            BrokerError::Config(error) => BrokerError::BrokerConfig(error),
            other => other,
        })
    };
    let Some(cluster) = &context.cluster else {
        let sets = context
            .broker_configs
            .replace(resource, change, check, validate_only)?;
        if !validate_only {
            broker_configs::apply(
                &context.live_config,
                &context.topics,
                &sets,
                context.node_id,
            );
        }
        return Ok(());
    };
    let mut sets = cluster.image().image.broker_configs.clone();
    let current = sets.get(&resource.name()).cloned().unwrap_or_default();
    let configs = change(&current)?;
    broker_configs::set_resource(&mut sets, resource, configs.clone());
    check(&sets)?;
    if validate_only {
        return Ok(());
    }
    let request = ControllerRequest::AlterBrokerConfigs {
        resource: resource.name(),
        configs,
    };
    cluster.request(request).await.map(|_| ())
}

/// A topic's config overrides: the cluster's (this broker may host none of its replicas), or
/// alone the local topic's.
fn topic_overrides(context: &BrokerContext, name: &str) -> Option<BTreeMap<String, String>> {
    match &context.cluster {
        Some(cluster) => cluster
            .image()
            .image
            .topic_by_name(name)
            .map(|topic| topic.configs.clone()),
        None => context
            .topics
            .get(name)
            .map(|topic| topic.overrides.clone()),
    }
}

fn outcome_codes(outcome: Result<(), BrokerError>) -> (i16, Option<StrBytes>) {
    match outcome {
        Ok(()) => (0, None),
        Err(error) => {
            tracing::info!(%error, "config change refused");
            (
                error_for(&error).code(),
                Some(StrBytes::from_string(error.to_string())),
            )
        }
    }
}
