//! IncrementalAlterConfigs' operations on one resource's set of configs (KIP-339).

use std::collections::BTreeMap;

use crate::config::{broker_property_defs, ConfigError, ConfigType};
use crate::error::BrokerError;

const OPERATION_SET: i8 = 0;
const OPERATION_DELETE: i8 = 1;
const OPERATION_APPEND: i8 = 2;
const OPERATION_SUBTRACT: i8 = 3;

/// `current` with `changes` (name, operation, value) applied in order; a list's APPEND or
/// SUBTRACT starts from its default when the set has no value for it.
pub(super) fn apply_incremental(
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
                let kind = crate::config::topic_config_def(name)
                    .map(|def| def.kind)
                    .or_else(|| {
                        let mut broker = broker_property_defs();
                        broker.find(|def| def.name == name).map(|def| def.kind)
                    });
                let is_list = kind == Some(ConfigType::List);
                if !is_list {
                    return Err(invalid("APPEND and SUBTRACT apply to list configs only"));
                }
                let value = value.clone().ok_or_else(|| invalid("a value is needed"))?;
                // Unset, the list is its default (KIP-339, as Kafka does).
                let existing = next
                    .get(name)
                    .cloned()
                    .or_else(|| list_default(name))
                    .unwrap_or_default();
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

/// The default of a list config, topic or broker.
fn list_default(name: &str) -> Option<String> {
    let topic = crate::config::topic_config_def(name).map(|def| def.default);
    let broker = || {
        let mut broker = broker_property_defs();
        broker
            .find(|def| def.name == name)
            .and_then(|def| def.default)
    };
    topic.or_else(broker).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(name: &str, operation: i8, value: Option<&str>) -> (String, i8, Option<String>) {
        (name.to_string(), operation, value.map(str::to_string))
    }

    #[test]
    fn list_operations_on_an_unset_config_start_from_its_default() {
        let unset = BTreeMap::new();
        let topic = apply_incremental(
            &unset,
            &[change("cleanup.policy", OPERATION_APPEND, Some("compact"))],
        )
        .unwrap();
        assert_eq!(topic["cleanup.policy"], "delete,compact");
        let broker = apply_incremental(
            &unset,
            &[change(
                "log.cleanup.policy",
                OPERATION_SUBTRACT,
                Some("delete"),
            )],
        )
        .unwrap();
        assert_eq!(broker["log.cleanup.policy"], "");
        let refused = apply_incremental(
            &unset,
            &[change("retention.ms", OPERATION_APPEND, Some("1"))],
        );
        assert!(refused.is_err(), "APPEND to a config that is not a list");
        let set = apply_incremental(
            &topic,
            &[
                change("cleanup.policy", OPERATION_DELETE, None),
                change("retention.ms", OPERATION_SET, Some("5")),
            ],
        )
        .unwrap();
        assert_eq!(set, BTreeMap::from([("retention.ms".into(), "5".into())]));
    }
}
