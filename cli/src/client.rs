//! The cluster the client commands talk to: `-b`, `--command-config` and `-X`, made into
//! `weir_client` settings.
//!
//! Secrets need not be on the command line (where `ps` shows them): client properties come from
//! a Java properties file (`--command-config FILE`, as Kafka's tools take it, or `-X @FILE`),
//! and every value — in the file or after `-X NAME=` — may name an environment variable
//! (`${VAR}`, `${VAR:-default}`) or a secret file (`${file:PATH}`), as pipeline files do.
//! Later properties win: the file, then each `-X` in order.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use rdkafka::ClientConfig;
use weir_client::ClientSettings;
use weir_pipelines::interpolate::{interpolate, ProcessEnvironment};
use weir_wire::ClientSecurity;

/// The most a `--command-config` file may hold.
const MAX_COMMAND_CONFIG_BYTES: u64 = 1024 * 1024;

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
    /// Client properties from a Java properties file (as Kafka's tools' --command-config), e.g.
    /// security.protocol, sasl.username and sasl.password=${file:/run/secrets/kafka-password};
    /// -X properties override it.
    #[arg(
        long = "command-config",
        value_name = "FILE",
        env = "WEIR_COMMAND_CONFIG",
        global = true
    )]
    pub command_config: Option<PathBuf>,
    /// Extra librdkafka client properties, e.g. -X security.protocol=ssl (repeatable); a value
    /// may be ${VAR}, ${VAR:-default} or ${file:PATH}; -X @FILE reads a properties file.
    #[arg(short = 'X', value_name = "NAME=VALUE", global = true)]
    pub properties: Vec<String>,
}

impl ConnectArgs {
    /// A client's configuration: the bootstrap servers and the properties.
    pub(crate) fn client_config(&self) -> anyhow::Result<ClientConfig> {
        Ok(self.settings()?.config(&[]))
    }

    /// The cluster and the client properties.
    pub(crate) fn settings(&self) -> anyhow::Result<ClientSettings> {
        Ok(ClientSettings::new(&self.bootstrap).with_properties(self.property_pairs()?))
    }

    /// TLS and SASL for the protocol client's admin calls, from the same properties librdkafka
    /// reads (`security.protocol`, `ssl.*`, `sasl.*`).
    pub(crate) fn security(&self) -> anyhow::Result<ClientSecurity> {
        let pairs = self.property_pairs()?;
        let borrowed = pairs.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        Ok(ClientSecurity::from_properties(borrowed)?)
    }

    /// Every property, in the order later ones win: the command config, then each `-X`.
    fn property_pairs(&self) -> anyhow::Result<Vec<(String, String)>> {
        let mut pairs = match &self.command_config {
            Some(path) => properties_file(path)?,
            None => Vec::new(),
        };
        for property in &self.properties {
            if let Some(path) = property.strip_prefix('@') {
                pairs.extend(properties_file(Path::new(path))?);
                continue;
            }
            let (name, value) = property
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("-X '{property}' must be NAME=VALUE or @FILE"))?;
            let value = interpolated(value).with_context(|| format!("-X {name}"))?;
            pairs.push((name.to_string(), value));
        }
        Ok(pairs)
    }
}

/// A Java properties file's properties (in file order), their values interpolated.
fn properties_file(path: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|file| {
            file.take(MAX_COMMAND_CONFIG_BYTES + 1)
                .read_to_string(&mut text)
        })
        .with_context(|| format!("cannot read {}", path.display()))?;
    if text.len() as u64 > MAX_COMMAND_CONFIG_BYTES {
        anyhow::bail!(
            "{} is larger than {MAX_COMMAND_CONFIG_BYTES} bytes",
            path.display()
        );
    }
    let mut pairs = Vec::new();
    let mut reader = java_properties::PropertiesIter::new(text.as_bytes());
    reader
        .read_into(|name, value| pairs.push((name, value)))
        .with_context(|| format!("{} is not a Java properties file", path.display()))?;
    pairs
        .into_iter()
        .map(|(name, value)| {
            let value = interpolated(&value)
                .with_context(|| format!("{}: property {name}", path.display()))?;
            Ok((name, value))
        })
        .collect()
}

/// `value` with its `${VAR}`, `${VAR:-default}` and `${file:PATH}` replaced.
fn interpolated(value: &str) -> anyhow::Result<String> {
    interpolate(value, &ProcessEnvironment).map_err(|error| anyhow::anyhow!(error.message))
}

/// Timeout for metadata and admin calls.
pub(crate) const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command_config: Option<&Path>, properties: &[&str]) -> ConnectArgs {
        ConnectArgs {
            bootstrap: "127.0.0.1:9092".into(),
            command_config: command_config.map(Path::to_path_buf),
            properties: properties.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn properties_come_from_the_command_config_then_x_with_secrets_from_files() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("password");
        std::fs::write(&secret, "s3cret\n").unwrap();
        let config = dir.path().join("client.properties");
        std::fs::write(
            &config,
            format!(
                "# as Kafka's tools read it\nsecurity.protocol=SASL_SSL\nsasl.mechanism: \
                 SCRAM-SHA-256\nsasl.username=alice\nsasl.password=${{file:{}}}\n",
                secret.display()
            ),
        )
        .unwrap();
        let pairs = args(Some(&config), &["sasl.username=bob"])
            .property_pairs()
            .unwrap();
        let owned = |n: &str, v: &str| (n.to_string(), v.to_string());
        assert_eq!(
            pairs,
            [
                owned("security.protocol", "SASL_SSL"),
                owned("sasl.mechanism", "SCRAM-SHA-256"),
                owned("sasl.username", "alice"),
                owned("sasl.password", "s3cret"),
                owned("sasl.username", "bob"),
            ]
        );
        let settings = args(Some(&config), &["sasl.username=bob"])
            .settings()
            .unwrap()
            .config(&[]);
        assert_eq!(settings.get("sasl.username"), Some("bob"), "-X wins");
        assert_eq!(settings.get("sasl.password"), Some("s3cret"));
        let from_at = args(None, &[&format!("@{}", config.display())])
            .property_pairs()
            .unwrap();
        assert_eq!(from_at.len(), 4);
    }

    #[test]
    fn a_missing_variable_or_file_is_an_error_naming_the_property() {
        let error = args(None, &["sasl.password=${WEIR_TEST_SURELY_UNSET_VARIABLE}"])
            .property_pairs()
            .unwrap_err();
        let text = format!("{error:#}");
        assert!(text.contains("sasl.password"), "{text}");
        assert!(text.contains("WEIR_TEST_SURELY_UNSET_VARIABLE"), "{text}");
        let error = args(Some(Path::new("/nonexistent/client.properties")), &[])
            .property_pairs()
            .unwrap_err();
        assert!(format!("{error:#}").contains("/nonexistent/client.properties"));
        let error = args(None, &["sasl.password"]).property_pairs().unwrap_err();
        assert!(format!("{error:#}").contains("NAME=VALUE or @FILE"));
    }
}
