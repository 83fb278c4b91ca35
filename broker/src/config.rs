//! Broker and topic configuration, by Kafka's property names.
//!
//! Broker properties come from `--config FILE` (YAML map) and `--set name=value`; a name that is
//! not in [`BROKER_PROPERTIES`] is an error at start-up. Topic configs ([`TOPIC_CONFIGS`]) take
//! their defaults from the broker property that Kafka names as their synonym
//! (`retention.ms` ← `log.retention.ms` ← `log.retention.hours`), and per-topic overrides.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::error::ConfigError;

/// Value types of configuration properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean,
    Int,
    Long,
    Double,
    String,
    List,
}

impl ConfigType {
    /// The type code of DescribeConfigs v3+.
    pub fn describe_configs_type(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
        }
    }
}

/// One broker property: name, type, default and the valid range or choices.
pub struct PropertyDef {
    pub name: &'static str,
    pub kind: ConfigType,
    pub default: Option<&'static str>,
    pub min: Option<i64>,
    pub choices: &'static [&'static str],
}

const fn prop(name: &'static str, kind: ConfigType, default: &'static str) -> PropertyDef {
    PropertyDef {
        name,
        kind,
        default: Some(default),
        min: None,
        choices: &[],
    }
}

const fn prop_min(
    name: &'static str,
    kind: ConfigType,
    default: &'static str,
    min: i64,
) -> PropertyDef {
    PropertyDef {
        name,
        kind,
        default: Some(default),
        min: Some(min),
        choices: &[],
    }
}

const fn prop_unset(name: &'static str, kind: ConfigType) -> PropertyDef {
    PropertyDef {
        name,
        kind,
        default: None,
        min: None,
        choices: &[],
    }
}

const fn prop_choice(
    name: &'static str,
    default: &'static str,
    choices: &'static [&'static str],
) -> PropertyDef {
    PropertyDef {
        name,
        kind: ConfigType::String,
        default: Some(default),
        min: None,
        choices,
    }
}

/// Upper bound on the uncompressed size of one compressed batch when the broker decompresses it
/// (validation, timestamp search). Protects against decompression bombs.
pub const MAX_DECOMPRESSED_BATCH_BYTES: usize = 256 * 1024 * 1024;

const LONG_MAX: &str = "9223372036854775807";
const TIMESTAMP_TYPES: &[&str] = &["CreateTime", "LogAppendTime"];
const CLEANUP_POLICIES: &[&str] = &["delete", "compact"];
const COMPRESSION_TYPES: &[&str] = &["producer"];

