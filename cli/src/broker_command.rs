//! `weir broker`: start a broker and serve until SIGTERM or SIGINT.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use weir_broker::{Broker, BrokerConfig};

#[derive(Args)]
pub(crate) struct BrokerArgs {
    /// Address to accept Kafka clients on, one PLAINTEXT listener (default 127.0.0.1:9092; port
    /// 0 picks a free port, the bound port is logged). Several named listeners: --set
    /// listeners=NAME://host:port,… instead.
    #[arg(long)]
    listen: Option<String>,
    /// host:port given to clients in Metadata (default: the bound listen address).
    #[arg(long)]
    advertised_listener: Option<String>,
    /// Address of the controller listener (cluster mode: this node is one of
    /// `controller.quorum.voters`, e.g. --set controller.quorum.voters=1@host:9093,2@…).
    #[arg(long)]
    controller_listen: Option<String>,
    /// Directory for logs and metadata.
    #[arg(long, default_value = "./weir-data")]
    data_dir: PathBuf,
    /// Address of the Prometheus /metrics endpoint; "off" disables it.
    #[arg(long, default_value = "127.0.0.1:9644")]
    metrics_listen: String,
    /// File of broker properties (Kafka names): YAML (`num.partitions: 3`), or a Kafka
    /// server.properties when its name ends in `.properties`.
    #[arg(long)]
    config: Option<PathBuf>,
    /// A broker property by its Kafka name, e.g. --set num.partitions=3 (repeatable; wins over --config).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
}

/// The properties of a `--config` file: a Java properties file (a Kafka server.properties)
/// when its name ends in `.properties`, else a YAML map.
fn config_file(path: &std::path::Path) -> anyhow::Result<Vec<(String, String)>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read config file {}", path.display()))?;
    if path.extension().is_some_and(|e| e == "properties") {
        let properties = java_properties::read(std::io::BufReader::new(file))
            .with_context(|| format!("{} is not a Java properties file", path.display()))?;
        let mut properties: Vec<(String, String)> = properties.into_iter().collect();
        properties.sort();
        return Ok(properties);
    }
    let properties: serde_yaml::Mapping = serde_yaml::from_reader(file)
        .with_context(|| format!("{} is not a YAML map of broker properties", path.display()))?;
    properties
        .into_iter()
        .map(|(name, value)| {
            let name = yaml_scalar(&name)
                .with_context(|| format!("{}: property names must be strings", path.display()))?;
            let value = yaml_scalar(&value).with_context(|| {
                format!("{}: value of '{name}' must be a scalar", path.display())
            })?;
            Ok((name, value))
        })
        .collect()
}

/// `--listen` when not given.
const DEFAULT_LISTEN: &str = "127.0.0.1:9092";

fn resolve(address: &str, what: &str) -> anyhow::Result<SocketAddr> {
    address
        .to_socket_addrs()
        .with_context(|| format!("invalid {what} address '{address}'"))?
        .next()
        .with_context(|| format!("{what} address '{address}' resolves to nothing"))
}

pub(crate) fn build_config(args: &BrokerArgs) -> anyhow::Result<BrokerConfig> {
    let listen = resolve(args.listen.as_deref().unwrap_or(DEFAULT_LISTEN), "--listen")?;
    let mut config = BrokerConfig::new(listen, args.data_dir.clone());
    if args.metrics_listen != "off" {
        config.metrics_listen = Some(resolve(&args.metrics_listen, "--metrics-listen")?);
    }
    if let Some(address) = &args.controller_listen {
        config.controller_listen = Some(resolve(address, "--controller-listen")?);
    }
    if let Some(advertised) = &args.advertised_listener {
        let (host, port) = advertised
            .rsplit_once(':')
            .with_context(|| format!("--advertised-listener '{advertised}' must be HOST:PORT"))?;
        let port: u16 = port
            .parse()
            .with_context(|| format!("--advertised-listener '{advertised}': bad port"))?;
        config.advertised_listener = Some((host.trim_matches(['[', ']']).to_string(), port));
    }
    if let Some(path) = &args.config {
        for (name, value) in config_file(path)? {
            config
                .set(&name, &value)
                .with_context(|| format!("in {}", path.display()))?;
        }
    }
    for assignment in &args.set {
        let Some((name, value)) = assignment.split_once('=') else {
            bail!("--set '{assignment}' must be NAME=VALUE");
        };
        config.set(name.trim(), value.trim()).context("in --set")?;
    }
    if config.explicit("listeners").is_some() {
        if args.listen.is_some() {
            bail!("--listen and the listeners property both name client listeners: use one");
        }
        if args.advertised_listener.is_some() {
            bail!("with the listeners property, advertise with advertised.listeners, not --advertised-listener");
        }
    }
    Ok(config)
}

