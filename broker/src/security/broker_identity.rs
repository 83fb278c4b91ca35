//! How this broker secures its own connections to other brokers (replica fetches, transaction
//! markers) and to controllers, from Kafka's broker properties, as a Kafka broker does:
//!
//! - TLS when the listener is SSL or SASL_SSL: the listener's keystore (`ssl.keystore.*`) is
//!   this broker's client certificate, its truststore (`ssl.truststore.*`; the system's store
//!   when unset) the CAs the peer's certificate must chain to, and
//!   `ssl.endpoint.identification.algorithm` (`https`, Kafka's default: the certificate must
//!   name the host; empty: the chain alone) — each also as `listener.name.<listener>.…`;
//! - SASL on SASL_PLAINTEXT and SASL_SSL: `sasl.mechanism.inter.broker.protocol` (PLAIN,
//!   SCRAM-SHA-256, SCRAM-SHA-512), logging in with the `username` and `password` options of
//!   that mechanism's `listener.name.<listener>.<mechanism>.sasl.jaas.config`, as Kafka's
//!   login modules do.
//!
//! The files are read again for each new connection ([`BrokerIdentity::client_security`]), so
//! certificates rotated on disk are used from the next connection on; [`BrokerIdentity::check`]
//! reads them once at start-up so a bad configuration stops the broker with the reason.

use crate::config::{BrokerConfig, ConfigError, SecurityProtocol};
use weir_wire::{ClientSecurity, Mechanism, SaslLogin, SecurityConfigError};

use super::jaas;
use super::tls::TlsSettings;

/// What this broker presents when it connects on one listener.
#[derive(Debug, Clone, Default)]
pub struct BrokerIdentity {
    /// The listener's TLS files and whether the peer's host name is checked; `None`: no TLS.
    tls: Option<(TlsSettings, bool)>,
    sasl: Option<SaslLogin>,
}

fn invalid(name: String, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        name,
        value: value.to_string(),
        reason: reason.into(),
    }
}

impl BrokerIdentity {
    /// PLAINTEXT: neither TLS nor SASL.
    pub fn plaintext() -> BrokerIdentity {
        BrokerIdentity::default()
    }

    /// The identity for connections to `listener` of other brokers, secured by `protocol`.
    pub fn for_listener(
        config: &BrokerConfig,
        listener: &str,
        protocol: SecurityProtocol,
    ) -> Result<BrokerIdentity, ConfigError> {
        let tls = match protocol.uses_tls() {
            false => None,
            true => {
                let settings = TlsSettings::from_config(config, listener)?;
                let algorithm = config
                    .listener_property(listener, "ssl.endpoint.identification.algorithm")
                    .unwrap_or_else(|| "https".into());
                let check_host = match algorithm.trim().to_ascii_lowercase().as_str() {
                    "https" => true,
                    "" => false,
                    other => {
                        return Err(invalid(
                            "ssl.endpoint.identification.algorithm".into(),
                            other,
                            "expected https (check the host name) or empty (do not)",
                        ))
                    }
                };
                Some((settings, check_host))
            }
        };
        let sasl = match protocol {
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => {
                Some(inter_broker_login(config, listener)?)
            }
            SecurityProtocol::Plaintext | SecurityProtocol::Ssl => None,
        };
        let identity = BrokerIdentity { tls, sasl };
        identity.check()?;
        Ok(identity)
    }

    pub fn uses_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The client security for one new connection, with the files as they are now.
    pub fn client_security(&self) -> Result<ClientSecurity, SecurityConfigError> {
        let Some((settings, check_host)) = &self.tls else {
            return Ok(ClientSecurity::plaintext().with_sasl(self.sasl.clone()));
        };
        let as_client_error = |error: ConfigError| SecurityConfigError {
            name: format!("listener {}", settings.listener()),
            reason: error.to_string(),
        };
        let (chain, key) = settings.identity_pem().map_err(as_client_error)?;
        let truststore = settings.truststore_pem().map_err(as_client_error)?;
        let mut properties = vec![
            ("security.protocol", "ssl"),
            ("ssl.certificate.pem", chain.as_str()),
            ("ssl.key.pem", key.as_str()),
            (
                "ssl.endpoint.identification.algorithm",
                if *check_host { "https" } else { "none" },
            ),
        ];
        if let Some(truststore) = &truststore {
            properties.push(("ssl.ca.pem", truststore.as_str()));
        }
        Ok(ClientSecurity::from_properties(properties)?.with_sasl(self.sasl.clone()))
    }

    /// Builds the client security once, so a broker whose files cannot make one stops at
    /// start-up with the reason rather than failing every connection later.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.client_security()
            .map(drop)
            .map_err(|error| invalid(error.name, "", error.reason))
    }
}