/// Every broker property Weir accepts, with Kafka's defaults.
pub const BROKER_PROPERTIES: &[PropertyDef] = &[
    prop_min("node.id", ConfigType::Int, "1", 0),
    prop_unset("broker.id", ConfigType::Int),
    prop_unset("cluster.id", ConfigType::String),
    // Cluster mode (KRaft's names): without voters the broker runs alone.
    prop_unset("controller.quorum.voters", ConfigType::List),
    // `broker` (an observer of the metadata log) or `broker,controller` (a voter); unset: a
    // voter when node.id is among the voters, else an observer.
    prop_unset("process.roles", ConfigType::List),
    prop_min(
        "controller.quorum.election.timeout.ms",
        ConfigType::Int,
        "1000",
        10,
    ),
    prop_min("broker.heartbeat.interval.ms", ConfigType::Int, "2000", 1),
    prop_min("broker.session.timeout.ms", ConfigType::Int, "9000", 1),
    prop(
        "unclean.leader.election.enable",
        ConfigType::Boolean,
        "false",
    ),
    prop("auto.leader.rebalance.enable", ConfigType::Boolean, "true"),
    prop_min(
        "leader.imbalance.check.interval.seconds",
        ConfigType::Long,
        "300",
        1,
    ),
    // Replication between brokers (cluster mode).
    prop_min("replica.lag.time.max.ms", ConfigType::Long, "30000", 1),
    prop_min("replica.fetch.wait.max.ms", ConfigType::Int, "500", 0),
    prop_min("replica.fetch.max.bytes", ConfigType::Int, "1048576", 0),
    prop_min(
        "replica.fetch.response.max.bytes",
        ConfigType::Int,
        "10485760",
        0,
    ),
    prop_min("replica.fetch.backoff.ms", ConfigType::Int, "1000", 0),
    prop_min("replica.socket.timeout.ms", ConfigType::Int, "30000", 1),
    prop_min("num.partitions", ConfigType::Int, "1", 1),
    prop_min("default.replication.factor", ConfigType::Int, "1", 1),
    prop("auto.create.topics.enable", ConfigType::Boolean, "true"),
    prop("delete.topic.enable", ConfigType::Boolean, "true"),
    prop_min("min.insync.replicas", ConfigType::Int, "1", 1),
    prop_unset("log.retention.ms", ConfigType::Long),
    prop_unset("log.retention.minutes", ConfigType::Int),
    prop("log.retention.hours", ConfigType::Int, "168"),
    prop("log.retention.bytes", ConfigType::Long, "-1"),
    prop_min(
        "log.retention.check.interval.ms",
        ConfigType::Long,
        "300000",
        1,
    ),
    prop_min("log.segment.bytes", ConfigType::Int, "1073741824", 14),
    prop_unset("log.roll.ms", ConfigType::Long),
    prop("log.roll.hours", ConfigType::Int, "168"),
    prop_min("log.index.interval.bytes", ConfigType::Int, "4096", 0),
    prop_min("log.segment.delete.delay.ms", ConfigType::Long, "60000", 0),
    prop_min("message.max.bytes", ConfigType::Int, "1048588", 0),
    prop_choice("log.message.timestamp.type", "CreateTime", TIMESTAMP_TYPES),
    PropertyDef {
        name: "log.cleanup.policy",
        kind: ConfigType::List,
        default: Some("delete"),
        min: None,
        choices: CLEANUP_POLICIES,
    },
    prop_choice("compression.type", "producer", COMPRESSION_TYPES),
    prop("log.cleaner.enable", ConfigType::Boolean, "true"),
    prop_min("log.cleaner.backoff.ms", ConfigType::Long, "15000", 0),
    prop_min(
        "log.cleaner.dedupe.buffer.size",
        ConfigType::Long,
        "134217728",
        1024,
    ),
    prop_min(
        "log.cleaner.delete.retention.ms",
        ConfigType::Long,
        "86400000",
        0,
    ),
    prop("log.cleaner.min.cleanable.ratio", ConfigType::Double, "0.5"),
    prop_min(
        "log.cleaner.min.compaction.lag.ms",
        ConfigType::Long,
        "0",
        0,
    ),
    prop_min(
        "log.cleaner.max.compaction.lag.ms",
        ConfigType::Long,
        LONG_MAX,
        1,
    ),
    prop_min("log.flush.interval.messages", ConfigType::Long, LONG_MAX, 1),
    prop_unset("log.flush.interval.ms", ConfigType::Long),
    prop_min(
        "log.flush.scheduler.interval.ms",
        ConfigType::Long,
        LONG_MAX,
        1,
    ),
    prop("log.flush.on.ack", ConfigType::Boolean, "false"),
    prop_min("socket.request.max.bytes", ConfigType::Int, "104857600", 1),
    prop_min("queued.max.requests", ConfigType::Int, "500", 1),
    prop_min("fetch.max.bytes", ConfigType::Int, "57671680", 0),
    prop_min("connections.max.idle.ms", ConfigType::Long, "600000", 1),
    prop_min("group.min.session.timeout.ms", ConfigType::Int, "6000", 0),
    prop_min(
        "group.max.session.timeout.ms",
        ConfigType::Int,
        "1800000",
        0,
    ),
    prop_min(
        "group.initial.rebalance.delay.ms",
        ConfigType::Int,
        "3000",
        0,
    ),
    prop_min("group.max.size", ConfigType::Int, "2147483647", 1),
    prop_min(
        "transaction.state.log.num.partitions",
        ConfigType::Int,
        "50",
        1,
    ),
    prop_min(
        "transaction.state.log.segment.bytes",
        ConfigType::Int,
        "104857600",
        14,
    ),
    prop_min(
        "transaction.state.log.replication.factor",
        ConfigType::Int,
        "3",
        1,
    ),
    prop_min("transaction.state.log.min.isr", ConfigType::Int, "2", 1),
    prop_min("transaction.max.timeout.ms", ConfigType::Int, "900000", 1),
    prop_min(
        "transactional.id.expiration.ms",
        ConfigType::Int,
        "604800000",
        1,
    ),
    prop_min(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        ConfigType::Int,
        "10000",
        1,
    ),
    prop_min("producer.id.expiration.ms", ConfigType::Int, "86400000", 1),
    prop_min(
        "producer.id.expiration.check.interval.ms",
        ConfigType::Int,
        "600000",
        1,
    ),
    prop_min("offsets.topic.num.partitions", ConfigType::Int, "50", 1),
    prop_min("offsets.topic.replication.factor", ConfigType::Int, "3", 1),
    prop_min(
        "offsets.topic.segment.bytes",
        ConfigType::Int,
        "104857600",
        14,
    ),
    prop_min("offsets.retention.minutes", ConfigType::Int, "10080", 1),
    prop_min(
        "offsets.retention.check.interval.ms",
        ConfigType::Long,
        "600000",
        1,
    ),
];

