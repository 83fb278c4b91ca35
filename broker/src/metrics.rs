//! Prometheus metrics of the broker, served as text on `/metrics`.
//!
//! Counters and histograms are updated on the request path; per-partition gauges (log size,
//! segment count, offsets) are refreshed from the logs when scraped.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use crate::cluster::member::ClusterMember;
use crate::group::GroupCoordinator;
use crate::partition::Partition;
use crate::topic::TopicRegistry;

pub struct Metrics {
    registry: Registry,
    pub requests_total: IntCounterVec,
    pub request_errors_total: IntCounterVec,
    pub request_duration_seconds: HistogramVec,
    pub bytes_in_total: IntCounterVec,
    /// Requests over a client quota (throttled), by quota type.
    pub throttled_requests: IntCounterVec,
    pub records_in_total: IntCounterVec,
    pub bytes_out_total: IntCounterVec,
    pub records_out_total: IntCounterVec,
    pub connections: IntGauge,
    pub connections_total: IntCounter,
    pub connections_refused_total: IntCounterVec,
    pub authentications_total: IntCounterVec,
    pub request_memory_used_bytes: IntGauge,
    pub request_memory_capacity_bytes: IntGauge,
    pub log_size_bytes: IntGaugeVec,
    pub log_segments: IntGaugeVec,
    pub log_end_offset: IntGaugeVec,
    pub log_start_offset: IntGaugeVec,
    pub log_last_stable_offset: IntGaugeVec,
    pub open_transactions: IntGaugeVec,
    pub recovered_bytes_cut_total: IntCounter,
    pub offline_log_partitions: IntGauge,
    pub group_committed_offset: IntGaugeVec,
    pub group_lag: IntGaugeVec,
    pub cleaner_passes_total: IntCounterVec,
    pub cleaner_bytes_read_total: IntCounterVec,
    pub cleaner_bytes_written_total: IntCounterVec,
    pub cleaner_records_removed_total: IntCounterVec,
    pub cleaner_errors_total: IntCounterVec,
    pub isr_shrinks_total: IntCounter,
    pub isr_expands_total: IntCounter,
    pub fetch_sessions: IntGauge,
    pub fetch_session_partitions: IntGauge,
    pub fetch_session_evictions_total: IntCounter,
    replica_lag: IntGaugeVec,
    cluster: ClusterGauges,
}

/// Cluster mode's gauges, refreshed from the metadata image when scraped.
struct ClusterGauges {
    active_controller: IntGauge,
    brokers: IntGaugeVec,
    metadata_applied_index: IntGauge,
    raft_term: IntGauge,
    leader_partitions: IntGauge,
    under_replicated_partitions: IntGauge,
    offline_partitions: IntGauge,
    leader_elections: IntGauge,
    unclean_leader_elections: IntGauge,
}

fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    let metric = IntGauge::new(name, help).expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("unique metric");
    metric
}

impl ClusterGauges {
    fn new(registry: &Registry) -> Self {
        ClusterGauges {
            active_controller: gauge(
                registry,
                "cluster_active_controller",
                "1 while this node is the active controller",
            ),
            brokers: gauge_vec(
                registry,
                "cluster_brokers",
                "Registered brokers by state (live or fenced)",
                &["state"],
            ),
            metadata_applied_index: gauge(
                registry,
                "cluster_metadata_applied_index",
                "Index of the last metadata log entry applied here",
            ),
            raft_term: gauge(
                registry,
                "cluster_raft_term",
                "The metadata quorum's current Raft term as seen here",
            ),
            leader_partitions: gauge(
                registry,
                "cluster_leader_partitions",
                "Partitions this broker leads",
            ),
            under_replicated_partitions: gauge(
                registry,
                "cluster_under_replicated_partitions",
                "Partitions this broker leads whose ISR is smaller than their replicas",
            ),
            offline_partitions: gauge(
                registry,
                "cluster_offline_partitions",
                "Partitions without a leader (reported by the active controller; 0 elsewhere)",
            ),
            leader_elections: gauge(
                registry,
                "cluster_leader_elections",
                "Leader changes in the metadata log so far",
            ),
            unclean_leader_elections: gauge(
                registry,
                "cluster_unclean_leader_elections",
                "Leaders elected from outside the ISR so far (unclean.leader.election.enable)",
            ),
        }
    }

