//! Named listeners, by Kafka's properties: `listeners` (`NAME://host:port,…`),
//! `advertised.listeners` (what clients are told, per listener), `listener.security.protocol.map`
//! (`NAME:PROTOCOL,…`), `inter.broker.listener.name` and `controller.listener.names`.
//!
//! Without `listeners` the broker has one PLAINTEXT listener named PLAINTEXT on `--listen`
//! (advertised as `--advertised-listener`), as before.

use std::net::{SocketAddr, ToSocketAddrs};

use super::ConfigError;

/// A listener's security protocol (Kafka's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_uppercase().as_str() {
            "PLAINTEXT" => Some(SecurityProtocol::Plaintext),
            "SSL" => Some(SecurityProtocol::Ssl),
            "SASL_PLAINTEXT" => Some(SecurityProtocol::SaslPlaintext),
            "SASL_SSL" => Some(SecurityProtocol::SaslSsl),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Whether the connection is TLS.
    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }
}

/// One client listener: where it binds, what clients are told, how it is secured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// Upper case, as Kafka normalises listener names.
    pub name: String,
    pub protocol: SecurityProtocol,
    pub bind: SocketAddr,
    /// (host, port) in Metadata; `None`: the bound address.
    pub advertised: Option<(String, u16)>,
}

/// `listener.security.protocol.map` when unset: each protocol's name maps to itself.
pub(super) const DEFAULT_PROTOCOL_MAP: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

fn invalid(name: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        name: name.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// Parses `NAME://host:port,…` (host empty: every interface; IPv6 in brackets) into (name,
/// host, port), names upper-cased and unique.
pub(super) fn parse_listener_list(
    property: &str,
    list: &str,
) -> Result<Vec<(String, String, u16)>, ConfigError> {
    let mut listeners: Vec<(String, String, u16)> = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |reason: &str| invalid(property, list, format!("'{entry}': {reason}"));
        let (name, address) = entry
            .split_once("://")
            .ok_or_else(|| bad("expected NAME://host:port"))?;
        let name = name.trim().to_ascii_uppercase();
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            return Err(bad("a listener name is letters, digits, '_' and '-'"));
        }
        let (host, port) = address
            .rsplit_once(':')
            .ok_or_else(|| bad("expected host:port after '://'"))?;
        let port: u16 = port.parse().map_err(|_| bad("the port is not a number"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if listeners.iter().any(|(other, _, _)| *other == name) {
            return Err(bad("the listener name is used twice"));
        }
        listeners.push((name, host, port));
    }
    Ok(listeners)
}

/// Parses `listener.security.protocol.map`: `NAME:PROTOCOL,…`.
pub(super) fn parse_protocol_map(
    list: &str,
) -> Result<Vec<(String, SecurityProtocol)>, ConfigError> {
    let property = "listener.security.protocol.map";
    let mut map = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |reason: &str| invalid(property, list, format!("'{entry}': {reason}"));
        let (name, protocol) = entry
            .split_once(':')
            .ok_or_else(|| bad("expected NAME:PROTOCOL"))?;
        let protocol = SecurityProtocol::parse(protocol).ok_or_else(|| {
            bad("the protocol is one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")
        })?;
        map.push((name.trim().to_ascii_uppercase(), protocol));
    }
    Ok(map)
}

/// Where a listener of `listeners` binds: its host resolved (empty: every interface).
pub(super) fn bind_address(host: &str, port: u16) -> Option<SocketAddr> {
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    (host, port).to_socket_addrs().ok()?.next()
}

/// The client listeners of `listeners`, leaving out `controller_names`, with their protocols
/// and advertised addresses; the host of a bind address is resolved now.
pub(super) fn client_listeners(
    listeners: &str,
    advertised: Option<&str>,
    protocol_map: &str,
    controller_names: &[String],
) -> Result<Vec<Listener>, ConfigError> {
    let map = parse_protocol_map(protocol_map)?;
    let advertised = match advertised {
        Some(list) => parse_listener_list("advertised.listeners", list)?,
        None => Vec::new(),
    };
    let mut result = Vec::new();
    for (name, host, port) in parse_listener_list("listeners", listeners)? {
        if controller_names.contains(&name) {
            continue;
        }
        let protocol = map
            .iter()
            .find(|(mapped, _)| *mapped == name)
            .map(|(_, protocol)| *protocol)
            .ok_or_else(|| {
                invalid(
                    "listener.security.protocol.map",
                    protocol_map,
                    format!("no security protocol for listener {name}"),
                )
            })?;
        let bind = bind_address(&host, port)
            .ok_or_else(|| invalid("listeners", listeners, format!("cannot resolve '{host}'")))?;
        let advertised = advertised
            .iter()
            .find(|(advertised_name, _, _)| *advertised_name == name)
            .map(|(_, host, port)| (host.clone(), *port));
        result.push(Listener {
            name,
            protocol,
            bind,
            advertised,
        });
    }
    if let Some((name, _, _)) = advertised
        .iter()
        .find(|(name, _, _)| !result.iter().any(|listener| listener.name == *name))
    {
        return Err(invalid(
            "advertised.listeners",
            &format!("{name}://…"),
            "names no client listener of listeners",
        ));
    }
    if result.is_empty() {
        return Err(invalid(
            "listeners",
            listeners,
            "no client listener (every one is a controller listener)",
        ));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_follow_kafkas_syntax() {
        let listeners = client_listeners(
            "internal://127.0.0.1:9092, EXTERNAL://:9094,CONTROLLER://127.0.0.1:9093",
            Some("INTERNAL://broker-0.weir:9092,EXTERNAL://kafka.example.com:443"),
            "INTERNAL:PLAINTEXT,EXTERNAL:SSL,CONTROLLER:PLAINTEXT",
            &["CONTROLLER".to_string()],
        )
        .unwrap();
        assert_eq!(listeners.len(), 2);
        assert_eq!(listeners[0].name, "INTERNAL");
        assert_eq!(listeners[0].protocol, SecurityProtocol::Plaintext);
        assert_eq!(listeners[0].bind, "127.0.0.1:9092".parse().unwrap());
        assert_eq!(
            listeners[1].advertised,
            Some(("kafka.example.com".to_string(), 443))
        );
        assert_eq!(listeners[1].bind, "0.0.0.0:9094".parse().unwrap());
        assert!(listeners[1].protocol.uses_tls());
        let ipv6 = client_listeners("PLAINTEXT://[::1]:9092", None, DEFAULT_PROTOCOL_MAP, &[]);
        assert_eq!(ipv6.unwrap()[0].bind, "[::1]:9092".parse().unwrap());
    }

    #[test]
    fn bad_listeners_are_configuration_errors() {
        let cases = [
            ("PLAINTEXT:9092", None, DEFAULT_PROTOCOL_MAP),
            ("PLAINTEXT://127.0.0.1:port", None, DEFAULT_PROTOCOL_MAP),
            ("A://127.0.0.1:1,a://127.0.0.1:2", None, "A:PLAINTEXT"),
            ("INTERNAL://127.0.0.1:1", None, DEFAULT_PROTOCOL_MAP),
            ("PLAINTEXT://127.0.0.1:1", None, "PLAINTEXT:TLS"),
            (
                "PLAINTEXT://127.0.0.1:1",
                Some("OTHER://h:1"),
                DEFAULT_PROTOCOL_MAP,
            ),
            ("", None, DEFAULT_PROTOCOL_MAP),
        ];
        for (listeners, advertised, map) in cases {
            assert!(
                client_listeners(listeners, advertised, map, &[]).is_err(),
                "{listeners} {advertised:?} {map}"
            );
        }
    }
}