/// One topic config: its name, the broker property that supplies its default, and its type.
pub struct TopicConfigDef {
    pub name: &'static str,
    pub broker_synonym: Option<&'static str>,
    pub kind: ConfigType,
    pub default: &'static str,
    pub min: Option<i64>,
    pub choices: &'static [&'static str],
}

const fn topic(
    name: &'static str,
    broker_synonym: Option<&'static str>,
    kind: ConfigType,
    default: &'static str,
    min: Option<i64>,
    choices: &'static [&'static str],
) -> TopicConfigDef {
    TopicConfigDef {
        name,
        broker_synonym,
        kind,
        default,
        min,
        choices,
    }
}

/// Every topic config Weir accepts. `default` is used when the broker synonym has no value.
pub const TOPIC_CONFIGS: &[TopicConfigDef] = &[
    topic(
        "cleanup.policy",
        Some("log.cleanup.policy"),
        ConfigType::List,
        "delete",
        None,
        CLEANUP_POLICIES,
    ),
    topic(
        "compression.type",
        Some("compression.type"),
        ConfigType::String,
        "producer",
        None,
        COMPRESSION_TYPES,
    ),
    topic(
        "delete.retention.ms",
        Some("log.cleaner.delete.retention.ms"),
        ConfigType::Long,
        "86400000",
        Some(0),
        &[],
    ),
    topic(
        "file.delete.delay.ms",
        Some("log.segment.delete.delay.ms"),
        ConfigType::Long,
        "60000",
        Some(0),
        &[],
    ),
    topic(
        "flush.messages",
        Some("log.flush.interval.messages"),
        ConfigType::Long,
        LONG_MAX,
        Some(1),
        &[],
    ),
    topic(
        "flush.ms",
        Some("log.flush.interval.ms"),
        ConfigType::Long,
        LONG_MAX,
        Some(0),
        &[],
    ),
    topic(
        "flush.on.ack",
        Some("log.flush.on.ack"),
        ConfigType::Boolean,
        "false",
        None,
        &[],
    ),
    topic(
        "index.interval.bytes",
        Some("log.index.interval.bytes"),
        ConfigType::Int,
        "4096",
        Some(0),
        &[],
    ),
    topic(
        "max.message.bytes",
        Some("message.max.bytes"),
        ConfigType::Int,
        "1048588",
        Some(0),
        &[],
    ),
    topic(
        "message.timestamp.type",
        Some("log.message.timestamp.type"),
        ConfigType::String,
        "CreateTime",
        None,
        TIMESTAMP_TYPES,
    ),
    topic(
        "max.compaction.lag.ms",
        Some("log.cleaner.max.compaction.lag.ms"),
        ConfigType::Long,
        LONG_MAX,
        Some(1),
        &[],
    ),
    topic(
        "min.cleanable.dirty.ratio",
        Some("log.cleaner.min.cleanable.ratio"),
        ConfigType::Double,
        "0.5",
        None,
        &[],
    ),
    topic(
        "min.compaction.lag.ms",
        Some("log.cleaner.min.compaction.lag.ms"),
        ConfigType::Long,
        "0",
        Some(0),
        &[],
    ),
    topic(
        "min.insync.replicas",
        Some("min.insync.replicas"),
        ConfigType::Int,
        "1",
        Some(1),
        &[],
    ),
    topic(
        "retention.bytes",
        Some("log.retention.bytes"),
        ConfigType::Long,
        "-1",
        None,
        &[],
    ),
    topic(
        "retention.ms",
        Some("log.retention.ms"),
        ConfigType::Long,
        "604800000",
        Some(-1),
        &[],
    ),
    topic(
        "segment.bytes",
        Some("log.segment.bytes"),
        ConfigType::Int,
        "1073741824",
        Some(14),
        &[],
    ),
    topic(
        "segment.ms",
        Some("log.roll.ms"),
        ConfigType::Long,
        "604800000",
        Some(1),
        &[],
    ),
];