    fn refresh(&self, cluster: &ClusterMember) {
        let image = cluster.image().image;
        let node_id = cluster.node_id();
        let active = cluster.active_controller() == Some(node_id);
        let status = cluster.quorum_status();
        self.active_controller.set(i64::from(active));
        self.metadata_applied_index.set(status.applied_index as i64);
        self.raft_term.set(status.term as i64);
        let live = image.live_brokers().count();
        self.brokers.with_label_values(&["live"]).set(live as i64);
        self.brokers
            .with_label_values(&["fenced"])
            .set((image.brokers.len() - live) as i64);
        let partitions = image.topics.values().flat_map(|t| t.partitions.iter());
        let (mut led, mut under_replicated, mut offline) = (0, 0, 0);
        for partition in partitions {
            if partition.leader == node_id {
                led += 1;
                if partition.isr.len() < partition.replicas.len() {
                    under_replicated += 1;
                }
            }
            if partition.leader == crate::cluster::NO_LEADER {
                offline += 1;
            }
        }
        self.leader_partitions.set(led);
        self.under_replicated_partitions.set(under_replicated);
        self.offline_partitions
            .set(if active { offline } else { 0 });
        self.leader_elections.set(image.leader_elections as i64);
        self.unclean_leader_elections
            .set(image.unclean_elections as i64);
    }
}

fn counter(registry: &Registry, name: &str, help: &str) -> IntCounter {
    let metric = IntCounter::new(name, help).expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("unique metric");
    metric
}

fn counter_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let metric = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("unique metric");
    metric
}

fn gauge_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    let metric = IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("unique metric");
    metric
}

impl Metrics {
    /// The ISR change counters, for the task that sends changes to the controller.
    pub fn isr_change_counters(&self) -> crate::replication::isr::IsrChangeCounters {
        crate::replication::isr::IsrChangeCounters {
            shrinks: self.isr_shrinks_total.clone(),
            expands: self.isr_expands_total.clone(),
        }
    }

