//! The property tables — every broker property and topic config Weir accepts, with Kafka's
//! defaults and bounds — and the validation of a value against its entry.

use super::ConfigError;

/// Value types of configuration properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean,
    Int,
    Long,
    Double,
    String,
    List,
    /// A secret (inline keys, passwords): never shown by DescribeConfigs.
    Password,
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
            ConfigType::Password => 9,
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

/// `queued.max.request.bytes` when unset: 256 MiB (raised to `socket.request.max.bytes` if that
/// is larger, so that a largest request always fits).
pub(super) const DEFAULT_QUEUED_MAX_REQUEST_BYTES: &str = "268435456";

/// Kafka properties Weir refuses, with the reason (they would otherwise be silently ignored).
pub(super) const REFUSED_PROPERTIES: &[(&str, &str)] = &[
    (
        "queued.max.requests",
        "Weir has no queue between network and request threads: each connection handles its \
         own requests in order. Bound request memory with queued.max.request.bytes",
    ),
    ("log.dir", DATA_DIR_ONLY),
    ("log.dirs", DATA_DIR_ONLY),
    ("metadata.log.dir", DATA_DIR_ONLY),
    (
        "sasl.jaas.config",
        "set it per listener and mechanism: listener.name.<listener>.<mechanism>.sasl.jaas.config",
    ),
    (
        "sasl.server.callback.handler.class",
        "Weir loads no Java classes; OAUTHBEARER tokens are checked with \
         listener.name.<listener>.oauthbearer.sasl.oauthbearer.* settings",
    ),
    (
        "controller.quorum.bootstrap.servers",
        "dynamic quorums (KIP-853) are not supported: list the voters in controller.quorum.voters",
    ),
];

const DATA_DIR_ONLY: &str = "Weir keeps every log and the cluster metadata in one data directory: \
    give it with --data-dir (this setting would otherwise be ignored)";

/// Kafka properties Weir accepts that change nothing here, with the reason (COMPATIBILITY.md
/// lists them). Every other property in the tables takes effect: `config::read_tests` fails when
/// one is neither read outside the tables nor named here.
pub const ACCEPTED_WITHOUT_EFFECT: &[(&str, &str)] = &[];

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
/// `compression.type`: `producer` keeps batches as producers compressed them; any other value
/// recompresses batches on append to that codec (KIP-390 levels below).
const COMPRESSION_TYPES: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];
/// KIP-390's compression levels, Kafka's defaults and valid ranges (gzip also takes -1, zlib's
/// default level).
pub(super) const GZIP_LEVEL: &str = "compression.gzip.level";
pub(super) const LZ4_LEVEL: &str = "compression.lz4.level";
pub(super) const ZSTD_LEVEL: &str = "compression.zstd.level";
const GZIP_LEVELS: std::ops::RangeInclusive<i64> = 1..=9;
const LZ4_LEVELS: std::ops::RangeInclusive<i64> = 1..=17;
const ZSTD_LEVELS: std::ops::RangeInclusive<i64> = -131_072..=22;

/// Properties a SASL listener takes per mechanism, as
/// `listener.name.<listener>.<mechanism>.<property>` (Kafka's only form for the JAAS entry).
pub(super) const LISTENER_MECHANISM_PROPERTIES: &[PropertyDef] = &[
    prop_unset("sasl.jaas.config", ConfigType::Password),
    prop_min("connections.max.reauth.ms", ConfigType::Long, "0", 0),
    // OAUTHBEARER: Kafka's JWKS validator is the one accepted (see security::oauth).
    prop_unset("sasl.server.callback.handler.class", ConfigType::String),
    prop_unset("sasl.oauthbearer.jwks.endpoint.url", ConfigType::String),
    prop_unset("sasl.oauthbearer.expected.audience", ConfigType::List),
    prop_unset("sasl.oauthbearer.expected.issuer", ConfigType::String),
    prop("sasl.oauthbearer.sub.claim.name", ConfigType::String, "sub"),
    prop(
        "sasl.oauthbearer.scope.claim.name",
        ConfigType::String,
        "scope",
    ),
    prop_min(
        "sasl.oauthbearer.clock.skew.seconds",
        ConfigType::Int,
        "30",
        0,
    ),
    prop_min(
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        ConfigType::Long,
        "3600000",
        1,
    ),
];

/// Mechanism names as they appear, lower-cased, in those properties' names.
pub(super) const LISTENER_MECHANISMS: &[&str] = &[
    "plain",
    "scram-sha-256",
    "scram-sha-512",
    "oauthbearer",
    "gssapi",
];

/// Broker properties a listener may set for itself as `listener.name.<listener>.<property>`.
pub(super) fn listener_scoped(property: &str) -> bool {
    property.starts_with("ssl.")
        || matches!(
            property,
            "sasl.enabled.mechanisms"
                | "connections.max.reauth.ms"
                | "sasl.server.max.receive.size"
        )
}

