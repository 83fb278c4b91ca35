//! Kafka 4.4's broker and topic configs for features Weir lacks: accepted as Kafka would (type,
//! default, dynamic or not) and shown by DescribeConfigs, so tools and migrated properties files
//! work, but they change nothing here — each names what is missing ([`Missing`]), and
//! COMPATIBILITY.md lists them. Where a value other than Kafka's default would ask for the
//! missing feature (a Java class, tiered storage on, two-phase commit) only the default is
//! accepted. `kafka_names_tests` checks that every name Kafka 4.4 lists
//! (`compat/kafka/configs-4.4.tsv`) is in this table or Weir's own.

use super::properties::{ConfigType, PropertyDef, TopicConfigDef};
use super::ConfigError;

/// What Weir lacks that a Kafka-only config would set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    Kerberos,
    ControllerSasl,
    TieredStorage,
    ShareGroups,
    ConsumerGroupProtocol,
    StreamsGroups,
    DelegationTokens,
    Quotas,
    Racks,
    LogDirs,
    JavaPlugins,
    ClientLogin,
    JavaTls,
    MetadataLog,
    JvmMetrics,
    TwoPhaseCommit,
    Threads,
    Purgatories,
    Buffers,
    InternalTiming,
    SegmentLayout,
    DecompressionBound,
    AlwaysOn,
    UncleanPerTopic,
}

impl Missing {
    /// Why the config changes nothing in Weir.
    pub fn reason(self) -> &'static str {
        match self {
            Missing::Kerberos => "Kerberos (GSSAPI) is not supported",
            Missing::ControllerSasl => "Weir's controller listener takes no SASL (its peers prove who they are by certificate)",
            Missing::TieredStorage => "tiered storage (KIP-405) is not supported: every segment stays on local disk",
            Missing::ShareGroups => "share groups (KIP-932) are not served yet",
            Missing::ConsumerGroupProtocol => "the consumer group protocol (KIP-848) is not served yet: groups use the classic protocol",
            Missing::StreamsGroups => "streams groups (KIP-1071) and their dead-letter queues are not served",
            Missing::DelegationTokens => "delegation tokens are not supported",
            Missing::Quotas => "replication, request-time and controller-mutation quotas are not enforced yet (client byte rates are)",
            Missing::Racks => "replicas are placed without rack awareness",
            Missing::LogDirs => "Weir keeps its logs in one data directory (no JBOD)",
            Missing::JavaPlugins => "Weir loads no Java classes: only the default is accepted",
            Missing::ClientLogin => "settings of the SASL client a Kafka broker uses toward others; Weir brokers authenticate to each other by certificate or the listener's own credentials",
            Missing::JavaTls => "Java's TLS settings: Weir's TLS (rustls) takes PEM files and offers TLS 1.2 and 1.3",
            Missing::MetadataLog => "Kafka's KRaft log internals: Weir's metadata log has its own segments, snapshots and timing",
            Missing::JvmMetrics => "JMX metrics: Weir exports Prometheus metrics",
            Missing::TwoPhaseCommit => "two-phase commit (KIP-939) is not supported: only false is accepted",
            Missing::Threads => "Weir runs on one async runtime sized to the machine: there are no thread pools to size",
            Missing::Purgatories => "Weir keeps no purgatories: a waiting request is a future that ends when it is answered",
            Missing::Buffers => "Weir sizes these buffers itself (sockets keep the kernel's defaults)",
            Missing::InternalTiming => "a timing of a step inside Kafka's implementation; Weir's equivalent is not configurable",
            Missing::SegmentLayout => "Weir's indexes grow as needed (nothing is preallocated) and segment rolls are not jittered",
            Missing::DecompressionBound => "Weir bounds a batch's decompressed size at 256 MiB",
            Missing::AlwaysOn => "always on in Weir (leaderships move away before a stop, KIP-890 verification, listeners start together, __consumer_offsets uncompressed)",
            Missing::UncleanPerTopic => "Weir's controller applies the broker's unclean.leader.election.enable to every topic",
        }
    }
}

/// One Kafka-only config.
pub struct KafkaOnly {
    pub def: PropertyDef,
    /// A dynamic broker config in Kafka (AlterConfigs may change it on a running broker).
    pub dynamic: bool,
    pub missing: Missing,
    /// Only Kafka's default is accepted.
    pub default_only: bool,
}

const fn kafka(
    name: &'static str,
    kind: ConfigType,
    default: Option<&'static str>,
    dynamic: bool,
    missing: Missing,
) -> KafkaOnly {
    KafkaOnly {
        def: PropertyDef {
            name,
            kind,
            default,
            min: None,
            choices: &[],
        },
        dynamic,
        missing,
        default_only: false,
    }
}