    #[allow(clippy::too_many_lines)] // one registration per metric
    pub fn new() -> Self {
        let registry = Registry::new_custom(Some("weir".into()), None).expect("valid registry");
        let request_duration_seconds = HistogramVec::new(
            HistogramOpts::new(
                "request_duration_seconds",
                "Time from a request's arrival to its response being ready, per API",
            )
            .buckets(vec![
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                1.0, 2.5, 5.0, 10.0, 30.0,
            ]),
            &["api"],
        )
        .expect("valid metric");
        registry
            .register(Box::new(request_duration_seconds.clone()))
            .expect("unique metric");
        let connections = IntGauge::new("connections", "Open client connections").expect("valid");
        registry
            .register(Box::new(connections.clone()))
            .expect("unique");
        let connections_total =
            IntCounter::new("connections_total", "Client connections accepted").expect("valid");
        registry
            .register(Box::new(connections_total.clone()))
            .expect("unique");
        let recovered_bytes_cut_total = IntCounter::new(
            "recovered_bytes_cut_total",
            "Bytes of torn or corrupt segment tails cut during recovery",
        )
        .expect("valid");
        registry
            .register(Box::new(recovered_bytes_cut_total.clone()))
            .expect("unique");
        Metrics {
            cleaner_passes_total: counter_vec(
                &registry,
                "log_cleaner_passes_total",
                "Compaction passes that installed cleaned segments",
                &["topic"],
            ),
            cleaner_bytes_read_total: counter_vec(
                &registry,
                "log_cleaner_bytes_read_total",
                "Segment bytes read by compaction passes",
                &["topic"],
            ),
            cleaner_bytes_written_total: counter_vec(
                &registry,
                "log_cleaner_bytes_written_total",
                "Cleaned segment bytes written by compaction passes",
                &["topic"],
            ),
            cleaner_records_removed_total: counter_vec(
                &registry,
                "log_cleaner_records_removed_total",
                "Records removed by compaction (superseded, expired tombstones, keyless)",
                &["topic"],
            ),
            cleaner_errors_total: counter_vec(
                &registry,
                "log_cleaner_errors_total",
                "Compaction passes that failed",
                &["topic"],
            ),
            isr_shrinks_total: counter(
                &registry,
                "isr_shrinks_total",
                "ISR shrinks this broker's leaders got the controller to accept",
            ),
            isr_expands_total: counter(
                &registry,
                "isr_expands_total",
                "ISR expansions this broker's leaders got the controller to accept",
            ),
            fetch_sessions: gauge(
                &registry,
                "fetch_sessions",
                "Incremental fetch sessions (KIP-227) cached (max.incremental.fetch.session.cache.slots)",
            ),
            fetch_session_partitions: gauge(
                &registry,
                "fetch_session_partitions",
                "Partitions held by all cached fetch sessions",
            ),
            fetch_session_evictions_total: counter(
                &registry,
                "fetch_session_evictions_total",
                "Fetch sessions evicted to make room for new ones",
            ),
            replica_lag: gauge_vec(
                &registry,
                "replica_lag_offsets",
                "Offsets each follower is behind, on the partitions this broker leads",
                &["topic", "partition", "follower"],
            ),
            requests_total: counter_vec(
                &registry,
                "requests_total",
                "Requests handled, per API",
                &["api"],
            ),
            request_errors_total: counter_vec(
                &registry,
                "request_errors_total",
                "Partition- or topic-level errors returned, per API and Kafka error code",
                &["api", "error"],
            ),
            throttled_requests: counter_vec(
                &registry,
                "throttled_requests_total",
                "Requests over a client quota, answered with a throttle time",
                &["quota"],
            ),
            bytes_in_total: counter_vec(
                &registry,
                "bytes_in_total",
                "Record batch bytes appended",
                &["topic"],
            ),
            records_in_total: counter_vec(
                &registry,
                "records_in_total",
                "Records appended",
                &["topic"],
            ),
            bytes_out_total: counter_vec(
                &registry,
                "bytes_out_total",
                "Record batch bytes fetched",
                &["topic"],
            ),
            records_out_total: counter_vec(
                &registry,
                "records_out_total",
                "Records fetched (whole batches)",
                &["topic"],
            ),
            log_size_bytes: gauge_vec(
                &registry,
                "log_size_bytes",
                "Bytes of log on disk",
                &["topic", "partition"],
            ),
            log_segments: gauge_vec(
                &registry,
                "log_segments",
                "Segments of a partition log",
                &["topic", "partition"],
            ),
            log_end_offset: gauge_vec(
                &registry,
                "log_end_offset",
                "Next offset to be written",
                &["topic", "partition"],
            ),
            log_last_stable_offset: gauge_vec(
                &registry,
                "log_last_stable_offset",
                "Offset below which read_committed consumers may read (the first open transaction's start, or the high watermark); far below weir_log_end_offset means a hanging transaction",
                &["topic", "partition"],
            ),
            open_transactions: gauge_vec(
                &registry,
                "open_transactions",
                "Transactions open in a partition (started, not yet committed or aborted)",
                &["topic", "partition"],
            ),
            log_start_offset: gauge_vec(
                &registry,
                "log_start_offset",
                "First offset retained",
                &["topic", "partition"],
            ),
            group_committed_offset: gauge_vec(
                &registry,
                "group_committed_offset",
                "Committed offset of a consumer group",
                &["group", "topic", "partition"],
            ),
            group_lag: gauge_vec(
                &registry,
                "group_lag",
                "High watermark minus the group's committed offset (records not yet consumed)",
                &["group", "topic", "partition"],
            ),
            request_duration_seconds,
            connections,
            connections_total,
            offline_log_partitions: gauge(
                &registry,
                "log_offline_partitions",
                "Partitions offline after a storage failure (I/O error) until the broker restarts",
            ),
            connections_refused_total: counter_vec(
                &registry,
                "connections_refused_total",
                "Client connections closed on arrival, by reason (per_ip: max.connections.per.ip)",
                &["reason"],
            ),
            authentications_total: counter_vec(
                &registry,
                "authentications_total",
                "SASL and TLS client authentications, by listener, mechanism and result (success, failure)",
                &["listener", "mechanism", "result"],
            ),
            request_memory_used_bytes: gauge(
                &registry,
                "request_memory_used_bytes",
                "Bytes of requests read and not yet handled (queued.max.request.bytes pool)",
            ),
            request_memory_capacity_bytes: gauge(
                &registry,
                "request_memory_capacity_bytes",
                "The size of the queued.max.request.bytes pool",
            ),
            recovered_bytes_cut_total,
            cluster: ClusterGauges::new(&registry),
            registry,
        }
    }

