//! What DescribeConfigs (and CreateTopics v5+) report of a resource: each config's value, its
//! source and its synonyms, by Kafka's rules (`ConfigHelper`): a synonym list runs over the
//! layers most specific first and starts at the first entry naming the config's own broker
//! property; the source is the first synonym's, DEFAULT_CONFIG without any.

use std::collections::BTreeMap;

use crate::config::{
    broker_property_defs, is_dynamic, topic_config_defs, BrokerConfig, BrokerResource,
    ConfigSource, ConfigType,
};

pub const SOURCE_DYNAMIC_TOPIC_CONFIG: i8 = 1;

/// One described config value.
pub struct ConfigEntry {
    pub name: String,
    /// `None` for a broker property that is unset and has no default.
    pub value: Option<String>,
    pub source: i8,
    pub kind: ConfigType,
    pub read_only: bool,
    /// A secret: its value and synonyms are left out.
    pub sensitive: bool,
    /// (name, value, source), most specific first.
    pub synonyms: Vec<(String, String, i8)>,
}

/// Every topic config's effective value and where it comes from: the topic's override, else
/// its broker synonym's layers (Kafka's rule: the source is the first synonym's).
pub fn describe_topic_configs(
    broker: &BrokerConfig,
    overrides: &BTreeMap<String, String>,
    keys: Option<&[String]>,
) -> Vec<ConfigEntry> {
    topic_config_defs()
        .filter(|def| keys.is_none_or(|keys| keys.iter().any(|k| k == def.name)))
        .map(|def| {
            let mut synonyms: Vec<(String, String, i8)> = def
                .broker_synonym
                .map(|synonym| broker_synonyms(broker, synonym))
                .unwrap_or_default();
            let value = match overrides.get(def.name) {
                Some(value) => {
                    let topic_synonym = (
                        def.name.to_string(),
                        value.clone(),
                        SOURCE_DYNAMIC_TOPIC_CONFIG,
                    );
                    synonyms.insert(0, topic_synonym);
                    value.clone()
                }
                None => broker.topic_default(def),
            };
            ConfigEntry {
                name: def.name.to_string(),
                value: Some(value),
                source: first_source(&synonyms),
                kind: def.kind,
                read_only: false,
                sensitive: false,
                synonyms,
            }
        })
        .collect()
}

/// A broker property's synonyms as DescribeConfigs lists them.
fn broker_synonyms(broker: &BrokerConfig, name: &str) -> Vec<(String, String, i8)> {
    broker
        .synonyms(name)
        .into_iter()
        .map(|(name, value, source)| (name, value, source.code()))
        .collect()
}

/// Kafka's source of a described value: its first synonym's, DEFAULT_CONFIG without any.
fn first_source(synonyms: &[(String, String, i8)]) -> i8 {
    synonyms
        .first()
        .map_or(ConfigSource::Default.code(), |(_, _, source)| *source)
}

/// One broker's properties (every one Weir has, unset ones with a null value), or with
/// `ClusterDefault` only the cluster-wide dynamic defaults, as Kafka describes them.
pub(super) fn describe_broker_configs(
    broker: &BrokerConfig,
    resource: BrokerResource,
    keys: Option<&[String]>,
) -> Vec<ConfigEntry> {
    let wanted = |name: &str| keys.is_none_or(|keys| keys.iter().any(|k| k == name));
    if resource == BrokerResource::ClusterDefault {
        let source = ConfigSource::DynamicDefault.code();
        return broker_property_defs()
            .filter(|def| wanted(def.name))
            .filter_map(|def| {
                let value = broker.layer(def.name, ConfigSource::DynamicDefault)?;
                Some(ConfigEntry {
                    name: def.name.to_string(),
                    value: Some(value.to_string()),
                    source,
                    kind: def.kind,
                    read_only: !is_dynamic(def.name),
                    sensitive: false,
                    synonyms: vec![(def.name.to_string(), value.to_string(), source)],
                })
            })
            .collect();
    }
    broker_property_defs()
        .filter(|def| wanted(def.name))
        .map(|def| {
            let mut synonyms = broker_synonyms(broker, def.name);
            let source = first_source(&synonyms);
            let mut value = broker.lookup(def.name).map(|(value, _)| value.to_string());
            // Secrets (inline keys, passwords) are never shown, as Kafka hides PASSWORD configs.
            let sensitive = def.kind == ConfigType::Password;
            if sensitive {
                value = None;
                synonyms.clear();
            }
            ConfigEntry {
                name: def.name.to_string(),
                value,
                source,
                kind: def.kind,
                read_only: !is_dynamic(def.name),
                sensitive,
                synonyms,
            }
        })
        .collect()
}
