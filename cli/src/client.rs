//! The cluster the client commands talk to: `-b` and `-X`, made into `weir_client` settings.

use clap::Args;
use rdkafka::ClientConfig;
use weir_client::ClientSettings;
use weir_wire::ClientSecurity;

#[derive(Args, Clone)]
pub(crate) struct ConnectArgs {
    /// Bootstrap broker(s), host:port[,host:port…]: Weir or any Kafka cluster.
    #[arg(
        short = 'b',
        long = "bootstrap",
        env = "WEIR_BOOTSTRAP",
        default_value = "127.0.0.1:9092",
        global = true
    )]
    pub bootstrap: String,
    /// Extra librdkafka client properties, e.g. -X security.protocol=ssl (repeatable).
    #[arg(short = 'X', value_name = "NAME=VALUE", global = true)]
    pub properties: Vec<String>,
}

impl ConnectArgs {
    /// A client's configuration: the bootstrap servers and the `-X` properties.
    pub(crate) fn client_config(&self) -> anyhow::Result<ClientConfig> {
        Ok(self.settings()?.config(&[]))
    }

    /// The cluster and the `-X NAME=VALUE` properties.
    pub(crate) fn settings(&self) -> anyhow::Result<ClientSettings> {
        Ok(ClientSettings::new(&self.bootstrap).with_properties(self.property_pairs()?))
    }

    /// TLS and SASL for the protocol client's admin calls, from the same `-X` properties
    /// librdkafka reads (`security.protocol`, `ssl.*`, `sasl.*`).
    pub(crate) fn security(&self) -> anyhow::Result<ClientSecurity> {
        Ok(ClientSecurity::from_properties(self.property_pairs()?)?)
    }

    fn property_pairs(&self) -> anyhow::Result<Vec<(&str, &str)>> {
        self.properties
            .iter()
            .map(|property| {
                property
                    .split_once('=')
                    .ok_or_else(|| anyhow::anyhow!("-X '{property}' must be NAME=VALUE"))
            })
            .collect()
    }
}

/// Timeout for metadata and admin calls.
pub(crate) const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
