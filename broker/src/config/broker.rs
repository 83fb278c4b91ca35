//! The broker's configuration: where it listens and stores data, the properties set, and typed
//! accessors over them (defaults from [`super::BROKER_PROPERTIES`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use super::dynamic::{ConfigSource, DynamicConfigs};
use super::listeners::{
    bind_address, client_listeners, parse_listener_list, parse_protocol_map, Listener,
    SecurityProtocol,
};
use super::properties::{
    broker_property_def, listener_scoped, topic_config_def, validate_value,
    DEFAULT_QUEUED_MAX_REQUEST_BYTES, GZIP_LEVEL, LISTENER_MECHANISMS,
    LISTENER_MECHANISM_PROPERTIES, LZ4_LEVEL, REFUSED_PROPERTIES, ZSTD_LEVEL,
};
use super::topic::TopicCompression;
use super::{ConfigError, LogConfig, TopicConfigDef};

/// Parses `controller.quorum.voters`: `id@host:port` separated by commas.
pub fn parse_quorum_voters(list: &str) -> Result<BTreeMap<u64, String>, ConfigError> {
    let mut voters = BTreeMap::new();
    for voter in list.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        let bad = |reason: &str| ConfigError::InvalidValue {
            name: "controller.quorum.voters".into(),
            value: list.to_string(),
            reason: format!("'{voter}': {reason}"),
        };
        let (id, address) = voter
            .split_once('@')
            .ok_or_else(|| bad("expected id@host:port"))?;
        let id: u64 = id.parse().map_err(|_| bad("the id is not a number"))?;
        let valid_address = address
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !valid_address {
            return Err(bad("expected host:port after '@'"));
        }
        if voters.insert(id, address.to_string()).is_some() {
            return Err(bad("the id is listed twice"));
        }
    }
    Ok(voters)
}

/// Parses `max.connections.per.ip.overrides`: `host:count` separated by commas (the host a name
/// or an address; IPv6 addresses as they are, the count after the last colon).
pub fn parse_connection_overrides(list: &str) -> Result<Vec<(String, usize)>, ConfigError> {
    let mut overrides = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |reason: &str| ConfigError::InvalidValue {
            name: "max.connections.per.ip.overrides".into(),
            value: list.to_string(),
            reason: format!("'{entry}': {reason}"),
        };
        let (host, count) = entry
            .rsplit_once(':')
            .ok_or_else(|| bad("expected host:count"))?;
        let host = host.trim().trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("the host is empty"));
        }
        let count: usize = count
            .trim()
            .parse()
            .map_err(|_| bad("the count is not a whole number"))?;
        overrides.push((host.to_string(), count));
    }
    Ok(overrides)
}

/// A cluster node's part in the metadata quorum (Kafka's `process.roles`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuorumRole {
    /// `broker,controller`: votes in the metadata quorum (Kafka's combined mode).
    Voter,
    /// `broker`: receives the metadata log without voting (a Raft learner).
    Observer,
}

/// Parses `process.roles`: `broker` or `broker,controller` (in either order).
pub fn parse_process_roles(list: &str) -> Result<QuorumRole, ConfigError> {
    let mut roles: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort_unstable();
    roles.dedup();
    let bad = |reason: &str| ConfigError::InvalidValue {
        name: "process.roles".into(),
        value: list.to_string(),
        reason: reason.to_string(),
    };
    match roles.as_slice() {
        ["broker"] => Ok(QuorumRole::Observer),
        ["broker", "controller"] => Ok(QuorumRole::Voter),
        ["controller"] => Err(bad(
            "controller-only nodes are not supported: every node serves clients \
             (use broker,controller)",
        )),
        _ => Err(bad("expected broker or broker,controller")),
    }
}

