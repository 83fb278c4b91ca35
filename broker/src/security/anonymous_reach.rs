//! Who can reach the broker without proving who they are, refused at start-up where that would
//! open the cluster with an authorizer on.
//!
//! A connection that proves nothing is `User:ANONYMOUS`: on a PLAINTEXT listener, and on an SSL
//! one that does not require a client certificate (`ssl.client.auth` not `required`). With an
//! authorizer (`authorizer.class.name`):
//! - the controller listener must not take such connections beyond loopback: they would reach
//!   the quorum (Vote, BrokerRegistration, AlterPartition…) as whatever ANONYMOUS may do, and a
//!   cluster whose controllers authenticate to each other as ANONYMOUS needs it to be a super
//!   user;
//! - when `super.users` names `User:ANONYMOUS` (the loopback admin path README describes), no
//!   listener may take such connections beyond loopback: each would be a super user.
//!
//! Kafka starts with either; Weir refuses with the reason (COMPATIBILITY.md).

use std::net::SocketAddr;

use crate::config::{BrokerConfig, ConfigError, SecurityProtocol};
use crate::security::acl::authorizer_settings;
use crate::security::KafkaPrincipal;

/// Refuses a configuration in which a connection proving nothing reaches the controller, or is
/// a super user, from beyond loopback while an authorizer is on.
pub fn check(config: &BrokerConfig) -> Result<(), ConfigError> {
    let Some(authorizer) = authorizer_settings(config) else {
        return Ok(());
    };
    let anonymous_is_super = authorizer
        .super_users
        .contains(&KafkaPrincipal::anonymous());
    if let Some(bind) = config.controller_listen {
        let (name, protocol) = config.controller_listener()?;
        if proves_nothing(config, &name, protocol) && !bind.ip().is_loopback() {
            return Err(refusal(
                &name,
                protocol,
                bind,
                "with an authorizer on, anyone who reaches it speaks to the controllers \
                 unauthenticated. Make it SSL with ssl.client.auth=required (the brokers' \
                 certificates as super users), or bind it to a loopback address",
            ));
        }
    }
    if !anonymous_is_super {
        return Ok(());
    }
    for listener in config.client_listeners()? {
        let open = proves_nothing(config, &listener.name, listener.protocol);
        if open && !listener.bind.ip().is_loopback() {
            return Err(refusal(
                &listener.name,
                listener.protocol,
                listener.bind,
                "super.users names User:ANONYMOUS, so every connection to it that proves \
                 nothing is a super user. Keep such a listener on a loopback address (the \
                 admin path), and authenticate the others (SASL, or SSL with \
                 ssl.client.auth=required)",
            ));
        }
    }
    Ok(())
}

/// Whether connections to `listener` may prove nothing (and so be `User:ANONYMOUS`).
fn proves_nothing(config: &BrokerConfig, listener: &str, protocol: SecurityProtocol) -> bool {
    match protocol {
        SecurityProtocol::Plaintext => true,
        SecurityProtocol::Ssl => {
            let client_auth = config.listener_property(listener, "ssl.client.auth");
            !client_auth.is_some_and(|auth| auth.eq_ignore_ascii_case("required"))
        }
        SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => false,
    }
}

fn refusal(listener: &str, protocol: SecurityProtocol, bind: SocketAddr, why: &str) -> ConfigError {
    ConfigError::OpenToAnonymous {
        listener: listener.to_string(),
        reason: format!(
            "{} on {bind} takes connections that prove nothing: {why}",
            protocol.name()
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn config(properties: &[(&str, &str)], controller: Option<&str>) -> BrokerConfig {
        let mut config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), PathBuf::from("/tmp/x"));
        for (name, value) in properties {
            config.set(name, value).unwrap();
        }
        config.controller_listen = controller.map(|address| address.parse().unwrap());
        config
    }

    const AUTHORIZER: (&str, &str) = (
        "authorizer.class.name",
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    );
    const CONTROLLER: [(&str, &str); 3] = [
        ("controller.listener.names", "CONTROLLER"),
        ("node.id", "1"),
        ("controller.quorum.voters", "1@127.0.0.1:9093"),
    ];

    fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
        let mut properties = vec![AUTHORIZER];
        properties.extend_from_slice(extra);
        properties
    }

    #[test]
    fn a_plaintext_controller_listener_beyond_loopback_is_refused_with_an_authorizer() {
        let mut properties = with(&CONTROLLER);
        properties.push((
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        ));
        let error = check(&config(&properties, Some("0.0.0.0:9093"))).unwrap_err();
        assert!(
            error.to_string().contains("CONTROLLER") && error.to_string().contains("0.0.0.0:9093"),
            "{error}"
        );
        check(&config(&properties, Some("127.0.0.1:9093"))).unwrap();
        // No authorizer: everyone may do anything anyway, as on Kafka.
        let open: Vec<_> = properties[1..].to_vec();
        check(&config(&open, Some("0.0.0.0:9093"))).unwrap();
    }

    #[test]
    fn an_ssl_controller_listener_needs_required_client_certificates() {
        let mut properties = with(&CONTROLLER);
        properties.push((
            "listener.security.protocol.map",
            "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
        ));
        assert!(check(&config(&properties, Some("0.0.0.0:9093"))).is_err());
        properties.push(("listener.name.controller.ssl.client.auth", "required"));
        check(&config(&properties, Some("0.0.0.0:9093"))).unwrap();
    }

    #[test]
    fn anonymous_super_users_keep_unauthenticated_listeners_on_loopback() {
        let exposed = with(&[
            ("super.users", "User:ANONYMOUS;User:admin"),
            ("listeners", "PLAINTEXT://0.0.0.0:9092"),
        ]);
        let error = check(&config(&exposed, None)).unwrap_err();
        assert!(error.to_string().contains("User:ANONYMOUS"), "{error}");
        let loopback = with(&[
            ("super.users", "User:ANONYMOUS;User:admin"),
            ("listeners", "PLAINTEXT://127.0.0.1:9092"),
        ]);
        check(&config(&loopback, None)).unwrap();
        // Without ANONYMOUS among the super users, it may do only what ACLs allow it.
        let acl_only = with(&[
            ("super.users", "User:admin"),
            ("listeners", "PLAINTEXT://0.0.0.0:9092"),
        ]);
        check(&config(&acl_only, None)).unwrap();
    }
}