fn yaml_scalar(value: &serde_yaml::Value) -> Option<String> {
    match value {
        serde_yaml::Value::String(s) => Some(s.clone()),
        serde_yaml::Value::Number(n) => Some(n.to_string()),
        serde_yaml::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(crate) async fn run(args: BrokerArgs) -> anyhow::Result<()> {
    let config = build_config(&args)?;
    raise_open_files_limit();
    let broker = Broker::start(config)
        .await
        .context("broker failed to start")?;
    wait_for_signal().await?;
    broker.shutdown().await.context("shutdown failed")?;
    Ok(())
}

/// Waits for SIGTERM or Ctrl-C.
pub(crate) async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM received"),
        result = tokio::signal::ctrl_c() => {
            result.context("cannot listen for SIGINT")?;
            tracing::info!("SIGINT received");
        }
    }
    Ok(())
}

/// Each partition keeps a file handle per segment; lift the soft limit to the hard one.
#[allow(unsafe_code)] // system calls; each block says why it is sound
fn raise_open_files_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed by pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                tracing::warn!("could not raise the open files limit");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(config: Option<PathBuf>, set: &[&str]) -> BrokerArgs {
        BrokerArgs {
            listen: Some("127.0.0.1:0".into()),
            advertised_listener: Some("broker-0.weir:9092".into()),
            controller_listen: None,
            data_dir: PathBuf::from("/tmp/unused"),
            metrics_listen: "off".into(),
            config,
            set: set.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn yaml_file_then_set_overrides_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broker.yaml");
        std::fs::write(
            &path,
            "num.partitions: 3\nauto.create.topics.enable: false\n",
        )
        .unwrap();
        let config = build_config(&args(Some(path), &["num.partitions=5"])).unwrap();
        assert_eq!(config.num_partitions(), 5);
        assert!(!config.auto_create_topics_enable());
        assert_eq!(
            config.advertised_listener,
            Some(("broker-0.weir".into(), 9092))
        );
        assert_eq!(config.metrics_listen, None);
    }

    #[test]
    fn a_kafka_server_properties_file_is_read_as_java_properties() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.properties");
        std::fs::write(
            &path,
            "# Kafka's file\nnum.partitions=3\n! another comment\nsasl.enabled.mechanisms = PLAIN\n\
             listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule \\\n  required user_alice=\"a=b\";\n",
        )
        .unwrap();
        let config = build_config(&args(Some(path), &[])).unwrap();
        assert_eq!(config.num_partitions(), 3);
        assert_eq!(config.explicit("sasl.enabled.mechanisms"), Some("PLAIN"));
        assert_eq!(
            config.explicit("listener.name.sasl_plaintext.plain.sasl.jaas.config"),
            Some("org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"a=b\";")
        );
    }

    #[test]
    fn listeners_replace_listen_and_its_advertised_address() {
        let listeners = ["listeners=PLAINTEXT://127.0.0.1:0"];
        assert!(
            build_config(&args(None, &listeners)).is_err(),
            "with --listen"
        );
        let mut only_listeners = args(None, &listeners);
        only_listeners.listen = None;
        assert!(
            build_config(&only_listeners).is_err(),
            "with --advertised-listener"
        );
        only_listeners.advertised_listener = None;
        let config = build_config(&only_listeners).unwrap();
        assert_eq!(config.client_listeners().unwrap()[0].name, "PLAINTEXT");
    }

    #[test]
    fn unknown_names_and_bad_files_are_errors() {
        let error = build_config(&args(None, &["num.partitionz=3"])).unwrap_err();
        assert!(format!("{error:#}").contains("unknown configuration property 'num.partitionz'"));
        assert!(build_config(&args(None, &["num.partitions"])).is_err());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.yaml");
        std::fs::write(&path, "- just\n- a list\n").unwrap();
        let error = build_config(&args(Some(path.clone()), &[])).unwrap_err();
        assert!(
            format!("{error:#}").contains("is not a YAML map"),
            "{error:#}"
        );
        std::fs::write(&path, "log.retention.hours: soon\n").unwrap();
        let error = build_config(&args(Some(path), &[])).unwrap_err();
        assert!(
            format!("{error:#}").contains("log.retention.hours"),
            "{error:#}"
        );
    }
}