/// Every broker property Weir accepts, with Kafka's defaults.
pub const BROKER_PROPERTIES: &[PropertyDef] = &[
    prop_min("node.id", ConfigType::Int, "1", 0),
    // Named listeners (Kafka's): without `listeners`, one PLAINTEXT listener on --listen.
    prop_unset("listeners", ConfigType::List),
    prop_unset("advertised.listeners", ConfigType::List),
    prop(
        "listener.security.protocol.map",
        ConfigType::List,
        super::listeners::DEFAULT_PROTOCOL_MAP,
    ),
    prop_unset("inter.broker.listener.name", ConfigType::String),
    prop_choice(
        "security.inter.broker.protocol",
        "PLAINTEXT",
        &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
    ),
    prop_min("offset.metadata.max.bytes", ConfigType::Int, "4096", 0),
    prop_min("quota.window.num", ConfigType::Int, "11", 1),
    prop_min("quota.window.size.seconds", ConfigType::Int, "1", 1),
    prop_unset("controller.listener.names", ConfigType::List),
    // TLS of SSL listeners (PEM only), also per listener as listener.name.<name>.ssl.*.
    prop_choice("ssl.keystore.type", "PEM", &["PEM"]),
    prop_unset("ssl.keystore.location", ConfigType::String),
    // Weir's: the private key in a file of its own (ssl.keystore.location then the chain only).
    prop_unset("ssl.keystore.key.location", ConfigType::String),
    prop_unset("ssl.keystore.certificate.chain", ConfigType::Password),
    prop_unset("ssl.keystore.key", ConfigType::Password),
    prop_unset("ssl.key.password", ConfigType::Password),
    prop_choice("ssl.truststore.type", "PEM", &["PEM"]),
    // How a client certificate's subject becomes the principal's name (Kafka's rules).
    prop("ssl.principal.mapping.rules", ConfigType::String, "DEFAULT"),
    prop_unset("ssl.truststore.location", ConfigType::String),
    // Whether this broker checks the host name in other brokers' and controllers' certificates.
    prop(
        "ssl.endpoint.identification.algorithm",
        ConfigType::String,
        "https",
    ),
    prop_unset("ssl.truststore.certificates", ConfigType::Password),
    prop_choice(
        "ssl.client.auth",
        "none",
        &["none", "requested", "required"],
    ),
    PropertyDef {
        name: "ssl.enabled.protocols",
        kind: ConfigType::List,
        default: Some("TLSv1.2,TLSv1.3"),
        min: None,
        choices: &["TLSv1.2", "TLSv1.3"],
    },
    // Unset: rustls' suites, in the client's order of preference.
    prop_unset("ssl.cipher.suites", ConfigType::List),
    // SASL listeners (also per listener as listener.name.<name>.…; a mechanism's JAAS entry and
    // re-authentication bound as listener.name.<name>.<mechanism>.…, see `LISTENER_MECHANISM`).
    prop("sasl.enabled.mechanisms", ConfigType::List, "GSSAPI"),
    prop(
        "sasl.mechanism.inter.broker.protocol",
        ConfigType::String,
        "GSSAPI",
    ),
    prop_min("connections.max.reauth.ms", ConfigType::Long, "0", 0),
    prop_min("sasl.server.max.receive.size", ConfigType::Int, "524288", 1),
    // OAUTHBEARER (KIP-768), also per listener as listener.name.<l>.oauthbearer.<property>.
    prop_unset("sasl.oauthbearer.jwks.endpoint.url", ConfigType::String),
    prop_unset("sasl.oauthbearer.expected.audience", ConfigType::List),
    prop_unset("sasl.oauthbearer.expected.issuer", ConfigType::String),
    prop("sasl.oauthbearer.sub.claim.name", ConfigType::String, "sub"),
    prop(
        "sasl.oauthbearer.scope.claim.name",
        ConfigType::String,
        "scope",
    ),
    prop_min(
        "sasl.oauthbearer.clock.skew.seconds",
        ConfigType::Int,
        "30",
        0,
    ),
    prop_min(
        "sasl.oauthbearer.jwks.endpoint.refresh.ms",
        ConfigType::Long,
        "3600000",
        1,
    ),
    prop_min(
        "connection.failed.authentication.delay.ms",
        ConfigType::Int,
        "100",
        0,
    ),
    // Authorization: Kafka's StandardAuthorizer by its class name turns ACLs on.
    PropertyDef {
        name: "authorizer.class.name",
        kind: ConfigType::String,
        default: Some(""),
        min: None,
        choices: &[
            "",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ],
    },
    prop_unset("super.users", ConfigType::String),
    prop(
        "allow.everyone.if.no.acl.found",
        ConfigType::Boolean,
        "false",
    ),
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
    prop_min(
        "log.message.timestamp.before.max.ms",
        ConfigType::Long,
        LONG_MAX,
        0,
    ),
    prop_min(
        "log.message.timestamp.after.max.ms",
        ConfigType::Long,
        "3600000",
        0,
    ),
    PropertyDef {
        name: "log.cleanup.policy",
        kind: ConfigType::List,
        default: Some("delete"),
        min: None,
        choices: CLEANUP_POLICIES,
    },
    prop_choice("compression.type", "producer", COMPRESSION_TYPES),
    prop(GZIP_LEVEL, ConfigType::Int, "-1"),
    prop(LZ4_LEVEL, ConfigType::Int, "9"),
    prop(ZSTD_LEVEL, ConfigType::Int, "3"),
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
    // Kafka's default is -1 (no bound); Weir bounds request memory by default.
    prop_min(
        "queued.max.request.bytes",
        ConfigType::Long,
        DEFAULT_QUEUED_MAX_REQUEST_BYTES,
        -1,
    ),
    prop_min("max.connections", ConfigType::Int, "2147483647", 0),
    prop_min("max.connections.per.ip", ConfigType::Int, "2147483647", 0),
    prop("max.connections.per.ip.overrides", ConfigType::String, ""),
    prop_min("fetch.max.bytes", ConfigType::Int, "57671680", 0),
    prop_min(
        "max.incremental.fetch.session.cache.slots",
        ConfigType::Int,
        "1000",
        0,
    ),
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
        GZIP_LEVEL,
        Some(GZIP_LEVEL),
        ConfigType::Int,
        "-1",
        None,
        &[],
    ),
    topic(LZ4_LEVEL, Some(LZ4_LEVEL), ConfigType::Int, "9", None, &[]),
    topic(
        ZSTD_LEVEL,
        Some(ZSTD_LEVEL),
        ConfigType::Int,
        "3",
        None,
        &[],
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
        "message.timestamp.before.max.ms",
        Some("log.message.timestamp.before.max.ms"),
        ConfigType::Long,
        LONG_MAX,
        Some(0),
        &[],
    ),
    topic(
        "message.timestamp.after.max.ms",
        Some("log.message.timestamp.after.max.ms"),
        ConfigType::Long,
        "3600000",
        Some(0),
        &[],
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
    topic_config_defs().find(|def| def.name == name)
}

