//! Shared rdkafka client settings for the client commands.

use clap::Args;
use rdkafka::ClientConfig;

#[derive(Args, Clone)]
pub struct ConnectArgs {
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
    pub fn client_config(&self) -> anyhow::Result<ClientConfig> {
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", &self.bootstrap);
        for property in &self.properties {
            let (name, value) = property
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("-X '{property}' must be NAME=VALUE"))?;
            config.set(name, value);
        }
        Ok(config)
    }
}

/// Timeout for metadata and admin calls.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