pub fn topic_config_def(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|def| def.name == name)
}

fn broker_property_def(name: &str) -> Option<&'static PropertyDef> {
    BROKER_PROPERTIES.iter().find(|def| def.name == name)
}

fn invalid(name: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        name: name.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// Checks a value against a type, a lower bound and a list of choices.
fn validate_value(
    name: &str,
    value: &str,
    kind: ConfigType,
    min: Option<i64>,
    choices: &[&str],
) -> Result<(), ConfigError> {
    match kind {
        ConfigType::Boolean => {
            if !matches!(value, "true" | "false") {
                return Err(invalid(name, value, "expected true or false"));
            }
        }
        ConfigType::Int | ConfigType::Long => {
            let number: i64 = value
                .trim()
                .parse()
                .map_err(|_| invalid(name, value, "expected an integer"))?;
            if kind == ConfigType::Int && i32::try_from(number).is_err() {
                return Err(invalid(name, value, "out of range for a 32-bit integer"));
            }
            if let Some(min) = min {
                if number < min {
                    return Err(invalid(name, value, format!("must be at least {min}")));
                }
            }
        }
        ConfigType::Double => {
            let number = value
                .trim()
                .parse::<f64>()
                .map_err(|_| invalid(name, value, "expected a number"))?;
            // The only doubles are dirty ratios, which Kafka bounds to [0, 1].
            if !(0.0..=1.0).contains(&number) {
                return Err(invalid(name, value, "must be between 0 and 1"));
            }
        }
        ConfigType::String | ConfigType::List => {}
    }
    if !choices.is_empty() {
        let items: Vec<&str> = if kind == ConfigType::List {
            value.split(',').map(str::trim).collect()
        } else {
            vec![value]
        };
        for item in items {
            if !choices.contains(&item) {
                return Err(invalid(
                    name,
                    value,
                    format!("supported values: {}", choices.join(", ")),
                ));
            }
        }
    }
    Ok(())
}

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

/// Validates a topic config override (CreateTopics, AlterConfigs).
pub fn validate_topic_config(name: &str, value: &str) -> Result<(), ConfigError> {
    let def = topic_config_def(name).ok_or_else(|| ConfigError::Unknown {
        name: name.to_string(),
    })?;
    validate_value(name, value, def.kind, def.min, def.choices)
}

/// The broker's configuration: where it listens and stores data, and its properties.
/// Kafka's `replica.*` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaSettings {
    /// An ISR member not caught up for this long is removed.
    pub lag_time_max_ms: i64,
    /// How long a follower's fetch waits at the leader for new data.
    pub fetch_wait_max_ms: i32,
    /// Bytes a follower asks for per partition.
    pub fetch_max_bytes: i32,
    /// Bytes a follower asks for per fetch.
    pub fetch_response_max_bytes: i32,
    /// Pause after a failed fetch before trying the leader again.
    pub fetch_backoff_ms: u64,
    /// Time allowed for connecting to a leader and for each fetch round trip beyond its wait.
    pub socket_timeout_ms: u64,
}

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
        }
    }

    /// Sets a broker property by its Kafka name, validating name and value.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        let def = broker_property_def(name).ok_or_else(|| ConfigError::Unknown {
            name: name.to_string(),
        })?;
        validate_value(name, value, def.kind, def.min, def.choices)?;
        if name == "controller.quorum.voters" {
            parse_quorum_voters(value)?;
        }
        if name == "process.roles" {
            parse_process_roles(value)?;
        }
        self.properties.insert(name.to_string(), value.to_string());
        Ok(())
    }

    /// The explicitly set value of a property, if any.
    pub fn explicit(&self, name: &str) -> Option<&str> {
        self.properties.get(name).map(String::as_str)
    }

    fn value(&self, name: &str) -> Option<&str> {
        self.explicit(name)
            .or_else(|| broker_property_def(name).and_then(|def| def.default))
    }

    fn long(&self, name: &str) -> Option<i64> {
        self.value(name).and_then(|value| value.trim().parse().ok())
    }

    fn long_or(&self, name: &str, fallback: i64) -> i64 {
        self.long(name).unwrap_or(fallback)
    }

    fn boolean(&self, name: &str) -> bool {
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

    pub fn election_timeout_ms(&self) -> u64 {
        self.long_or("controller.quorum.election.timeout.ms", 1000)
            .max(10) as u64
    }

    pub fn broker_heartbeat_interval_ms(&self) -> u64 {
        self.long_or("broker.heartbeat.interval.ms", 2000).max(1) as u64
    }

    /// What the active controller decides with.
    pub fn controller_config(&self) -> crate::cluster::ControllerConfig {
        crate::cluster::ControllerConfig {
            broker_session_timeout_ms: self.long_or("broker.session.timeout.ms", 9000),
            unclean_leader_election: self.boolean("unclean.leader.election.enable"),
            default_replication_factor: self.long_or("default.replication.factor", 1) as i32,
            cluster_id: self.explicit("cluster.id").map(str::to_string),
            leader_rebalance_interval_ms: self.boolean("auto.leader.rebalance.enable").then(|| {
                self.long_or("leader.imbalance.check.interval.seconds", 300)
                    .max(1)
                    * 1000
            }),
        }
    }

    /// How followers fetch and how long a leader waits for them.
    pub fn replica_settings(&self) -> ReplicaSettings {
        ReplicaSettings {
            lag_time_max_ms: self.long_or("replica.lag.time.max.ms", 30_000).max(1),
            fetch_wait_max_ms: self.long_or("replica.fetch.wait.max.ms", 500).max(0) as i32,
            fetch_max_bytes: self.long_or("replica.fetch.max.bytes", 1 << 20).max(0) as i32,
            fetch_response_max_bytes: self
                .long_or("replica.fetch.response.max.bytes", 10 << 20)
                .max(0) as i32,
            fetch_backoff_ms: self.long_or("replica.fetch.backoff.ms", 1000).max(0) as u64,
            socket_timeout_ms: self.long_or("replica.socket.timeout.ms", 30_000).max(1) as u64,
        }
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

    pub fn queued_max_requests(&self) -> usize {
        self.long_or("queued.max.requests", 500).max(1) as usize
    }

    pub fn fetch_max_bytes(&self) -> i32 {
        self.long_or("fetch.max.bytes", 57_671_680) as i32
    }

    pub fn group_limits(&self) -> crate::group::state::GroupLimits {
        crate::group::state::GroupLimits {
            min_session_timeout_ms: self.long_or("group.min.session.timeout.ms", 6000) as i32,
            max_session_timeout_ms: self.long_or("group.max.session.timeout.ms", 1_800_000) as i32,
            initial_rebalance_delay_ms: self.long_or("group.initial.rebalance.delay.ms", 3000),
            max_members: self.long_or("group.max.size", i32::MAX as i64) as usize,
        }
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

    /// The log cleaner: whether it runs, how long it sleeps when nothing is dirty enough and the
    /// memory its offset map may use.
    pub fn cleaner_settings(&self) -> crate::log::compaction::CleanerSettings {
        crate::log::compaction::CleanerSettings {
            enabled: self.boolean("log.cleaner.enable"),
            backoff_ms: self.long_or("log.cleaner.backoff.ms", 15_000).max(0) as u64,
            dedupe_buffer_bytes: self
                .long_or("log.cleaner.dedupe.buffer.size", 134_217_728)
                .max(1024) as usize,
        }
    }

    pub fn transaction_settings(&self) -> crate::transaction::TransactionSettings {
        crate::transaction::TransactionSettings {
            state_partitions: self.long_or("transaction.state.log.num.partitions", 50) as i32,
            state_segment_bytes: self.long_or("transaction.state.log.segment.bytes", 104_857_600),
            max_timeout_ms: self.long_or("transaction.max.timeout.ms", 900_000) as i32,
            id_expiration_ms: self.long_or("transactional.id.expiration.ms", 604_800_000),
            state_replication_factor: self.long_or("transaction.state.log.replication.factor", 3)
                as i32,
            state_min_isr: self.long_or("transaction.state.log.min.isr", 2) as i32,
        }
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

    /// The broker-level default of a topic config and whether it was set explicitly.
    pub fn topic_default(&self, def: &TopicConfigDef) -> (String, bool) {
        match def.name {
            "retention.ms" => {
                if let Some(ms) = self.explicit("log.retention.ms") {
                    return (ms.to_string(), true);
                }
                if let Some(minutes) = self.explicit("log.retention.minutes") {
                    let ms = minutes.parse::<i64>().unwrap_or(0).saturating_mul(60_000);
                    return (ms.to_string(), true);
                }
                let hours = self.long_or("log.retention.hours", 168);
                let explicit = self.explicit("log.retention.hours").is_some();
                return (hours.saturating_mul(3_600_000).to_string(), explicit);
            }
            "segment.ms" => {
                if let Some(ms) = self.explicit("log.roll.ms") {
                    return (ms.to_string(), true);
                }
                let hours = self.long_or("log.roll.hours", 168);
                let explicit = self.explicit("log.roll.hours").is_some();
                return (hours.saturating_mul(3_600_000).to_string(), explicit);
            }
            "flush.ms" => {
                if let Some(ms) = self.explicit("log.flush.interval.ms") {
                    return (ms.to_string(), true);
                }
                return (self.flush_scheduler_interval_ms().to_string(), false);
            }
            _ => {}
        }
        match def.broker_synonym {
            Some(synonym) => match self.explicit(synonym) {
                Some(value) => (value.to_string(), true),
                None => (
                    self.value(synonym).unwrap_or(def.default).to_string(),
                    false,
                ),
            },
            None => (def.default.to_string(), false),
        }
    }

    /// The effective configuration of a topic with these overrides.
    pub fn log_config(&self, overrides: &BTreeMap<String, String>) -> LogConfig {
        let get = |name: &str| -> String {
            overrides.get(name).cloned().unwrap_or_else(|| {
                topic_config_def(name)
                    .map(|def| self.topic_default(def).0)
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
        }
    }
}

/// The effective, typed configuration of one topic's logs.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    pub retention_ms: i64,
    pub retention_bytes: i64,
    pub segment_bytes: u64,
    pub segment_ms: i64,
    pub max_message_bytes: usize,
    pub log_append_time: bool,
    pub flush_messages: i64,
    pub flush_ms: i64,
    pub flush_on_ack: bool,
    pub index_interval_bytes: u64,
    pub file_delete_delay_ms: u64,
    /// `cleanup.policy` has `compact`: the cleaner keeps the latest record per key.
    pub compact: bool,
    /// `cleanup.policy` has `delete`: `retention.ms`/`retention.bytes` remove old segments.
    pub delete: bool,
    pub delete_retention_ms: i64,
    pub min_cleanable_dirty_ratio: f64,
    pub min_compaction_lag_ms: i64,
    pub max_compaction_lag_ms: i64,
    /// `acks=all` needs at least this many in-sync replicas.
    pub min_insync_replicas: usize,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            retention_ms: 604_800_000,
            retention_bytes: -1,
            segment_bytes: 1 << 30,
            segment_ms: 604_800_000,
            max_message_bytes: 1_048_588,
            log_append_time: false,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            flush_on_ack: false,
            index_interval_bytes: 4096,
            file_delete_delay_ms: 60_000,
            compact: false,
            delete: true,
            delete_retention_ms: 86_400_000,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_insync_replicas: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> BrokerConfig {
        BrokerConfig::new("127.0.0.1:0".parse().unwrap(), PathBuf::from("/tmp/x"))
    }

    #[test]
    fn unknown_broker_property_is_rejected() {
        let error = config().set("log.retention.hourz", "1").unwrap_err();
        assert_eq!(
            error,
            ConfigError::Unknown {
                name: "log.retention.hourz".into()
            }
        );
    }

    #[test]
    fn retention_precedence_follows_kafka() {
        let mut broker = config();
        let empty = BTreeMap::new();
        assert_eq!(broker.log_config(&empty).retention_ms, 168 * 3_600_000);
        broker.set("log.retention.hours", "1").unwrap();
        assert_eq!(broker.log_config(&empty).retention_ms, 3_600_000);
        broker.set("log.retention.minutes", "2").unwrap();
        assert_eq!(broker.log_config(&empty).retention_ms, 120_000);
        broker.set("log.retention.ms", "5").unwrap();
        assert_eq!(broker.log_config(&empty).retention_ms, 5);
        let overrides = BTreeMap::from([("retention.ms".to_string(), "7".to_string())]);
        assert_eq!(broker.log_config(&overrides).retention_ms, 7);
    }

    #[test]
    fn bad_values_are_rejected_with_reason() {
        let mut broker = config();
        assert!(broker.set("num.partitions", "0").is_err());
        assert!(broker.set("num.partitions", "x").is_err());
        assert!(broker.set("auto.create.topics.enable", "yes").is_err());
        assert!(validate_topic_config("message.timestamp.type", "Wall").is_err());
        assert!(validate_topic_config("no.such.config", "1").is_err());
        validate_topic_config("message.timestamp.type", "LogAppendTime").unwrap();
    }

    #[test]
    fn quorum_role_follows_the_voters_unless_process_roles_says_otherwise() {
        let mut broker = config();
        broker
            .set("controller.quorum.voters", "1@h:9093,2@h:9193")
            .unwrap();
        broker.set("node.id", "2").unwrap();
        assert_eq!(broker.quorum_role(), Ok(QuorumRole::Voter));
        broker.set("node.id", "4").unwrap();
        assert_eq!(broker.quorum_role(), Ok(QuorumRole::Observer));
        broker.set("process.roles", "broker").unwrap();
        assert_eq!(broker.quorum_role(), Ok(QuorumRole::Observer));
        broker.set("process.roles", "controller, broker").unwrap();
        assert!(
            broker.quorum_role().is_err(),
            "a controller must be a voter"
        );
        broker.set("node.id", "1").unwrap();
        assert_eq!(broker.quorum_role(), Ok(QuorumRole::Voter));
        broker.set("process.roles", "broker").unwrap();
        assert!(
            broker.quorum_role().is_err(),
            "a listed voter must be a controller"
        );
        assert!(broker.set("process.roles", "controller").is_err());
        assert!(broker.set("process.roles", "broker,zookeeper").is_err());
    }
}
