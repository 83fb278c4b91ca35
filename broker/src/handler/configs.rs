//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs.
//!
//! Topics report every config Weir knows, defaults included, with the source of each value
//! (topic override, static broker property, or default) and, on request, its synonyms.
//! Broker properties are reported read-only: dynamic broker configs are not supported.
//! In a cluster a topic's overrides live in the metadata image: changes go to the controller
//! and every broker applies them to its replicas.

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

use crate::cluster::quorum::rpc::ControllerRequest;
use crate::config::ConfigError;
use crate::config::{BrokerConfig, ConfigType, BROKER_PROPERTIES, TOPIC_CONFIGS};
use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::handler::errors::error_for;

pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;

pub const SOURCE_DYNAMIC_TOPIC_CONFIG: i8 = 1;
pub const SOURCE_STATIC_BROKER_CONFIG: i8 = 4;
pub const SOURCE_DEFAULT_CONFIG: i8 = 5;

const OPERATION_SET: i8 = 0;
const OPERATION_DELETE: i8 = 1;
const OPERATION_APPEND: i8 = 2;
const OPERATION_SUBTRACT: i8 = 3;

/// One described config value.
pub struct ConfigEntry {
    pub name: String,
    pub value: String,
    pub source: i8,
    pub kind: ConfigType,
    /// (name, value, source), most specific first.
    pub synonyms: Vec<(String, String, i8)>,
}

/// Every topic config's effective value and where it comes from.
pub fn describe_topic_configs(
    broker: &BrokerConfig,
    overrides: &BTreeMap<String, String>,
    keys: Option<&[String]>,
) -> Vec<ConfigEntry> {
    TOPIC_CONFIGS
        .iter()
        .filter(|def| keys.is_none_or(|keys| keys.iter().any(|k| k == def.name)))
        .map(|def| {
            let (default_value, explicit) = broker.topic_default(def);
            let default_source = if explicit {
                SOURCE_STATIC_BROKER_CONFIG
            } else {
                SOURCE_DEFAULT_CONFIG
            };
            let mut synonyms = Vec::new();
            if let Some(value) = overrides.get(def.name) {
                synonyms.push((
                    def.name.to_string(),
                    value.clone(),
                    SOURCE_DYNAMIC_TOPIC_CONFIG,
                ));
            }
            if explicit {
                if let Some(synonym) = def.broker_synonym {
                    synonyms.push((
                        synonym.to_string(),
                        default_value.clone(),
                        SOURCE_STATIC_BROKER_CONFIG,
                    ));
                }
            }
            synonyms.push((
                def.broker_synonym.unwrap_or(def.name).to_string(),
                def.default.to_string(),
                SOURCE_DEFAULT_CONFIG,
            ));
            let (value, source) = match overrides.get(def.name) {
                Some(value) => (value.clone(), SOURCE_DYNAMIC_TOPIC_CONFIG),
                None => (default_value, default_source),
            };
            ConfigEntry {
                name: def.name.to_string(),
                value,
                source,
                kind: def.kind,
                synonyms,
            }
        })
        .collect()
}

fn describe_broker_configs(broker: &BrokerConfig, keys: Option<&[String]>) -> Vec<ConfigEntry> {
    BROKER_PROPERTIES
        .iter()
        .filter(|def| keys.is_none_or(|keys| keys.iter().any(|k| k == def.name)))
        .filter_map(|def| {
            let (value, source) = match broker.explicit(def.name) {
                Some(value) => (value.to_string(), SOURCE_STATIC_BROKER_CONFIG),
                None => (def.default?.to_string(), SOURCE_DEFAULT_CONFIG),
            };
            Some(ConfigEntry {
                name: def.name.to_string(),
                synonyms: vec![(def.name.to_string(), value.clone(), source)],
                value,
                source,
                kind: def.kind,
            })
        })
        .collect()
}

pub fn describe(
    context: &Arc<BrokerContext>,
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
            let entries = match resource.resource_type {
                RESOURCE_TOPIC => match topic_overrides(context, resource.resource_name.as_str()) {
                    Some(overrides) => {
                        describe_topic_configs(&context.config, &overrides, keys.as_deref())
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
                    if !name.is_empty() && name != context.node_id.to_string() {
                        return result
                            .with_error_code(ResponseError::InvalidRequest.code())
                            .with_error_message(Some(StrBytes::from_string(format!(
                                "unknown broker '{name}'"
                            ))));
                    }
                    describe_broker_configs(&context.config, keys.as_deref())
                }
                other => {
                    return result
                        .with_error_code(ResponseError::InvalidRequest.code())
                        .with_error_message(Some(StrBytes::from_string(format!(
                            "resource type {other} is not supported"
                        ))));
                }
            };
            let read_only = resource.resource_type == RESOURCE_BROKER;
            let configs = entries
                .into_iter()
                .map(|entry| {
                    let mut out = DescribeConfigsResourceResult::default()
                        .with_name(StrBytes::from_string(entry.name))
                        .with_value(Some(StrBytes::from_string(entry.value)))
                        .with_read_only(read_only)
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
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
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
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
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

fn apply_incremental(
    current: &BTreeMap<String, String>,
    changes: &[(String, i8, Option<String>)],
) -> Result<BTreeMap<String, String>, BrokerError> {
    let mut next = current.clone();
    for (name, operation, value) in changes {
        let invalid = |reason: &str| {
            BrokerError::Config(ConfigError::InvalidValue {
                name: name.clone(),
                value: value.clone().unwrap_or_default(),
                reason: reason.to_string(),
            })
        };
        match *operation {
            OPERATION_SET => {
                let value = value.clone().ok_or_else(|| invalid("SET needs a value"))?;
                next.insert(name.clone(), value);
            }
            OPERATION_DELETE => {
                next.remove(name);
            }
            OPERATION_APPEND | OPERATION_SUBTRACT => {
                let is_list = crate::config::topic_config_def(name)
                    .is_some_and(|d| d.kind == ConfigType::List);
                if !is_list {
                    return Err(invalid("APPEND and SUBTRACT apply to list configs only"));
                }
                let value = value.clone().ok_or_else(|| invalid("a value is needed"))?;
                let existing = next.get(name).cloned().unwrap_or_default();
                let mut items: Vec<String> = existing
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    if *operation == OPERATION_APPEND {
                        if !items.iter().any(|i| i == item) {
                            items.push(item.to_string());
                        }
                    } else {
                        items.retain(|i| i != item);
                    }
                }
                next.insert(name.clone(), items.join(","));
            }
            other => return Err(invalid(&format!("unknown operation {other}"))),
        }
    }
    Ok(next)
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
        RESOURCE_BROKER => Err(BrokerError::Config(ConfigError::Unsupported {
            name: format!("broker {name}"),
            reason: "broker properties are static: set them with --set or --config and restart"
                .into(),
        })),
        other => Err(BrokerError::InvalidRequest(format!(
            "resource type {other} is not supported"
        ))),
    }
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
