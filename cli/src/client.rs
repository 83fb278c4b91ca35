//! Shared rdkafka client settings for the client commands.

use clap::Args;
use rdkafka::ClientConfig;

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
    pub(crate) fn client_config(&self) -> anyhow::Result<ClientConfig> {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", &self.bootstrap);
        for (name, value) in self.property_pairs()? {
            config.set(name, value);
        }
        Ok(config)
    }

    /// The `-X NAME=VALUE` properties as pairs.
    pub(crate) fn property_pairs(&self) -> anyhow::Result<Vec<(String, String)>> {
        self.properties
            .iter()
            .map(|property| {
                let (name, value) = property
                    .split_once('=')
                    .ok_or_else(|| anyhow::anyhow!("-X '{property}' must be NAME=VALUE"))?;
                Ok((name.to_string(), value.to_string()))
            })
            .collect()
    }
}

/// Timeout for metadata and admin calls.
pub(crate) const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