/// The broker's configuration: where it listens and stores data, and its properties.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    pub listen: SocketAddr,
    /// host:port given to clients in Metadata; defaults to the bound listen address.
    pub advertised_listener: Option<(String, u16)>,
    pub data_dir: PathBuf,
    /// Where `/metrics` is served; `None` turns the endpoint off (tests).
    pub metrics_listen: Option<SocketAddr>,
    /// The controller listener of a quorum voter (`--controller-listen`); cluster mode only.
    pub controller_listen: Option<SocketAddr>,
    /// Properties explicitly set (by file or `--set`); defaults come from the tables.
    properties: BTreeMap<String, String>,
    /// The dynamic layers over them (AlterConfigs on BROKER resources).
    dynamic: DynamicConfigs,
}

impl BrokerConfig {
    pub fn new(listen: SocketAddr, data_dir: PathBuf) -> Self {
        BrokerConfig {
            listen,
            advertised_listener: None,
            data_dir,
            metrics_listen: None,
            controller_listen: None,
            properties: BTreeMap::new(),
            dynamic: DynamicConfigs::default(),
        }
    }

    /// This configuration with other dynamic layers over the same static properties.
    pub fn with_dynamic(&self, dynamic: DynamicConfigs) -> BrokerConfig {
        BrokerConfig {
            dynamic,
            ..self.clone()
        }
    }

    /// The dynamic configs in effect: this broker's and the cluster's defaults.
    pub fn dynamic(&self) -> &DynamicConfigs {
        &self.dynamic
    }