    /// Refreshes per-partition and per-group gauges and renders everything in the text format.
    pub fn render(
        &self,
        topics: &TopicRegistry,
        groups: &GroupCoordinator,
        cluster: Option<&ClusterMember>,
    ) -> String {
        if let Some(cluster) = cluster {
            self.cluster.refresh(cluster);
        }
        self.group_committed_offset.reset();
        self.group_lag.reset();
        for group in groups.group_ids() {
            for fetched in groups.fetch_offsets(&group, None, false) {
                let (topic, partition) = (fetched.topic, fetched.partition);
                let Some(committed) = fetched.offset else {
                    continue;
                };
                let index = partition.to_string();
                let labels = [group.as_str(), topic.as_str(), index.as_str()];
                self.group_committed_offset
                    .with_label_values(&labels)
                    .set(committed.offset);
                if let Ok(partition) = topics.partition(&topic, partition) {
                    let lag = (partition.high_watermark() - committed.offset).max(0);
                    self.group_lag.with_label_values(&labels).set(lag);
                }
            }
        }
        self.log_size_bytes.reset();
        self.log_segments.reset();
        self.log_end_offset.reset();
        self.log_start_offset.reset();
        self.log_last_stable_offset.reset();
        self.open_transactions.reset();
        self.replica_lag.reset();
        let partitions = topics.all_partitions();
        let offline = partitions
            .iter()
            .filter(|partition| partition.offline_reason().is_some())
            .count();
        self.offline_log_partitions.set(offline as i64);
        for partition in partitions {
            let index = partition.index.to_string();
            let labels = [&*partition.topic, index.as_str()];
            let log = partition.log();
            self.log_size_bytes
                .with_label_values(&labels)
                .set(log.size_bytes() as i64);
            self.log_segments
                .with_label_values(&labels)
                .set(log.segment_count() as i64);
            self.log_end_offset
                .with_label_values(&labels)
                .set(log.log_end_offset());
            self.log_start_offset
                .with_label_values(&labels)
                .set(log.log_start_offset());
            let last_stable_offset =
                Partition::last_stable_offset_of(&log, partition.high_watermark());
            self.log_last_stable_offset
                .with_label_values(&labels)
                .set(last_stable_offset);
            self.open_transactions
                .with_label_values(&labels)
                .set(log.producer_state().open_transactions().len() as i64);
            drop(log);
            for (follower, lag) in partition.follower_lags() {
                let follower = follower.to_string();
                self.replica_lag
                    .with_label_values(&[&*partition.topic, index.as_str(), follower.as_str()])
                    .set(lag);
            }
        }
        let mut out = Vec::new();
        if let Err(error) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::warn!(%error, "could not encode metrics");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
