//! Who a quota is for, what may be set, and which quota applies to a connection.

use serde::{Deserialize, Serialize};

/// A name in a quota entity: a given user or client id, or the default for its type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EntityName {
    Default,
    Named(String),
}

/// Who a quota is for: a user, a client id, or a client id of a user (Kafka's
/// `/config/users/<user>/clients/<client-id>`). At least one part is set.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct QuotaEntity {
    pub user: Option<EntityName>,
    pub client_id: Option<EntityName>,
}

/// The quota types Weir enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum QuotaKey {
    /// Bytes per second of Produce requests.
    ProducerByteRate,
    /// Bytes per second of Fetch responses.
    ConsumerByteRate,
}

impl QuotaKey {
    pub fn name(self) -> &'static str {
        match self {
            QuotaKey::ProducerByteRate => "producer_byte_rate",
            QuotaKey::ConsumerByteRate => "consumer_byte_rate",
        }
    }

    /// The key of an AlterClientQuotas entry, or why it is refused.
    pub fn parse(name: &str) -> Result<QuotaKey, String> {
        match name {
            "producer_byte_rate" => Ok(QuotaKey::ProducerByteRate),
            "consumer_byte_rate" => Ok(QuotaKey::ConsumerByteRate),
            "request_percentage" | "controller_mutation_rate" => Err(format!(
                "{name} quotas are not enforced by Weir yet (producer_byte_rate and \
                 consumer_byte_rate are); refused rather than ignored"
            )),
            other => Err(format!("Unknown quota key: {other}")),
        }
    }
}

/// Kafka's entity types in a request.
pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";
pub const IP: &str = "ip";

impl QuotaEntity {
    /// The entity of a request's (entity type, name) components (a name of `None` is the
    /// type's default), or why Kafka would refuse it.
    pub fn from_components<'a>(
        components: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<QuotaEntity, String> {
        let mut entity = QuotaEntity {
            user: None,
            client_id: None,
        };
        for (entity_type, name) in components {
            let name = match name {
                Some(name) => EntityName::Named(name.to_string()),
                None => EntityName::Default,
            };
            let slot = match entity_type {
                USER => &mut entity.user,
                CLIENT_ID => &mut entity.client_id,
                IP => {
                    return Err(
                        "connection_creation_rate quotas per IP are not enforced by \
                                Weir yet; refused rather than ignored"
                            .into(),
                    )
                }
                other => return Err(format!("Unexpected entity type {other}")),
            };
            if slot.replace(name).is_some() {
                return Err(format!("Duplicate {entity_type} entity type"));
            }
        }
        if entity.user.is_none() && entity.client_id.is_none() {
            return Err("Invalid empty client quota entity".into());
        }
        Ok(entity)
    }

    /// (entity type, name: `None` for the default) of each part, user first.
    pub fn components(&self) -> Vec<(&'static str, Option<&str>)> {
        fn part(name: &EntityName) -> Option<&str> {
            match name {
                EntityName::Default => None,
                EntityName::Named(name) => Some(name.as_str()),
            }
        }
        let mut parts = Vec::new();
        if let Some(user) = &self.user {
            parts.push((USER, part(user)));
        }
        if let Some(client_id) = &self.client_id {
            parts.push((CLIENT_ID, part(client_id)));
        }
        parts
    }

    /// The entities whose quotas may apply to a connection of `user` with `client_id`, in
    /// Kafka's precedence (most specific first): the first that sets a key gives its quota.
    pub fn candidates(user: &str, client_id: &str) -> [QuotaEntity; 8] {
        let named = |name: &str| Some(EntityName::Named(name.to_string()));
        let both = |user, client_id| QuotaEntity { user, client_id };
        [
            both(named(user), named(client_id)),
            both(named(user), Some(EntityName::Default)),
            both(named(user), None),
            both(Some(EntityName::Default), named(client_id)),
            both(Some(EntityName::Default), Some(EntityName::Default)),
            both(Some(EntityName::Default), None),
            both(None, named(client_id)),
            both(None, Some(EntityName::Default)),
        ]
    }
}

/// Checks a quota value: a byte rate is a positive whole number of bytes per second.
pub fn check_value(key: QuotaKey, value: f64) -> Result<(), String> {
    if !(value.is_finite() && value > 0.0) {
        return Err(format!("{} must be positive, not {value}", key.name()));
    }
    if value.fract() != 0.0 {
        return Err(format!(
            "{} must be a whole number of bytes, not {value}",
            key.name()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_are_validated_as_kafka_does() {
        let entity = QuotaEntity::from_components([(USER, Some("alice")), (CLIENT_ID, None)]);
        assert_eq!(
            entity.unwrap().components(),
            [(USER, Some("alice")), (CLIENT_ID, None)]
        );
        assert!(QuotaEntity::from_components([]).is_err());
        assert!(QuotaEntity::from_components([(USER, None), (USER, Some("x"))]).is_err());
        let ip = QuotaEntity::from_components([(IP, Some("10.0.0.1"))]).unwrap_err();
        assert!(ip.contains("not enforced"), "{ip}");
        assert!(QuotaKey::parse("request_percentage").is_err());
        assert_eq!(
            QuotaKey::parse("producer_byte_rate"),
            Ok(QuotaKey::ProducerByteRate)
        );
        assert!(check_value(QuotaKey::ProducerByteRate, 1024.0).is_ok());
        assert!(check_value(QuotaKey::ProducerByteRate, 0.0).is_err());
        assert!(check_value(QuotaKey::ConsumerByteRate, 10.5).is_err());
    }

    #[test]
    fn the_most_specific_entity_comes_first() {
        let candidates = QuotaEntity::candidates("alice", "app");
        assert_eq!(
            candidates[0].components(),
            [(USER, Some("alice")), (CLIENT_ID, Some("app"))]
        );
        assert_eq!(candidates[2].components(), [(USER, Some("alice"))]);
        assert_eq!(candidates[5].components(), [(USER, None)]);
        assert_eq!(candidates[7].components(), [(CLIENT_ID, None)]);
    }
}