    /// Sets a broker property by its Kafka name, validating name and value. A property of one
    /// listener is `listener.name.<listener>.<property>` (`ssl.…`, `sasl.enabled.mechanisms`,
    /// …), of one of its SASL mechanisms `listener.name.<listener>.<mechanism>.<property>`.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        if let Some(rest) = name.strip_prefix("listener.name.") {
            return self.set_listener_scoped(name, rest, value);
        }
        if let Some((_, reason)) = REFUSED_PROPERTIES.iter().find(|(n, _)| *n == name) {
            return Err(ConfigError::Unsupported {
                name: name.to_string(),
                reason: reason.to_string(),
            });
        }
        let def = broker_property_def(name).ok_or_else(|| ConfigError::Unknown {
            name: name.to_string(),
        })?;
        validate_value(name, value, def.kind, def.min, def.choices)?;
        super::kafka_only::check_broker_value(name, value)?;
        if name == "controller.quorum.voters" {
            parse_quorum_voters(value)?;
        }
        if name == "process.roles" {
            parse_process_roles(value)?;
        }
        if name == "max.connections.per.ip.overrides" {
            parse_connection_overrides(value)?;
        }
        if name == "listeners" || name == "advertised.listeners" {
            parse_listener_list(name, value)?;
        }
        if name == "listener.security.protocol.map" {
            parse_protocol_map(value)?;
        }
        self.properties.insert(name.to_string(), value.to_string());
        Ok(())
    }

    fn set_listener_scoped(
        &mut self,
        name: &str,
        rest: &str,
        value: &str,
    ) -> Result<(), ConfigError> {
        let unknown = || ConfigError::Unknown {
            name: name.to_string(),
        };
        let (listener, property) = rest.split_once('.').ok_or_else(unknown)?;
        if listener.is_empty() {
            return Err(unknown());
        }
        let (def, property) = match property.split_once('.') {
            Some((mechanism, per_mechanism))
                if LISTENER_MECHANISMS.contains(&mechanism.to_ascii_lowercase().as_str()) =>
            {
                let def = LISTENER_MECHANISM_PROPERTIES
                    .iter()
                    .find(|def| def.name == per_mechanism)
                    .ok_or_else(unknown)?;
                (
                    def,
                    format!("{}.{per_mechanism}", mechanism.to_ascii_lowercase()),
                )
            }
            _ if listener_scoped(property) => (
                broker_property_def(property).ok_or_else(unknown)?,
                property.to_string(),
            ),
            _ => return Err(unknown()),
        };
        validate_value(name, value, def.kind, def.min, def.choices)?;
        let key = format!("listener.name.{}.{property}", listener.to_ascii_lowercase());
        self.properties.insert(key, value.to_string());
        Ok(())
    }

    /// The statically set value of a property (`--set`, `--config`), if any.
    pub fn explicit(&self, name: &str) -> Option<&str> {
        self.properties.get(name).map(String::as_str)
    }

    /// A property as one listener sees it: its `listener.name.<listener>.` value, else the
    /// broker's.
    pub fn listener_property(&self, listener: &str, name: &str) -> Option<String> {
        let prefixed = format!("listener.name.{}.{name}", listener.to_ascii_lowercase());
        self.explicit(&prefixed)
            .or_else(|| self.value(name))
            .map(str::to_string)
    }

    /// A property's value in one layer.
    pub fn layer(&self, name: &str, source: ConfigSource) -> Option<&str> {
        match source {
            ConfigSource::DynamicBroker => self.dynamic.broker.get(name).map(String::as_str),
            ConfigSource::DynamicDefault => {
                self.dynamic.cluster_default.get(name).map(String::as_str)
            }
            ConfigSource::Static => self.explicit(name),
            ConfigSource::Default => broker_property_def(name).and_then(|def| def.default),
        }
    }

    /// A property's most specific value and the layer it comes from.
    pub fn lookup(&self, name: &str) -> Option<(&str, ConfigSource)> {
        ConfigSource::LAYERS
            .iter()
            .find_map(|source| self.layer(name, *source).map(|value| (value, *source)))
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.lookup(name).map(|(value, _)| value)
    }

    /// Kafka's synonyms of a broker property: the value of it and of the properties that
    /// stand for the same setting (`log.retention.{ms,minutes,hours}`, `log.roll.{ms,hours}`,
    /// `log.flush.interval.ms` with `log.flush.scheduler.interval.ms`) in each layer, the most
    /// specific layer first, from the first entry that names `name` itself.
    pub fn synonyms(&self, name: &str) -> Vec<(String, String, ConfigSource)> {
        let chain = synonym_chain(name);
        let mut synonyms = Vec::new();
        for source in ConfigSource::LAYERS {
            for synonym in &chain {
                if let Some(value) = self.layer(synonym, source) {
                    synonyms.push((synonym.to_string(), value.to_string(), source));
                }
            }
        }
        let first = synonyms
            .iter()
            .position(|(synonym, _, _)| synonym == name)
            .unwrap_or(synonyms.len());
        synonyms.split_off(first)
    }

    /// A whole-number property: set, else the table's default (`None` if neither parses).
    pub fn long(&self, name: &str) -> Option<i64> {
        self.value(name).and_then(|value| value.trim().parse().ok())
    }

    /// A whole-number property, `fallback` when unset and without a default.
    pub fn long_or(&self, name: &str, fallback: i64) -> i64 {
        self.long(name).unwrap_or(fallback)
    }

    /// A boolean property: set or defaulted to `true`.
    pub fn boolean(&self, name: &str) -> bool {
        self.value(name) == Some("true")
    }

    pub fn node_id(&self) -> i32 {
        self.explicit("broker.id")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| self.long_or("node.id", 1) as i32)
    }

    /// `controller.quorum.voters` (`id@host:port,…`): empty when the broker runs alone.
    pub fn quorum_voters(&self) -> BTreeMap<u64, String> {
        self.explicit("controller.quorum.voters")
            .and_then(|list| parse_quorum_voters(list).ok())
            .unwrap_or_default()
    }

    /// This node's part in the metadata quorum: `process.roles` when set (it must agree with
    /// whether `node.id` is among `controller.quorum.voters`), else a voter exactly when listed.
    pub fn quorum_role(&self) -> Result<QuorumRole, ConfigError> {
        let node_id = self.node_id() as u64;
        let voters = self.quorum_voters();
        let listed = voters.contains_key(&node_id);
        let Some(roles) = self.explicit("process.roles") else {
            return Ok(if listed {
                QuorumRole::Voter
            } else {
                QuorumRole::Observer
            });
        };
        let role = parse_process_roles(roles)?;
        let contradiction = match role {
            QuorumRole::Voter if !listed => Some(format!(
                "node {node_id} has the controller role but is not in controller.quorum.voters"
            )),
            QuorumRole::Observer if listed => Some(format!(
                "node {node_id} is in controller.quorum.voters, so it votes: its roles must \
                 include controller"
            )),
            _ => None,
        };
        match contradiction {
            Some(reason) => Err(ConfigError::InvalidValue {
                name: "process.roles".into(),
                value: roles.to_string(),
                reason,
            }),
            None => Ok(role),
        }
    }

    /// `controller.listener.names`, upper-cased.
    fn controller_listener_names(&self) -> Vec<String> {
        self.explicit("controller.listener.names")
            .unwrap_or("")
            .split(',')
            .map(|name| name.trim().to_ascii_uppercase())
            .filter(|name| !name.is_empty())
            .collect()
    }

    /// The client listeners: those of `listeners` (controller listeners left out), else one
    /// PLAINTEXT listener named PLAINTEXT on `--listen`, advertised as `--advertised-listener`.
    pub fn client_listeners(&self) -> Result<Vec<Listener>, ConfigError> {
        let Some(listeners) = self.explicit("listeners") else {
            return Ok(vec![Listener {
                name: "PLAINTEXT".into(),
                protocol: SecurityProtocol::Plaintext,
                bind: self.listen,
                advertised: self.advertised_listener.clone(),
            }]);
        };
        let protocol_map = self.value("listener.security.protocol.map").unwrap_or("");
        client_listeners(
            listeners,
            self.explicit("advertised.listeners"),
            protocol_map,
            &self.controller_listener_names(),
        )
    }

    /// `inter.broker.listener.name`: the listener other brokers reach this one on (replica
    /// fetches, transaction markers). Unset: the listener named as `security.inter.broker.protocol`
    /// (Kafka's rule), and without that PLAINTEXT if there is one, else the first. Setting both
    /// is refused, as Kafka does.
    pub fn inter_broker_listener(&self) -> Result<Listener, ConfigError> {
        let listeners = self.client_listeners()?;
        let by_name = self.explicit("inter.broker.listener.name");
        let by_protocol = self.explicit("security.inter.broker.protocol");
        if let (Some(_), Some(protocol)) = (by_name, by_protocol) {
            return Err(ConfigError::InvalidValue {
                name: "security.inter.broker.protocol".into(),
                value: protocol.to_string(),
                reason: "only one of inter.broker.listener.name and \
                         security.inter.broker.protocol may be set"
                    .into(),
            });
        }
        let wanted = by_name
            .or(by_protocol)
            .map(|name| name.trim().to_ascii_uppercase());
        let found = match &wanted {
            Some(name) => listeners.iter().find(|listener| listener.name == *name),
            None => listeners
                .iter()
                .find(|listener| listener.name == "PLAINTEXT")
                .or(listeners.first()),
        };
        let property = match by_name {
            Some(_) => "inter.broker.listener.name",
            None => "security.inter.broker.protocol",
        };
        found.cloned().ok_or_else(|| ConfigError::InvalidValue {
            name: property.into(),
            value: wanted.unwrap_or_default(),
            reason: "names no client listener of listeners".into(),
        })
    }

    /// `quota.window.size.seconds`: the length of one sample window of client quotas.
    pub fn quota_window_size_seconds(&self) -> i64 {
        self.long_or("quota.window.size.seconds", 1).max(1)
    }

    /// `quota.window.num`: how many sample windows a client quota's rate is measured over.
    pub fn quota_window_num(&self) -> usize {
        self.long_or("quota.window.num", 11).clamp(2, 1000) as usize
    }

    /// `offset.metadata.max.bytes`: a committed offset's metadata longer than this is refused
    /// (OFFSET_METADATA_TOO_LARGE).
    pub fn offset_metadata_max_bytes(&self) -> usize {
        self.long_or("offset.metadata.max.bytes", 4096).max(0) as usize
    }

    /// The controller listener's name and security protocol: the first of
    /// `controller.listener.names` (CONTROLLER when unset) and its protocol in
    /// `listener.security.protocol.map`, PLAINTEXT when the map does not name it. Weir's
    /// controller listener speaks its own Raft frames, so it is PLAINTEXT or SSL (SASL is
    /// refused: brokers and controllers prove who they are by certificate there).
    pub fn controller_listener(&self) -> Result<(String, SecurityProtocol), ConfigError> {
        let name = self
            .controller_listener_names()
            .into_iter()
            .next()
            .unwrap_or_else(|| "CONTROLLER".to_string());
        let map = parse_protocol_map(self.value("listener.security.protocol.map").unwrap_or(""))?;
        let protocol = map
            .iter()
            .find(|(mapped, _)| *mapped == name)
            .map_or(SecurityProtocol::Plaintext, |(_, protocol)| *protocol);
        match protocol {
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => {
                Err(ConfigError::Unsupported {
                    name: "listener.security.protocol.map".into(),
                    reason: format!(
                        "controller listener {name} is {}: Weir's controller listener takes \
                         PLAINTEXT or SSL (with ssl.client.auth=required, brokers and \
                         controllers prove who they are by certificate)",
                        protocol.name()
                    ),
                })
            }
            _ => Ok((name, protocol)),
        }
    }

    /// The controller listener's address: `--controller-listen`, else the listener of
    /// `listeners` that `controller.listener.names` names.
    pub fn controller_address(&self) -> Result<Option<SocketAddr>, ConfigError> {
        if let Some(address) = self.controller_listen {
            return Ok(Some(address));
        }
        let names = self.controller_listener_names();
        let Some(listeners) = self.explicit("listeners") else {
            return Ok(None);
        };
        let parsed = parse_listener_list("listeners", listeners)?;
        let Some((_, host, port)) = parsed.iter().find(|(name, _, _)| names.contains(name)) else {
            return Ok(None);
        };
        Ok(bind_address(host, *port))
    }

    pub fn election_timeout_ms(&self) -> u64 {
        self.long_or("controller.quorum.election.timeout.ms", 1000)
            .max(10) as u64
    }

    pub fn broker_heartbeat_interval_ms(&self) -> u64 {
        self.long_or("broker.heartbeat.interval.ms", 2000).max(1) as u64
    }

    pub fn num_partitions(&self) -> i32 {
        self.long_or("num.partitions", 1) as i32
    }

    pub fn auto_create_topics_enable(&self) -> bool {
        self.boolean("auto.create.topics.enable")
    }

    pub fn delete_topic_enable(&self) -> bool {
        self.boolean("delete.topic.enable")
    }

    pub fn retention_check_interval_ms(&self) -> u64 {
        self.long_or("log.retention.check.interval.ms", 300_000)
            .max(1) as u64
    }

    pub fn socket_request_max_bytes(&self) -> usize {
        self.long_or("socket.request.max.bytes", 104_857_600).max(1) as usize
    }

    /// `queued.max.request.bytes`: the request bytes all connections may hold at once, `None`
    /// for no bound (`-1` or `0`, Kafka's default). Explicit values below
    /// `socket.request.max.bytes` are refused, as Kafka does, since a largest request could
    /// never be read.
    pub fn queued_max_request_bytes(&self) -> Result<Option<usize>, ConfigError> {
        let largest_request = self.socket_request_max_bytes();
        let Some(explicit) = self.explicit("queued.max.request.bytes") else {
            let default: usize = DEFAULT_QUEUED_MAX_REQUEST_BYTES
                .parse()
                .unwrap_or(usize::MAX);
            return Ok(Some(default.max(largest_request)));
        };
        let bytes = explicit.trim().parse::<i64>().unwrap_or(-1);
        if bytes <= 0 {
            return Ok(None);
        }
        if (bytes as u64) < largest_request as u64 {
            return Err(ConfigError::InvalidValue {
                name: "queued.max.request.bytes".into(),
                value: explicit.to_string(),
                reason: format!(
                    "must be at least socket.request.max.bytes ({largest_request}), or -1 for \
                     no bound"
                ),
            });
        }
        Ok(Some(bytes as usize))
    }

    /// `max.connections`: open client connections; the listener stops accepting at the limit.
    pub fn max_connections(&self) -> usize {
        self.long_or("max.connections", i32::MAX as i64).max(0) as usize
    }

    /// `max.connections.per.ip` and its overrides (hosts not yet resolved).
    pub fn max_connections_per_ip(&self) -> Result<(usize, Vec<(String, usize)>), ConfigError> {
        let default = self
            .long_or("max.connections.per.ip", i32::MAX as i64)
            .max(0) as usize;
        let overrides = parse_connection_overrides(
            self.value("max.connections.per.ip.overrides").unwrap_or(""),
        )?;
        if default == 0 && overrides.is_empty() {
            return Err(ConfigError::InvalidValue {
                name: "max.connections.per.ip".into(),
                value: "0".into(),
                reason: "can be zero only when max.connections.per.ip.overrides is set".into(),
            });
        }
        Ok((default, overrides))
    }

    pub fn fetch_max_bytes(&self) -> i32 {
        self.long_or("fetch.max.bytes", 57_671_680) as i32
    }

    /// How many fetch sessions (KIP-227) the broker keeps (Kafka's default 1000).
    pub fn max_incremental_fetch_session_cache_slots(&self) -> usize {
        self.long_or("max.incremental.fetch.session.cache.slots", 1000)
            .clamp(0, i32::MAX as i64) as usize
    }

    pub fn offsets_retention_ms(&self) -> i64 {
        self.long_or("offsets.retention.minutes", 10_080)
            .saturating_mul(60_000)
    }

    pub fn offsets_retention_check_interval_ms(&self) -> u64 {
        self.long_or("offsets.retention.check.interval.ms", 600_000)
            .max(1) as u64
    }

    /// Replicas of `__consumer_offsets` in a cluster (created once that many brokers are live).
    pub fn offsets_topic_replication_factor(&self) -> i32 {
        self.long_or("offsets.topic.replication.factor", 3) as i32
    }

    pub fn offsets_topic_partitions(&self) -> i32 {
        self.long_or("offsets.topic.num.partitions", 50) as i32
    }

    /// How often open transactions are checked against their timeout.
    pub fn transaction_abort_check_interval_ms(&self) -> u64 {
        self.long_or(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            10_000,
        )
        .max(1) as u64
    }

    /// (`producer.id.expiration.ms`, `producer.id.expiration.check.interval.ms`)
    pub fn producer_expiration(&self) -> (i64, u64) {
        (
            self.long_or("producer.id.expiration.ms", 86_400_000),
            self.long_or("producer.id.expiration.check.interval.ms", 600_000)
                .max(1) as u64,
        )
    }

    pub fn offsets_topic_segment_bytes(&self) -> i64 {
        self.long_or("offsets.topic.segment.bytes", 104_857_600)
    }

    pub fn flush_scheduler_interval_ms(&self) -> i64 {
        self.long_or("log.flush.scheduler.interval.ms", i64::MAX)
    }

    /// The broker-level default of a topic config: its broker synonym's most specific value
    /// (for `retention.ms`, `segment.ms` and `flush.ms` the first of their synonyms that has
    /// one, scaled to milliseconds), else the topic config's own default.
    pub fn topic_default(&self, def: &TopicConfigDef) -> String {
        let scaled = |name: &str, factor: i64| {
            self.value(name)
                .and_then(|value| value.trim().parse::<i64>().ok())
                .map(|value| value.saturating_mul(factor).to_string())
        };
        let resolved = match def.name {
            "retention.ms" => scaled("log.retention.ms", 1)
                .or_else(|| scaled("log.retention.minutes", 60_000))
                .or_else(|| scaled("log.retention.hours", 3_600_000)),
            "segment.ms" => {
                scaled("log.roll.ms", 1).or_else(|| scaled("log.roll.hours", 3_600_000))
            }
            "flush.ms" => scaled("log.flush.interval.ms", 1)
                .or_else(|| scaled("log.flush.scheduler.interval.ms", 1)),
            _ => def
                .broker_synonym
                .and_then(|synonym| self.value(synonym))
                .map(str::to_string),
        };
        resolved.unwrap_or_else(|| def.default.to_string())
    }

    /// The effective configuration of a topic with these overrides.
    pub fn log_config(&self, overrides: &BTreeMap<String, String>) -> LogConfig {
        let get = |name: &str| -> String {
            overrides.get(name).cloned().unwrap_or_else(|| {
                topic_config_def(name)
                    .map(|def| self.topic_default(def))
                    .unwrap_or_default()
            })
        };
        let long = |name: &str, fallback: i64| get(name).trim().parse().unwrap_or(fallback);
        let cleanup_policy = get("cleanup.policy");
        let policies: Vec<&str> = cleanup_policy.split(',').map(str::trim).collect();
        LogConfig {
            retention_ms: long("retention.ms", 604_800_000),
            retention_bytes: long("retention.bytes", -1),
            segment_bytes: long("segment.bytes", 1 << 30).max(14) as u64,
            segment_ms: long("segment.ms", 604_800_000).max(1),
            max_message_bytes: long("max.message.bytes", 1_048_588).max(0) as usize,
            log_append_time: get("message.timestamp.type") == "LogAppendTime",
            timestamp_before_max_ms: long("message.timestamp.before.max.ms", i64::MAX).max(0),
            timestamp_after_max_ms: long("message.timestamp.after.max.ms", 3_600_000).max(0),
            flush_messages: long("flush.messages", i64::MAX).max(1),
            flush_ms: long("flush.ms", i64::MAX).max(0),
            flush_on_ack: get("flush.on.ack") == "true",
            index_interval_bytes: long("index.interval.bytes", 4096).max(0) as u64,
            file_delete_delay_ms: long("file.delete.delay.ms", 60_000).max(0) as u64,
            compact: policies.contains(&"compact"),
            delete: policies.contains(&"delete"),
            delete_retention_ms: long("delete.retention.ms", 86_400_000).max(0),
            min_cleanable_dirty_ratio: get("min.cleanable.dirty.ratio")
                .trim()
                .parse()
                .unwrap_or(0.5),
            min_compaction_lag_ms: long("min.compaction.lag.ms", 0).max(0),
            max_compaction_lag_ms: long("max.compaction.lag.ms", i64::MAX).max(1),
            min_insync_replicas: long("min.insync.replicas", 1).max(1) as usize,
            compression: compression(&get("compression.type"), |name, fallback| {
                long(name, fallback) as i32
            }),
        }
    }
}

/// The properties that stand for one setting with `name` (Kafka's broker config synonyms).
fn synonym_chain(name: &str) -> Vec<&str> {
    const RETENTION: [&str; 3] = [
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    ];
    const ROLL: [&str; 2] = ["log.roll.ms", "log.roll.hours"];
    if RETENTION.contains(&name) {
        return RETENTION.to_vec();
    }
    if ROLL.contains(&name) {
        return ROLL.to_vec();
    }
    if name == "log.flush.interval.ms" {
        return vec![name, "log.flush.scheduler.interval.ms"];
    }
    vec![name]
}

/// A validated `compression.type` and the level its codec's config names.
fn compression(name: &str, level: impl Fn(&str, i64) -> i32) -> TopicCompression {
    match name.trim() {
        "uncompressed" => TopicCompression::Uncompressed,
        "gzip" => TopicCompression::Gzip {
            level: level(GZIP_LEVEL, -1),
        },
        "snappy" => TopicCompression::Snappy,
        "lz4" => TopicCompression::Lz4 {
            level: level(LZ4_LEVEL, 9),
        },
        "zstd" => TopicCompression::Zstd {
            level: level(ZSTD_LEVEL, 3),
        },
        _ => TopicCompression::Producer,
    }
}
