//! Dynamic broker configs: the properties that AlterConfigs and IncrementalAlterConfigs may
//! change at run time on a BROKER resource (one broker, or the cluster-wide default named ""),
//! as `kafka-configs.sh --entity-type brokers [--entity-default] --alter` does.
//!
//! A property's value is looked up in four layers, most specific first, with Kafka's
//! DescribeConfigs sources: this broker's dynamic value (DYNAMIC_BROKER_CONFIG), the cluster's
//! dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG), the static value from `--set`/`--config`
//! (STATIC_BROKER_CONFIG) and the table's default (DEFAULT_CONFIG).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::broker::{parse_connection_overrides, BrokerConfig};
use super::properties::{broker_property_def, validate_value};
use super::ConfigError;

/// The properties Kafka 4.4 reports as not read-only (measured with DescribeConfigs on a
/// broker) among those Weir has, and Weir's `log.flush.on.ack` (the synonym of a topic config,
/// as all of Kafka's dynamic log configs are). Every other property is static.
const DYNAMIC_PROPERTIES: &[&str] = &[
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.type",
    "compression.zstd.level",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleanup.policy",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.flush.on.ack",
    "log.index.interval.bytes",
    "log.message.timestamp.type",
    "log.retention.bytes",
    "log.retention.ms",
    "log.message.timestamp.after.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.roll.ms",
    "log.segment.bytes",
    "log.segment.delete.delay.ms",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "message.max.bytes",
    "min.insync.replicas",
    "producer.id.expiration.ms",
    "unclean.leader.election.enable",
];

/// Whether AlterConfigs may change `name` on a running broker.
pub fn is_dynamic(name: &str) -> bool {
    DYNAMIC_PROPERTIES.contains(&name)
        || super::kafka_only::kafka_only_broker(name).is_some_and(|only| only.dynamic)
}

/// Where a property's value comes from, with Kafka's DescribeConfigs source codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConfigSource {
    DynamicBroker = 2,
    DynamicDefault = 3,
    Static = 4,
    Default = 5,
}

impl ConfigSource {
    /// The layers, most specific first.
    pub const LAYERS: [ConfigSource; 4] = [
        ConfigSource::DynamicBroker,
        ConfigSource::DynamicDefault,
        ConfigSource::Static,
        ConfigSource::Default,
    ];

    pub fn code(self) -> i8 {
        self as i8
    }
}

/// The dynamic configs that apply to one broker: its own and the cluster's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicConfigs {
    pub broker: BTreeMap<String, String>,
    pub cluster_default: BTreeMap<String, String>,
}

/// A BROKER config resource: the cluster-wide default (named "") or one broker by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BrokerResource {
    ClusterDefault,
    Broker(i32),
}

impl BrokerResource {
    /// Parses a resource name as Kafka does: "" or a broker id.
    pub fn parse(name: &str) -> Result<Self, ConfigError> {
        if name.is_empty() {
            return Ok(BrokerResource::ClusterDefault);
        }
        match name.parse::<i32>() {
            Ok(id) if id >= 0 => Ok(BrokerResource::Broker(id)),
            _ => Err(ConfigError::InvalidValue {
                name: "broker resource".into(),
                value: name.to_string(),
                reason: "a broker id is a non-negative integer (or \"\" for the cluster default)"
                    .into(),
            }),
        }
    }

    /// The resource name: "" or the broker id.
    pub fn name(self) -> String {
        match self {
            BrokerResource::ClusterDefault => String::new(),
            BrokerResource::Broker(id) => id.to_string(),
        }
    }
}

/// Checks a whole set of dynamic configs for one resource: every name a dynamic property (static
/// ones are named together, as Kafka does), every value valid for its property.
pub fn validate_dynamic(configs: &BTreeMap<String, String>) -> Result<(), ConfigError> {
    if let Some(name) = configs.keys().find(|n| broker_property_def(n).is_none()) {
        return Err(ConfigError::Unknown { name: name.clone() });
    }
    let static_names: Vec<String> = configs.keys().filter(|n| !is_dynamic(n)).cloned().collect();
    if !static_names.is_empty() {
        return Err(ConfigError::NotDynamic {
            names: static_names,
        });
    }
    for (name, value) in configs {
        let def =
            broker_property_def(name).ok_or_else(|| ConfigError::Unknown { name: name.clone() })?;
        validate_value(name, value, def.kind, def.min, def.choices)?;
        super::kafka_only::check_broker_value(name, value)?;
        if name == "max.connections.per.ip.overrides" {
            parse_connection_overrides(value)?;
        }
    }
    Ok(())
}

/// Checks what a broker would run with: the rules that tie properties together.
pub fn validate_combined(config: &BrokerConfig) -> Result<(), ConfigError> {
    config.max_connections_per_ip().map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dynamic_property_is_a_broker_property() {
        for name in DYNAMIC_PROPERTIES {
            assert!(
                broker_property_def(name).is_some(),
                "{name} is not a property"
            );
        }
    }
}