/// Every topic config: Weir's, then Kafka's that change nothing here (`kafka_only`).
pub fn topic_config_defs() -> impl Iterator<Item = &'static TopicConfigDef> {
    let kafka_only = super::kafka_only::KAFKA_ONLY_TOPIC
        .iter()
        .map(|only| &only.def);
    TOPIC_CONFIGS.iter().chain(kafka_only)
}

/// Every broker property: Weir's, then Kafka's that change nothing here (`kafka_only`).
pub fn broker_property_defs() -> impl Iterator<Item = &'static PropertyDef> {
    let kafka_only = super::kafka_only::KAFKA_ONLY_BROKER
        .iter()
        .map(|only| &only.def);
    BROKER_PROPERTIES.iter().chain(kafka_only)
}

pub(super) fn broker_property_def(name: &str) -> Option<&'static PropertyDef> {
    broker_property_defs().find(|def| def.name == name)
}

fn invalid(name: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        name: name.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// Checks a value against a type, a lower bound and a list of choices.
pub(super) fn validate_value(
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
            check_compression_level(name, number).map_err(|reason| invalid(name, value, reason))?;
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
        ConfigType::String | ConfigType::List | ConfigType::Password => {}
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

/// A KIP-390 level must be one its codec has.
fn check_compression_level(name: &str, level: i64) -> Result<(), String> {
    let (levels, default_allowed) = match name {
        GZIP_LEVEL => (GZIP_LEVELS, true),
        LZ4_LEVEL => (LZ4_LEVELS, false),
        ZSTD_LEVEL => (ZSTD_LEVELS, false),
        _ => return Ok(()),
    };
    if levels.contains(&level) || (default_allowed && level == -1) {
        return Ok(());
    }
    let (low, high) = (levels.start(), levels.end());
    Err(match default_allowed {
        true => format!("must be between {low} and {high}, or -1"),
        false => format!("must be between {low} and {high}"),
    })
}

/// Validates a topic config override (CreateTopics, AlterConfigs).
pub fn validate_topic_config(name: &str, value: &str) -> Result<(), ConfigError> {
    let def = topic_config_def(name).ok_or_else(|| ConfigError::Unknown {
        name: name.to_string(),
    })?;
    validate_value(name, value, def.kind, def.min, def.choices)?;
    super::kafka_only::check_topic_value(name, value)
}