const fn kafka_default_only(
    name: &'static str,
    kind: ConfigType,
    default: Option<&'static str>,
    dynamic: bool,
    missing: Missing,
) -> KafkaOnly {
    let mut only = kafka(name, kind, default, dynamic, missing);
    only.default_only = true;
    only
}

/// One Kafka-only topic config.
pub struct KafkaOnlyTopic {
    pub def: TopicConfigDef,
    pub missing: Missing,
    pub default_only: bool,
}

const fn kafka_topic(
    name: &'static str,
    kind: ConfigType,
    default: &'static str,
    missing: Missing,
) -> KafkaOnlyTopic {
    KafkaOnlyTopic {
        def: TopicConfigDef {
            name,
            broker_synonym: None,
            kind,
            default,
            min: None,
            choices: &[],
        },
        missing,
        default_only: false,
    }
}

const fn kafka_topic_default_only(
    name: &'static str,
    kind: ConfigType,
    default: &'static str,
    missing: Missing,
) -> KafkaOnlyTopic {
    let mut only = kafka_topic(name, kind, default, missing);
    only.default_only = true;
    only
}

/// Kafka 4.4's broker configs Weir accepts without effect.
pub(super) const KAFKA_ONLY_BROKER: &[KafkaOnly] = &[
    kafka("add.partitions.to.txn.retry.backoff.max.ms", ConfigType::Int, Some("100"), false, Missing::InternalTiming),
    kafka("add.partitions.to.txn.retry.backoff.ms", ConfigType::Int, Some("20"), false, Missing::InternalTiming),
    kafka_default_only("alter.config.policy.class.name", ConfigType::String, None, false, Missing::JavaPlugins),
    kafka("alter.log.dirs.replication.quota.window.num", ConfigType::Int, Some("11"), false, Missing::Quotas),
    kafka("alter.log.dirs.replication.quota.window.size.seconds", ConfigType::Int, Some("1"), false, Missing::Quotas),
    kafka("background.threads", ConfigType::Int, Some("10"), true, Missing::Threads),
    kafka("broker.rack", ConfigType::String, None, false, Missing::Racks),
    kafka_default_only("client.quota.callback.class", ConfigType::String, None, false, Missing::Quotas),
    kafka_default_only("config.providers", ConfigType::List, None, true, Missing::JavaPlugins),
    kafka("controlled.shutdown.enable", ConfigType::Boolean, Some("true"), false, Missing::AlwaysOn),
    kafka("controller.quorum.append.linger.ms", ConfigType::Int, Some("25"), false, Missing::MetadataLog),
    kafka("controller.quorum.auto.join.enable", ConfigType::Boolean, Some("false"), false, Missing::MetadataLog),
    kafka("controller.quorum.election.backoff.max.ms", ConfigType::Int, Some("1000"), false, Missing::MetadataLog),
    kafka("controller.quorum.fetch.max.bytes", ConfigType::Int, Some("1048576"), false, Missing::MetadataLog),
    kafka("controller.quorum.fetch.snapshot.max.bytes", ConfigType::Int, Some("1048576"), false, Missing::MetadataLog),
    kafka("controller.quorum.fetch.timeout.ms", ConfigType::Int, Some("2000"), false, Missing::MetadataLog),
    kafka("controller.quorum.request.timeout.ms", ConfigType::Int, Some("2000"), false, Missing::MetadataLog),
    kafka("controller.quorum.retry.backoff.ms", ConfigType::Int, Some("20"), false, Missing::MetadataLog),
    kafka("controller.quota.window.num", ConfigType::Int, Some("11"), false, Missing::Quotas),
    kafka("controller.quota.window.size.seconds", ConfigType::Int, Some("1"), false, Missing::Quotas),
    kafka("controller.socket.timeout.ms", ConfigType::Int, Some("30000"), false, Missing::MetadataLog),
    kafka("cordoned.log.dirs", ConfigType::List, None, true, Missing::LogDirs),
    kafka_default_only("create.topic.policy.class.name", ConfigType::String, None, false, Missing::JavaPlugins),
    kafka("delegation.token.expiry.check.interval.ms", ConfigType::Long, Some("3600000"), false, Missing::DelegationTokens),
    kafka("delegation.token.expiry.time.ms", ConfigType::Long, Some("86400000"), false, Missing::DelegationTokens),
    kafka("delegation.token.max.lifetime.ms", ConfigType::Long, Some("604800000"), false, Missing::DelegationTokens),
    kafka("delegation.token.secret.key", ConfigType::Password, None, false, Missing::DelegationTokens),
    kafka("delete.records.purgatory.purge.interval.requests", ConfigType::Int, Some("1"), false, Missing::Purgatories),
    kafka("early.start.listeners", ConfigType::List, None, false, Missing::AlwaysOn),
    kafka("errors.deadletterqueue.auto.create.topics.enable", ConfigType::Boolean, Some("false"), true, Missing::StreamsGroups),
    kafka("errors.deadletterqueue.topic.name.prefix", ConfigType::String, Some("dlq."), true, Missing::StreamsGroups),
    kafka("fetch.purgatory.purge.interval.requests", ConfigType::Int, Some("1000"), false, Missing::Purgatories),
    kafka("follower.fetch.last.tiered.offset.enable", ConfigType::Boolean, Some("false"), true, Missing::TieredStorage),
    kafka("group.consumer.assignment.interval.ms", ConfigType::Int, Some("1000"), true, Missing::ConsumerGroupProtocol),
    kafka("group.consumer.assignors", ConfigType::List, Some("uniform,range"), false, Missing::ConsumerGroupProtocol),
    kafka("group.consumer.heartbeat.interval.ms", ConfigType::Int, Some("5000"), false, Missing::ConsumerGroupProtocol),
    kafka("group.consumer.max.assignment.interval.ms", ConfigType::Int, Some("15000"), false, Missing::ConsumerGroupProtocol),
    kafka("group.consumer.max.heartbeat.interval.ms", ConfigType::Int, Some("15000"), false, Missing::ConsumerGroupProtocol),
    kafka("group.consumer.max.session.timeout.ms", ConfigType::Int, Some("60000"), false, Missing::ConsumerGroupProtocol),
    kafka("group.consumer.max.size", ConfigType::Int, Some("2147483647"), false, Missing::ConsumerGroupProtocol),
    kafka("group.consumer.migration.policy", ConfigType::String, Some("bidirectional"), false, Missing::ConsumerGroupProtocol),
    kafka("group.consumer.min.assignment.interval.ms", ConfigType::Int, Some("0"), false, Missing::ConsumerGroupProtocol),
    kafka("group.consumer.min.heartbeat.interval.ms", ConfigType::Int, Some("5000"), false, Missing::ConsumerGroupProtocol),
    kafka("group.consumer.min.session.timeout.ms", ConfigType::Int, Some("45000"), false, Missing::ConsumerGroupProtocol),
    kafka("group.consumer.session.timeout.ms", ConfigType::Int, Some("45000"), false, Missing::ConsumerGroupProtocol),
    kafka("group.coordinator.append.linger.ms", ConfigType::Int, Some("-1"), false, Missing::InternalTiming),
    kafka("group.coordinator.background.threads", ConfigType::Int, Some("2"), false, Missing::Threads),
    kafka("group.coordinator.cached.buffer.max.bytes", ConfigType::Int, Some("1048588"), true, Missing::Buffers),
    kafka("group.coordinator.rebalance.protocols", ConfigType::List, Some("classic,consumer,streams"), false, Missing::ConsumerGroupProtocol),
    kafka("group.coordinator.threads", ConfigType::Int, Some("4"), false, Missing::Threads),
    kafka("group.share.assignment.interval.ms", ConfigType::Int, Some("1000"), true, Missing::ShareGroups),
    kafka("group.share.assignors", ConfigType::List, Some("simple"), false, Missing::ShareGroups),
    kafka("group.share.delivery.count.limit", ConfigType::Int, Some("5"), false, Missing::ShareGroups),
    kafka("group.share.heartbeat.interval.ms", ConfigType::Int, Some("5000"), false, Missing::ShareGroups),
    kafka("group.share.max.assignment.interval.ms", ConfigType::Int, Some("15000"), false, Missing::ShareGroups),
    kafka("group.share.max.delivery.count.limit", ConfigType::Int, Some("10"), false, Missing::ShareGroups),
    kafka("group.share.max.heartbeat.interval.ms", ConfigType::Int, Some("15000"), false, Missing::ShareGroups),
    kafka("group.share.max.partition.max.record.locks", ConfigType::Int, Some("4000"), false, Missing::ShareGroups),
    kafka("group.share.max.record.lock.duration.ms", ConfigType::Int, Some("60000"), false, Missing::ShareGroups),
    kafka("group.share.max.session.timeout.ms", ConfigType::Int, Some("60000"), false, Missing::ShareGroups),
    kafka("group.share.max.share.sessions", ConfigType::Int, Some("2000"), false, Missing::ShareGroups),
    kafka("group.share.max.size", ConfigType::Int, Some("200"), false, Missing::ShareGroups),
    kafka("group.share.min.assignment.interval.ms", ConfigType::Int, Some("0"), false, Missing::ShareGroups),
    kafka("group.share.min.delivery.count.limit", ConfigType::Int, Some("2"), false, Missing::ShareGroups),
    kafka("group.share.min.heartbeat.interval.ms", ConfigType::Int, Some("5000"), false, Missing::ShareGroups),
    kafka("group.share.min.partition.max.record.locks", ConfigType::Int, Some("100"), false, Missing::ShareGroups),
    kafka("group.share.min.record.lock.duration.ms", ConfigType::Int, Some("15000"), false, Missing::ShareGroups),
    kafka("group.share.min.session.timeout.ms", ConfigType::Int, Some("45000"), false, Missing::ShareGroups),
    kafka("group.share.partition.max.record.locks", ConfigType::Int, Some("2000"), false, Missing::ShareGroups),
    kafka("group.share.record.lock.duration.ms", ConfigType::Int, Some("30000"), false, Missing::ShareGroups),
    kafka("group.share.session.timeout.ms", ConfigType::Int, Some("45000"), false, Missing::ShareGroups),
    kafka("group.streams.assignment.interval.ms", ConfigType::Int, Some("1000"), true, Missing::StreamsGroups),
    kafka("group.streams.assignors", ConfigType::List, Some("sticky"), false, Missing::StreamsGroups),
    kafka("group.streams.heartbeat.interval.ms", ConfigType::Int, Some("5000"), false, Missing::StreamsGroups),
    kafka("group.streams.initial.rebalance.delay.ms", ConfigType::Int, Some("3000"), false, Missing::StreamsGroups),
    kafka("group.streams.max.assignment.interval.ms", ConfigType::Int, Some("15000"), false, Missing::StreamsGroups),
    kafka("group.streams.max.heartbeat.interval.ms", ConfigType::Int, Some("15000"), false, Missing::StreamsGroups),
    kafka("group.streams.max.session.timeout.ms", ConfigType::Int, Some("60000"), false, Missing::StreamsGroups),
    kafka("group.streams.max.size", ConfigType::Int, Some("2147483647"), false, Missing::StreamsGroups),
    kafka("group.streams.max.standby.replicas", ConfigType::Int, Some("2"), false, Missing::StreamsGroups),
    kafka("group.streams.min.assignment.interval.ms", ConfigType::Int, Some("0"), false, Missing::StreamsGroups),
    kafka("group.streams.min.heartbeat.interval.ms", ConfigType::Int, Some("5000"), false, Missing::StreamsGroups),
    kafka("group.streams.min.session.timeout.ms", ConfigType::Int, Some("45000"), false, Missing::StreamsGroups),
    kafka("group.streams.num.standby.replicas", ConfigType::Int, Some("0"), false, Missing::StreamsGroups),
    kafka("group.streams.rack.aware.assignment.tags", ConfigType::List, None, false, Missing::StreamsGroups),
    kafka("group.streams.session.timeout.ms", ConfigType::Int, Some("45000"), false, Missing::StreamsGroups),
    kafka_default_only("group.streams.topology.description.plugin.class", ConfigType::String, None, false, Missing::StreamsGroups),
    kafka("initial.broker.registration.timeout.ms", ConfigType::Int, Some("60000"), false, Missing::MetadataLog),
    kafka("kafka.metrics.polling.interval.secs", ConfigType::Int, Some("10"), false, Missing::JvmMetrics),
    kafka("kafka.metrics.reporters", ConfigType::List, None, false, Missing::JavaPlugins),
    kafka("log.cleaner.io.buffer.load.factor", ConfigType::Double, Some("0.9"), true, Missing::Buffers),
    kafka("log.cleaner.io.buffer.size", ConfigType::Int, Some("524288"), true, Missing::Buffers),
    kafka("log.cleaner.io.max.bytes.per.second", ConfigType::Double, Some("1.7976931348623157E308"), true, Missing::InternalTiming),
    kafka("log.cleaner.threads", ConfigType::Int, Some("1"), true, Missing::Threads),
    kafka("log.dir.failure.timeout.ms", ConfigType::Long, Some("30000"), false, Missing::LogDirs),
    kafka("log.flush.offset.checkpoint.interval.ms", ConfigType::Int, Some("60000"), false, Missing::InternalTiming),
    kafka("log.flush.start.offset.checkpoint.interval.ms", ConfigType::Int, Some("60000"), false, Missing::InternalTiming),
    kafka("log.index.size.max.bytes", ConfigType::Int, Some("10485760"), true, Missing::SegmentLayout),
    kafka("log.local.retention.bytes", ConfigType::Long, Some("-2"), true, Missing::TieredStorage),
    kafka("log.local.retention.ms", ConfigType::Long, Some("-2"), true, Missing::TieredStorage),
    kafka("log.preallocate", ConfigType::Boolean, Some("false"), true, Missing::SegmentLayout),
    kafka("log.remote.copy.lag.bytes", ConfigType::Long, Some("-1"), true, Missing::TieredStorage),
    kafka("log.remote.copy.lag.ms", ConfigType::Long, Some("0"), true, Missing::TieredStorage),
    kafka("log.roll.jitter.hours", ConfigType::Int, Some("0"), false, Missing::SegmentLayout),
    kafka("log.roll.jitter.ms", ConfigType::Long, None, true, Missing::SegmentLayout),
    kafka("max.connection.creation.rate", ConfigType::Int, Some("2147483647"), true, Missing::Quotas),
    kafka("max.decompressed.message.bytes", ConfigType::Int, Some("2147483639"), true, Missing::DecompressionBound),
    kafka("max.request.partition.size.limit", ConfigType::Int, Some("2000"), false, Missing::ShareGroups),
    kafka("metadata.log.max.record.bytes.between.snapshots", ConfigType::Long, Some("20971520"), false, Missing::MetadataLog),
    kafka("metadata.log.max.snapshot.interval.ms", ConfigType::Long, Some("3600000"), false, Missing::MetadataLog),
    kafka("metadata.log.segment.bytes", ConfigType::Int, Some("1073741824"), false, Missing::MetadataLog),
    kafka("metadata.log.segment.ms", ConfigType::Long, Some("604800000"), false, Missing::MetadataLog),
    kafka("metadata.max.idle.interval.ms", ConfigType::Int, Some("500"), false, Missing::MetadataLog),
    kafka("metadata.max.retention.bytes", ConfigType::Long, Some("104857600"), false, Missing::MetadataLog),
    kafka("metadata.max.retention.ms", ConfigType::Long, Some("604800000"), false, Missing::MetadataLog),
    kafka("metric.reporters", ConfigType::List, Some("org.apache.kafka.common.metrics.JmxReporter"), true, Missing::JavaPlugins),
    kafka("metrics.num.samples", ConfigType::Int, Some("2"), false, Missing::JvmMetrics),
    kafka("metrics.recording.level", ConfigType::String, Some("INFO"), false, Missing::JvmMetrics),
    kafka("metrics.sample.window.ms", ConfigType::Long, Some("30000"), false, Missing::JvmMetrics),
    kafka("num.io.threads", ConfigType::Int, Some("8"), true, Missing::Threads),
    kafka("num.network.threads", ConfigType::Int, Some("3"), true, Missing::Threads),
    kafka("num.recovery.threads.per.data.dir", ConfigType::Int, Some("2"), true, Missing::Threads),
    kafka("num.replica.alter.log.dirs.threads", ConfigType::Int, None, false, Missing::LogDirs),
    kafka("num.replica.fetchers", ConfigType::Int, Some("1"), true, Missing::Threads),
    kafka("offsets.commit.timeout.ms", ConfigType::Int, Some("5000"), false, Missing::InternalTiming),
    kafka("offsets.load.buffer.size", ConfigType::Int, Some("5242880"), false, Missing::Buffers),
    kafka("offsets.topic.compression.codec", ConfigType::Int, Some("0"), false, Missing::AlwaysOn),
    kafka_default_only("principal.builder.class", ConfigType::String, Some("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"), true, Missing::JavaPlugins),
    kafka("producer.purgatory.purge.interval.requests", ConfigType::Int, Some("1000"), false, Missing::Purgatories),
    kafka("remote.fetch.max.wait.ms", ConfigType::Int, Some("500"), true, Missing::TieredStorage),
    kafka("remote.list.offsets.request.timeout.ms", ConfigType::Long, Some("30000"), true, Missing::TieredStorage),
    kafka("remote.log.index.file.cache.total.size.bytes", ConfigType::Long, Some("1073741824"), true, Missing::TieredStorage),
    kafka("remote.log.manager.copier.thread.pool.size", ConfigType::Int, Some("10"), true, Missing::TieredStorage),
    kafka("remote.log.manager.copy.max.bytes.per.second", ConfigType::Long, Some("9223372036854775807"), true, Missing::TieredStorage),
    kafka("remote.log.manager.copy.quota.window.num", ConfigType::Int, Some("11"), false, Missing::TieredStorage),
    kafka("remote.log.manager.copy.quota.window.size.seconds", ConfigType::Int, Some("1"), false, Missing::TieredStorage),
    kafka("remote.log.manager.expiration.thread.pool.size", ConfigType::Int, Some("10"), true, Missing::TieredStorage),
    kafka("remote.log.manager.fetch.max.bytes.per.second", ConfigType::Long, Some("9223372036854775807"), true, Missing::TieredStorage),
    kafka("remote.log.manager.fetch.quota.window.num", ConfigType::Int, Some("11"), false, Missing::TieredStorage),
    kafka("remote.log.manager.fetch.quota.window.size.seconds", ConfigType::Int, Some("1"), false, Missing::TieredStorage),
    kafka("remote.log.manager.follower.thread.pool.size", ConfigType::Int, Some("2"), true, Missing::TieredStorage),
    kafka("remote.log.manager.task.interval.ms", ConfigType::Long, Some("30000"), false, Missing::TieredStorage),
    kafka("remote.log.manager.thread.pool.size", ConfigType::Int, Some("2"), false, Missing::TieredStorage),
    kafka("remote.log.metadata.custom.metadata.max.bytes", ConfigType::Int, Some("128"), false, Missing::TieredStorage),
    kafka("remote.log.metadata.manager.class.name", ConfigType::String, Some("org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"), false, Missing::TieredStorage),
    kafka("remote.log.metadata.manager.class.path", ConfigType::String, None, false, Missing::TieredStorage),
    kafka("remote.log.metadata.manager.impl.prefix", ConfigType::String, Some("rlmm.config."), false, Missing::TieredStorage),
    kafka("remote.log.metadata.manager.listener.name", ConfigType::String, None, false, Missing::TieredStorage),
    kafka("remote.log.reader.max.pending.tasks", ConfigType::Int, Some("100"), false, Missing::TieredStorage),
    kafka("remote.log.reader.threads", ConfigType::Int, Some("10"), true, Missing::TieredStorage),
    kafka("remote.log.storage.manager.class.name", ConfigType::String, None, false, Missing::TieredStorage),
    kafka("remote.log.storage.manager.class.path", ConfigType::String, None, false, Missing::TieredStorage),
    kafka("remote.log.storage.manager.impl.prefix", ConfigType::String, Some("rsm.config."), false, Missing::TieredStorage),
    kafka_default_only("remote.log.storage.system.enable", ConfigType::Boolean, Some("false"), false, Missing::TieredStorage),
    kafka("replica.fetch.min.bytes", ConfigType::Int, Some("1"), false, Missing::InternalTiming),
    kafka("replica.high.watermark.checkpoint.interval.ms", ConfigType::Long, Some("5000"), false, Missing::InternalTiming),
    kafka_default_only("replica.selector.class", ConfigType::String, None, false, Missing::JavaPlugins),
    kafka("replica.socket.receive.buffer.bytes", ConfigType::Int, Some("65536"), false, Missing::Buffers),
    kafka("replication.quota.window.num", ConfigType::Int, Some("11"), false, Missing::Quotas),
    kafka("replication.quota.window.size.seconds", ConfigType::Int, Some("1"), false, Missing::Quotas),
    kafka("request.timeout.ms", ConfigType::Int, Some("30000"), false, Missing::InternalTiming),
    kafka_default_only("sasl.client.callback.handler.class", ConfigType::String, None, false, Missing::JavaPlugins),
    kafka("sasl.kerberos.kinit.cmd", ConfigType::String, Some("/usr/bin/kinit"), true, Missing::Kerberos),
    kafka("sasl.kerberos.min.time.before.relogin", ConfigType::Long, Some("60000"), true, Missing::Kerberos),
    kafka("sasl.kerberos.principal.to.local.rules", ConfigType::List, Some("DEFAULT"), true, Missing::Kerberos),
    kafka("sasl.kerberos.service.name", ConfigType::String, None, true, Missing::Kerberos),
    kafka("sasl.kerberos.ticket.renew.jitter", ConfigType::Double, Some("0.05"), true, Missing::Kerberos),
    kafka("sasl.kerberos.ticket.renew.window.factor", ConfigType::Double, Some("0.8"), true, Missing::Kerberos),
    kafka_default_only("sasl.login.callback.handler.class", ConfigType::String, None, false, Missing::JavaPlugins),
    kafka_default_only("sasl.login.class", ConfigType::String, None, false, Missing::JavaPlugins),
    kafka("sasl.login.connect.timeout.ms", ConfigType::Int, None, false, Missing::ClientLogin),
    kafka("sasl.login.read.timeout.ms", ConfigType::Int, None, false, Missing::ClientLogin),
    kafka("sasl.login.refresh.buffer.seconds", ConfigType::Int, Some("300"), true, Missing::ClientLogin),
    kafka("sasl.login.refresh.min.period.seconds", ConfigType::Int, Some("60"), true, Missing::ClientLogin),
    kafka("sasl.login.refresh.window.factor", ConfigType::Double, Some("0.8"), true, Missing::ClientLogin),
    kafka("sasl.login.refresh.window.jitter", ConfigType::Double, Some("0.05"), true, Missing::ClientLogin),
    kafka("sasl.login.retry.backoff.max.ms", ConfigType::Long, Some("10000"), false, Missing::ClientLogin),
    kafka("sasl.login.retry.backoff.ms", ConfigType::Long, Some("100"), false, Missing::ClientLogin),
    kafka_default_only("sasl.mechanism.controller.protocol", ConfigType::String, Some("GSSAPI"), false, Missing::ControllerSasl),
    kafka("sasl.oauthbearer.allow.unverified.audience", ConfigType::Boolean, Some("false"), false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.allow.unverified.issuer", ConfigType::Boolean, Some("false"), false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.assertion.algorithm", ConfigType::String, Some("RS256"), false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.assertion.claim.aud", ConfigType::String, None, false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.assertion.claim.exp.seconds", ConfigType::Int, Some("300"), false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.assertion.claim.iss", ConfigType::String, None, false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.assertion.claim.jti.include", ConfigType::Boolean, Some("false"), false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.assertion.claim.nbf.seconds", ConfigType::Int, Some("60"), false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.assertion.claim.sub", ConfigType::String, None, false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.assertion.file", ConfigType::String, None, false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.assertion.private.key.file", ConfigType::String, None, false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.assertion.private.key.passphrase", ConfigType::Password, None, false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.assertion.template.file", ConfigType::String, None, false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.client.credentials.client.id", ConfigType::String, None, false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.client.credentials.client.secret", ConfigType::Password, None, false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", ConfigType::Long, Some("10000"), false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", ConfigType::Long, Some("100"), false, Missing::ClientLogin),
    kafka_default_only("sasl.oauthbearer.jwt.retriever.class", ConfigType::String, Some("org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever"), false, Missing::JavaPlugins),
    kafka_default_only("sasl.oauthbearer.jwt.validator.class", ConfigType::String, Some("org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator"), false, Missing::JavaPlugins),
    kafka("sasl.oauthbearer.scope", ConfigType::String, None, false, Missing::ClientLogin),
    kafka("sasl.oauthbearer.token.endpoint.url", ConfigType::String, None, false, Missing::ClientLogin),
    kafka_default_only("security.providers", ConfigType::String, None, false, Missing::JavaPlugins),
    kafka("share.coordinator.append.linger.ms", ConfigType::Int, Some("-1"), false, Missing::ShareGroups),
    kafka("share.coordinator.cached.buffer.max.bytes", ConfigType::Int, Some("1048588"), true, Missing::ShareGroups),
    kafka("share.coordinator.load.buffer.size", ConfigType::Int, Some("5242880"), false, Missing::ShareGroups),
    kafka("share.coordinator.snapshot.update.records.per.snapshot", ConfigType::Int, Some("500"), false, Missing::ShareGroups),
    kafka("share.coordinator.state.topic.compression.codec", ConfigType::Int, Some("0"), false, Missing::ShareGroups),
    kafka("share.coordinator.state.topic.min.isr", ConfigType::Int, Some("2"), false, Missing::ShareGroups),
    kafka("share.coordinator.state.topic.num.partitions", ConfigType::Int, Some("50"), false, Missing::ShareGroups),
    kafka("share.coordinator.state.topic.replication.factor", ConfigType::Int, Some("3"), false, Missing::ShareGroups),
    kafka("share.coordinator.state.topic.segment.bytes", ConfigType::Int, Some("104857600"), false, Missing::ShareGroups),
    kafka("share.coordinator.threads", ConfigType::Int, Some("1"), false, Missing::ShareGroups),
    kafka("share.coordinator.write.timeout.ms", ConfigType::Int, Some("5000"), false, Missing::ShareGroups),
    kafka("share.fetch.purgatory.purge.interval.requests", ConfigType::Int, Some("1000"), false, Missing::ShareGroups),
    kafka("socket.connection.setup.timeout.max.ms", ConfigType::Long, Some("30000"), false, Missing::InternalTiming),
    kafka("socket.connection.setup.timeout.ms", ConfigType::Long, Some("10000"), false, Missing::InternalTiming),
    kafka("socket.listen.backlog.size", ConfigType::Int, Some("50"), false, Missing::Buffers),
    kafka("socket.receive.buffer.bytes", ConfigType::Int, Some("102400"), false, Missing::Buffers),
    kafka("socket.send.buffer.bytes", ConfigType::Int, Some("102400"), false, Missing::Buffers),
    kafka("ssl.allow.dn.changes", ConfigType::Boolean, Some("false"), false, Missing::JavaTls),
    kafka("ssl.allow.san.changes", ConfigType::Boolean, Some("false"), false, Missing::JavaTls),
    kafka_default_only("ssl.engine.factory.class", ConfigType::String, None, true, Missing::JavaPlugins),
    kafka("ssl.keymanager.algorithm", ConfigType::String, Some("SunX509"), true, Missing::JavaTls),
    kafka("ssl.keystore.password", ConfigType::Password, None, true, Missing::JavaTls),
    kafka("ssl.protocol", ConfigType::String, Some("TLSv1.3"), true, Missing::JavaTls),
    kafka("ssl.provider", ConfigType::String, None, true, Missing::JavaTls),
    kafka("ssl.secure.random.implementation", ConfigType::String, None, true, Missing::JavaTls),
    kafka("ssl.trustmanager.algorithm", ConfigType::String, Some("PKIX"), true, Missing::JavaTls),
    kafka("ssl.truststore.password", ConfigType::Password, None, true, Missing::JavaTls),
    kafka("telemetry.max.bytes", ConfigType::Int, Some("1048576"), false, Missing::JvmMetrics),
    kafka("transaction.partition.verification.enable", ConfigType::Boolean, Some("true"), true, Missing::AlwaysOn),
    kafka("transaction.remove.expired.transaction.cleanup.interval.ms", ConfigType::Int, Some("3600000"), false, Missing::InternalTiming),
    kafka("transaction.state.log.load.buffer.size", ConfigType::Int, Some("5242880"), false, Missing::Buffers),
    kafka_default_only("transaction.two.phase.commit.enable", ConfigType::Boolean, Some("false"), false, Missing::TwoPhaseCommit),
];

