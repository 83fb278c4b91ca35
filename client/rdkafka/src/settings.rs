//! A cluster to connect to, and how every client of it is configured.

use std::time::Duration;

use rdkafka::config::ClientConfig;

/// How long one cluster operation (metadata, init, commit, offsets, creating topics) may take.
pub const CLUSTER_TIMEOUT: Duration = Duration::from_secs(30);

/// A cluster's bootstrap servers and the user's librdkafka properties for it (security
/// settings, tuning). Every client Weir makes of a cluster is configured from these.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientSettings {
    /// `host:port[,host:port…]`.
    pub bootstrap: String,
    /// Set on every client after Weir's own defaults, so the user's value wins.
    pub properties: Vec<(String, String)>,
}

impl ClientSettings {
    pub fn new(bootstrap: impl Into<String>) -> Self {
        ClientSettings {
            bootstrap: bootstrap.into(),
            properties: Vec::new(),
        }
    }

    /// These settings with `properties` added to the user's.
    pub fn with_properties<K, V>(mut self, properties: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        self.properties.extend(
            properties
                .into_iter()
                .map(|(name, value)| (name.into(), value.into())),
        );
        self
    }

    /// A client's configuration: the bootstrap servers, then the caller's `defaults` (what its
    /// use of the client needs), then the user's properties over both.
    pub fn config(&self, defaults: &[(&str, &str)]) -> ClientConfig {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", &self.bootstrap);
        for (name, value) in defaults {
            config.set(*name, *value);
        }
        for (name, value) in &self.properties {
            config.set(name, value);
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_properties_win_over_defaults() {
        let settings = ClientSettings::new("localhost:9092")
            .with_properties([("linger.ms", "50"), ("security.protocol", "ssl")]);
        let config = settings.config(&[("linger.ms", "5"), ("acks", "all")]);
        assert_eq!(config.get("bootstrap.servers"), Some("localhost:9092"));
        assert_eq!(config.get("linger.ms"), Some("50"));
        assert_eq!(config.get("acks"), Some("all"));
        assert_eq!(config.get("security.protocol"), Some("ssl"));
    }

    #[test]
    fn an_unknown_property_is_an_error_naming_it() {
        let settings = ClientSettings::new("localhost:1").with_properties([("no.such", "1")]);
        let error = settings
            .reach_for(&[], std::time::Duration::from_millis(100))
            .unwrap_err();
        assert!(error.to_string().contains("no.such"), "{error}");
    }
}