/// `sasl.mechanism.inter.broker.protocol` and the credentials its JAAS entry on `listener`
/// names (the `username` and `password` options).
fn inter_broker_login(config: &BrokerConfig, listener: &str) -> Result<SaslLogin, ConfigError> {
    let property = "sasl.mechanism.inter.broker.protocol";
    let name = config.lookup(property).map_or("GSSAPI", |(value, _)| value);
    let mechanism = Mechanism::from_name(name.trim())
        .filter(|mechanism| *mechanism != Mechanism::OAuthBearer)
        .ok_or_else(|| {
            invalid(
                property.into(),
                name,
                "brokers log in to each other with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (not \
             GSSAPI, Kafka's default, nor OAUTHBEARER): set it to one of the listener's \
             sasl.enabled.mechanisms",
            )
        })?;
    let jaas_name = format!(
        "listener.name.{}.{}.sasl.jaas.config",
        listener.to_ascii_lowercase(),
        mechanism.name().to_ascii_lowercase()
    );
    let modules = match config.explicit(&jaas_name) {
        Some(text) => jaas::parse(text)
            .map_err(|error| invalid(jaas_name.clone(), "[hidden]", error.to_string()))?,
        None => Vec::new(),
    };
    let credentials = modules.iter().find_map(|module| {
        Some((
            module.options.get("username")?.clone(),
            module.options.get("password")?.clone(),
        ))
    });
    let Some((username, password)) = credentials else {
        return Err(invalid(
            jaas_name,
            "[hidden]",
            format!(
                "brokers log in to listener {listener} with {}: its login module needs \
                 username=\"…\" password=\"…\" (this broker's own credentials)",
                mechanism.name()
            ),
        ));
    };
    Ok(SaslLogin {
        mechanism,
        username,
        password,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(properties: &[(&str, &str)]) -> BrokerConfig {
        let mut config = BrokerConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            std::path::PathBuf::from("/nonexistent"),
        );
        for (name, value) in properties {
            config.set(name, value).unwrap();
        }
        config
    }

    const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
        username=\"broker\" password=\"secret\" user_broker=\"secret\";";

    #[test]
    fn brokers_log_in_with_the_inter_broker_mechanism_and_their_jaas_credentials() {
        let config = config(&[
            ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            ("listener.name.internal.plain.sasl.jaas.config", JAAS),
        ]);
        let identity =
            BrokerIdentity::for_listener(&config, "INTERNAL", SecurityProtocol::SaslPlaintext)
                .unwrap();
        let login = identity.client_security().unwrap();
        let login = login.sasl().unwrap();
        assert_eq!(login.mechanism, Mechanism::Plain);
        assert_eq!(
            (login.username.as_str(), login.password.as_str()),
            ("broker", "secret")
        );
        assert!(!identity.uses_tls());
    }

    #[test]
    fn what_brokers_cannot_log_in_with_is_a_configuration_error_naming_it() {
        let cases: [(&[(&str, &str)], &str); 3] = [
            (&[], "GSSAPI"),
            (
                &[("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512")],
                "username=",
            ),
            (
                &[
                    ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
                    (
                        "listener.name.internal.plain.sasl.jaas.config",
                        "org.apache.kafka.common.security.plain.PlainLoginModule required \
                         user_broker=\"secret\";",
                    ),
                ],
                "username=",
            ),
        ];
        for (properties, expected) in cases {
            let error = BrokerIdentity::for_listener(
                &config(properties),
                "INTERNAL",
                SecurityProtocol::SaslPlaintext,
            )
            .unwrap_err()
            .to_string();
            assert!(error.contains(expected), "{properties:?}: {error}");
        }
    }

    #[test]
    fn the_controller_listener_is_plaintext_or_ssl() {
        let mapped = |map: &str| {
            config(&[
                ("controller.listener.names", "CONTROLLER"),
                ("listener.security.protocol.map", map),
            ])
            .controller_listener()
        };
        let (name, protocol) = mapped("CONTROLLER:SSL,PLAINTEXT:PLAINTEXT").unwrap();
        assert_eq!(
            (name.as_str(), protocol),
            ("CONTROLLER", SecurityProtocol::Ssl)
        );
        let unmapped = mapped("PLAINTEXT:PLAINTEXT").unwrap();
        assert_eq!(unmapped.1, SecurityProtocol::Plaintext);
        let sasl = mapped("CONTROLLER:SASL_SSL").unwrap_err().to_string();
        assert!(sasl.contains("PLAINTEXT or SSL"), "{sasl}");
    }
}