/// Kafka 4.4's topic configs Weir accepts without effect (`def.default` is Kafka's).
pub(super) const KAFKA_ONLY_TOPIC: &[KafkaOnlyTopic] = &[
    kafka_topic(
        "errors.deadletterqueue.group.enable",
        ConfigType::Boolean,
        "false",
        Missing::StreamsGroups,
    ),
    kafka_topic(
        "follower.replication.throttled.replicas",
        ConfigType::List,
        "",
        Missing::Quotas,
    ),
    kafka_topic(
        "leader.replication.throttled.replicas",
        ConfigType::List,
        "",
        Missing::Quotas,
    ),
    kafka_topic(
        "local.retention.bytes",
        ConfigType::Long,
        "-2",
        Missing::TieredStorage,
    ),
    kafka_topic(
        "local.retention.ms",
        ConfigType::Long,
        "-2",
        Missing::TieredStorage,
    ),
    kafka_topic(
        "max.decompressed.message.bytes",
        ConfigType::Int,
        "2147483639",
        Missing::DecompressionBound,
    ),
    kafka_topic(
        "preallocate",
        ConfigType::Boolean,
        "false",
        Missing::SegmentLayout,
    ),
    kafka_topic(
        "remote.copy.lag.bytes",
        ConfigType::Long,
        "-1",
        Missing::TieredStorage,
    ),
    kafka_topic(
        "remote.copy.lag.ms",
        ConfigType::Long,
        "0",
        Missing::TieredStorage,
    ),
    kafka_topic(
        "remote.log.copy.disable",
        ConfigType::Boolean,
        "false",
        Missing::TieredStorage,
    ),
    kafka_topic(
        "remote.log.delete.on.disable",
        ConfigType::Boolean,
        "false",
        Missing::TieredStorage,
    ),
    kafka_topic_default_only(
        "remote.storage.enable",
        ConfigType::Boolean,
        "false",
        Missing::TieredStorage,
    ),
    kafka_topic(
        "segment.index.bytes",
        ConfigType::Int,
        "10485760",
        Missing::SegmentLayout,
    ),
    kafka_topic(
        "segment.jitter.ms",
        ConfigType::Long,
        "0",
        Missing::SegmentLayout,
    ),
    kafka_topic(
        "unclean.leader.election.enable",
        ConfigType::Boolean,
        "false",
        Missing::UncleanPerTopic,
    ),
];

