//! Broker and topic configuration, by Kafka's property names.
//!
//! Broker properties come from `--config FILE` (YAML map) and `--set name=value`; a name that is
//! not in [`BROKER_PROPERTIES`] is an error at start-up. Topic configs ([`TOPIC_CONFIGS`]) take
//! their defaults from the broker property that Kafka names as their synonym
//! (`retention.ms` ← `log.retention.ms` ← `log.retention.hours`), and per-topic overrides.

//!
//! - `properties`: the tables — every broker property and topic config Weir accepts, with
//!   Kafka's defaults — and value validation.
//! - `broker`: [`BrokerConfig`], the broker's configuration with typed accessors; subsystems
//!   build their own settings from it (`GroupLimits::from_config`, …).
//! - `topic`: [`LogConfig`], the effective configuration of one topic's logs.
//! - `dynamic`: which properties may change at run time, the layers a value is looked up in
//!   ([`ConfigSource`]) and the validation of a dynamic change.
//! - `listeners`: the named client listeners (`listeners`, `advertised.listeners`,
//!   `listener.security.protocol.map`) and their security protocols.
//! - `live`: [`LiveConfig`], the configuration a running broker reads: swapped whole when a
//!   dynamic config changes, watched by the subsystems that hold settings derived from it.

mod broker;
mod dynamic;
mod error;
#[cfg(test)]
mod kafka_names_tests;
mod kafka_only;
mod listeners;
mod live;
mod properties;
#[cfg(test)]
mod read_tests;
#[cfg(test)]
mod tests;
mod topic;

pub use broker::{
    parse_connection_overrides, parse_process_roles, parse_quorum_voters, BrokerConfig, QuorumRole,
};
pub use dynamic::{
    is_dynamic, validate_combined, validate_dynamic, BrokerResource, ConfigSource, DynamicConfigs,
};
pub use error::ConfigError;
pub use kafka_only::{kafka_only_broker, kafka_only_topic, Missing};
pub use listeners::{Listener, SecurityProtocol};
pub use live::LiveConfig;
pub use properties::{
    broker_property_defs, topic_config_def, topic_config_defs, validate_topic_config, ConfigType,
    PropertyDef, TopicConfigDef, ACCEPTED_WITHOUT_EFFECT, BROKER_PROPERTIES,
    MAX_DECOMPRESSED_BATCH_BYTES, TOPIC_CONFIGS,
};
pub use topic::{LogConfig, TopicCompression};
