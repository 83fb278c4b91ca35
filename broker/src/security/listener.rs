//! What one SASL listener accepts, from Kafka's properties:
//! `[listener.name.<listener>.]sasl.enabled.mechanisms`, each mechanism's JAAS entry
//! `listener.name.<listener>.<mechanism>.sasl.jaas.config` (PLAIN's users), OAUTHBEARER's
//! validator (`super::oauth`), and
//! `[listener.name.<listener>.<mechanism>.]connections.max.reauth.ms` (KIP-368).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::jaas::{self, PLAIN_LOGIN_MODULE};
use super::oauth::TokenValidator;
use super::sasl::Mechanism;
use crate::config::{BrokerConfig, ConfigError};

/// A SASL listener's mechanisms and what they check against.
#[derive(Debug, Clone)]
pub struct SaslListener {
    /// Enabled mechanisms, in the order configured (SaslHandshake lists them so).
    pub mechanisms: Vec<Mechanism>,
    /// PLAIN's users and passwords (PlainLoginModule's `user_<name>` options).
    pub plain_users: BTreeMap<String, String>,
    /// OAUTHBEARER's token validator, when the mechanism is enabled (its keys loaded by
    /// `TokenValidator::load` before the listener serves).
    pub oauth: Option<Arc<TokenValidator>>,
    /// `connections.max.reauth.ms` per mechanism; 0: sessions do not expire.
    max_reauth_ms: BTreeMap<Mechanism, i64>,
    /// `sasl.server.max.receive.size`: the largest frame taken before authentication.
    pub max_receive_bytes: usize,
}

impl SaslListener {
    pub fn from_config(config: &BrokerConfig, listener: &str) -> Result<SaslListener, ConfigError> {
        let prefix = format!("listener.name.{}.", listener.to_ascii_lowercase());
        let enabled_name = format!("{prefix}sasl.enabled.mechanisms");
        let enabled = config
            .listener_property(listener, "sasl.enabled.mechanisms")
            .unwrap_or_default();
        let mut mechanisms = Vec::new();
        for name in enabled.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let mechanism = Mechanism::from_name(name).ok_or_else(|| ConfigError::Unsupported {
                name: enabled_name.clone(),
                reason: format!(
                    "SASL mechanism {name} is not served by Weir (PLAIN, SCRAM-SHA-256, \
                     SCRAM-SHA-512 and OAUTHBEARER are; GSSAPI, Kafka's default, is not)"
                ),
            })?;
            if !mechanisms.contains(&mechanism) {
                mechanisms.push(mechanism);
            }
        }
        if mechanisms.is_empty() {
            return Err(ConfigError::InvalidValue {
                name: enabled_name,
                value: enabled,
                reason: format!("listener {listener} is a SASL listener without a mechanism"),
            });
        }
        let mut plain_users = BTreeMap::new();
        let mut max_reauth_ms = BTreeMap::new();
        for &mechanism in &mechanisms {
            let mechanism_prefix = format!("{prefix}{}.", mechanism.name().to_ascii_lowercase());
            let jaas_name = format!("{mechanism_prefix}sasl.jaas.config");
            let modules = match config.explicit(&jaas_name) {
                Some(text) => jaas::parse(text).map_err(|e| ConfigError::InvalidValue {
                    name: jaas_name.clone(),
                    value: "[hidden]".into(),
                    reason: e.to_string(),
                })?,
                None => Vec::new(),
            };
            if mechanism == Mechanism::Plain {
                plain_users = modules
                    .iter()
                    .filter(|module| module.class == PLAIN_LOGIN_MODULE)
                    .flat_map(|module| module.plain_users())
                    .collect();
                if plain_users.is_empty() {
                    return Err(ConfigError::InvalidValue {
                        name: jaas_name,
                        value: "[unset]".into(),
                        reason: format!(
                            "PLAIN is enabled on listener {listener} but no PlainLoginModule \
                             user_<name>=\"<password>\" entry names a user"
                        ),
                    });
                }
            }
            let reauth = config
                .explicit(&format!("{mechanism_prefix}connections.max.reauth.ms"))
                .map(str::to_string)
                .or_else(|| config.listener_property(listener, "connections.max.reauth.ms"))
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0);
            max_reauth_ms.insert(mechanism, reauth);
        }
        let oauth = match mechanisms.contains(&Mechanism::OAuthBearer) {
            true => Some(Arc::new(TokenValidator::from_config(config, listener)?)),
            false => None,
        };
        let max_receive_bytes = config
            .listener_property(listener, "sasl.server.max.receive.size")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(524_288);
        Ok(SaslListener {
            mechanisms,
            plain_users,
            oauth,
            max_reauth_ms,
            max_receive_bytes,
        })
    }

    /// The mechanisms' names, as SaslHandshake lists them.
    pub fn mechanism_names(&self) -> Vec<&'static str> {
        self.mechanisms.iter().map(|m| m.name()).collect()
    }

    /// `connections.max.reauth.ms` for a mechanism (0: no expiry).
    pub fn max_reauth_ms(&self, mechanism: Mechanism) -> i64 {
        self.max_reauth_ms.get(&mechanism).copied().unwrap_or(0)
    }
}