/// The Kafka-only broker config `name`.
pub fn kafka_only_broker(name: &str) -> Option<&'static KafkaOnly> {
    KAFKA_ONLY_BROKER.iter().find(|only| only.def.name == name)
}

/// The Kafka-only topic config `name`.
pub fn kafka_only_topic(name: &str) -> Option<&'static KafkaOnlyTopic> {
    KAFKA_ONLY_TOPIC.iter().find(|only| only.def.name == name)
}

/// Refuses a value of a Kafka-only broker config other than Kafka's default where only the
/// default is accepted.
pub(super) fn check_broker_value(name: &str, value: &str) -> Result<(), ConfigError> {
    match kafka_only_broker(name) {
        Some(only) if only.default_only => {
            default_only(name, value, only.def.default.unwrap_or(""), only.missing)
        }
        _ => Ok(()),
    }
}

/// The same for a Kafka-only topic config.
pub(super) fn check_topic_value(name: &str, value: &str) -> Result<(), ConfigError> {
    match kafka_only_topic(name) {
        Some(only) if only.default_only => {
            default_only(name, value, only.def.default, only.missing)
        }
        _ => Ok(()),
    }
}

fn default_only(
    name: &str,
    value: &str,
    default: &str,
    missing: Missing,
) -> Result<(), ConfigError> {
    if value.trim() == default {
        return Ok(());
    }
    Err(ConfigError::Unsupported {
        name: name.to_string(),
        reason: format!(
            "{} (Kafka's default {default:?} is accepted)",
            missing.reason()
        ),
    })
}
