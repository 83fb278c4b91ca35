//! Transaction markers on their way to partition leaders (Kafka's transaction marker channel).
//!
//! A decided transaction ends with a COMMIT or ABORT marker in each of its partitions, written
//! by the partition's leader: here when this broker leads it (or runs alone), else with a
//! WriteTxnMarkers request to the leader the metadata image names. Every marker is appended the
//! way `acks=all` is — the in-sync replicas must hold it (at least `min.insync.replicas`) — so a
//! leader change cannot lose it. On `__consumer_offsets` the marker also applies or drops the
//! transaction's pending offsets in the group coordinator.
//!
//! Outcomes per partition: written; gone (topic deleted — nothing to end); later (no leader,
//! replicas missing, a connection failed: retried by the caller); fenced (a newer coordinator
//! wrote there — this one must stop).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersRequest};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::NO_LEADER;
use crate::group::offsets::OFFSETS_TOPIC;
use crate::group::GroupCoordinator;
use crate::log::control::MarkerKind;
use crate::log::LogError;
use crate::partition::leader_replicas::NotEnoughReplicas;
use crate::partition::role::ReplicationError;
use crate::producer::ProducerError;
use crate::topic::TopicRegistry;
use crate::transaction::channel::BrokerChannel;
use crate::transaction::state::TopicPartition;

/// How long a marker waits for the partition's in-sync replicas (and a remote leader's answer).
pub const MARKER_WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// The WriteTxnMarkers version sent (the only one Weir and Kafka 4 both serve).
const WRITE_TXN_MARKERS_VERSION: i16 = 1;

/// One transaction's end, as markers carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMarker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub coordinator_epoch: i32,
}

impl TxnMarker {
    fn kind(&self) -> MarkerKind {
        if self.commit {
            MarkerKind::Commit
        } else {
            MarkerKind::Abort
        }
    }
}

/// Why a marker could not be written into a partition this broker leads.
#[derive(Debug, thiserror::Error)]
pub enum MarkerWriteError {
    #[error("partition {topic}-{partition} is not hosted here")]
    UnknownPartition { topic: String, partition: i32 },
    #[error("this broker does not lead the partition")]
    NotLeader,
    #[error(transparent)]
    NotEnoughReplicas(#[from] NotEnoughReplicas),
    #[error("marker refused: {0}")]
    Log(#[from] LogError),
    #[error(transparent)]
    Replication(#[from] ReplicationError),
    #[error("the in-sync replicas did not copy the marker within {timeout_ms} ms")]
    TimedOut { timeout_ms: u128 },
}

/// What became of a partition's marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkerOutcome {
    Written,
    /// The partition no longer exists: nothing to end there.
    Gone,
    /// Not now (no leader, too few replicas, a lost connection): try again. Says why.
    Later(String),
    /// A newer coordinator (or producer epoch) wrote there: this coordinator must stop.
    Fenced(String),
}

impl MarkerOutcome {
    /// The outcome of a local write that failed.
    fn from_local(error: MarkerWriteError) -> Self {
        match error {
            MarkerWriteError::UnknownPartition { .. } => MarkerOutcome::Gone,
            MarkerWriteError::Log(LogError::Producer(ProducerError::CoordinatorFenced {
                ..
            })) => MarkerOutcome::Fenced(error.to_string()),
            // A later epoch of the producer already wrote here (see `from_remote`).
            MarkerWriteError::Log(LogError::Producer(ProducerError::InvalidEpoch { .. })) => {
                MarkerOutcome::Written
            }
            other => MarkerOutcome::Later(other.to_string()),
        }
    }

    /// The outcome of a remote leader's answer.
    fn from_remote(error: ResponseError) -> Self {
        match error {
            ResponseError::UnknownTopicOrPartition => MarkerOutcome::Gone,
            ResponseError::TransactionCoordinatorFenced => MarkerOutcome::Fenced(error.to_string()),
            // A later epoch of the producer already wrote here, so this transaction ended on
            // this partition (Kafka's marker handler gives up on the partition too).
            ResponseError::InvalidProducerEpoch | ResponseError::ProducerFenced => {
                MarkerOutcome::Written
            }
            other => MarkerOutcome::Later(other.to_string()),
        }
    }

    /// Nothing left to do for the partition.
    pub fn is_done(&self) -> bool {
        matches!(self, MarkerOutcome::Written | MarkerOutcome::Gone)
    }
}

/// Writes markers into partitions, wherever their leaders are.
pub struct MarkerWriter<'a> {
    pub topics: &'a TopicRegistry,
    pub groups: &'a GroupCoordinator,
    pub channel: &'a BrokerChannel,
}

impl MarkerWriter<'_> {
    /// Writes `marker` into each of `partitions` once; the outcome of each.
    pub async fn write(
        &self,
        marker: TxnMarker,
        partitions: &BTreeSet<TopicPartition>,
    ) -> Vec<(TopicPartition, MarkerOutcome)> {
        let mut outcomes = Vec::with_capacity(partitions.len());
        let mut local = Vec::new();
        let mut remote: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
        for tp in partitions {
            match self.leader_of(tp) {
                Leader::Local => local.push(tp),
                Leader::Remote(broker_id) => remote.entry(broker_id).or_default().push(tp.clone()),
                Leader::Unknown(outcome) => outcomes.push((tp.clone(), outcome)),
            }
        }
        let replicated = self.channel.in_cluster();
        let local_writes = local.into_iter().map(|tp| async move {
            let written = write_local(self.topics, self.groups, marker, tp, replicated).await;
            let outcome =
                written.map_or_else(MarkerOutcome::from_local, |()| MarkerOutcome::Written);
            vec![(tp.clone(), outcome)]
        });
        let remote_writes = remote
            .into_iter()
            .map(|(broker_id, tps)| self.write_remote(broker_id, marker, tps));
        let (local_done, remote_done) = futures::future::join(
            futures::future::join_all(local_writes),
            futures::future::join_all(remote_writes),
        )
        .await;
        outcomes.extend(local_done.into_iter().flatten());
        outcomes.extend(remote_done.into_iter().flatten());
        outcomes
    }

    fn leader_of(&self, (topic, index): &TopicPartition) -> Leader {
        let Some(image) = self.channel.image() else {
            return Leader::Local;
        };
        let Some(state) = image
            .topic_by_name(topic)
            .and_then(|t| t.partitions.get(*index as usize))
        else {
            return Leader::Unknown(MarkerOutcome::Gone);
        };
        match state.leader {
            NO_LEADER => {
                Leader::Unknown(MarkerOutcome::Later("the partition has no leader".into()))
            }
            leader if leader == self.channel.node_id() => Leader::Local,
            leader => Leader::Remote(leader),
        }
    }

    /// One WriteTxnMarkers request to `broker_id` for `partitions`.
    async fn write_remote(
        &self,
        broker_id: i32,
        marker: TxnMarker,
        partitions: Vec<TopicPartition>,
    ) -> Vec<(TopicPartition, MarkerOutcome)> {
        let request = marker_request(marker, &partitions);
        let response = self
            .channel
            .call(
                broker_id,
                WRITE_TXN_MARKERS_VERSION,
                &request,
                2 * MARKER_WRITE_TIMEOUT,
            )
            .await;
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                return partitions
                    .into_iter()
                    .map(|tp| (tp, MarkerOutcome::Later(error.to_string())))
                    .collect();
            }
        };
        let mut answered: HashMap<TopicPartition, MarkerOutcome> = HashMap::new();
        for topic in response.markers.iter().flat_map(|m| m.topics.iter()) {
            for partition in &topic.partitions {
                let outcome = match ResponseError::try_from_code(partition.error_code) {
                    None => MarkerOutcome::Written,
                    Some(error) => MarkerOutcome::from_remote(error),
                };
                let tp = (topic.name.to_string(), partition.partition_index);
                answered.insert(tp, outcome);
            }
        }
        partitions
            .into_iter()
            .map(|tp| {
                let outcome = answered.remove(&tp).unwrap_or_else(|| {
                    MarkerOutcome::Later("the leader did not answer for it".into())
                });
                (tp, outcome)
            })
            .collect()
    }
}

enum Leader {
    Local,
    Remote(i32),
    Unknown(MarkerOutcome),
}

fn marker_request(marker: TxnMarker, partitions: &[TopicPartition]) -> WriteTxnMarkersRequest {
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (topic, index) in partitions {
        by_topic.entry(topic).or_default().push(*index);
    }
    let topics = by_topic
        .into_iter()
        .map(|(topic, indexes)| {
            WritableTxnMarkerTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                .with_partition_indexes(indexes)
        })
        .collect();
    let marker = WritableTxnMarker::default()
        .with_producer_id(ProducerId(marker.producer_id))
        .with_producer_epoch(marker.producer_epoch)
        .with_transaction_result(marker.commit)
        .with_coordinator_epoch(marker.coordinator_epoch)
        .with_topics(topics);
    WriteTxnMarkersRequest::default().with_markers(vec![marker])
}

/// Writes `marker` into a partition this broker leads, then (`replicated`, in a cluster) waits
/// for its in-sync replicas; on `__consumer_offsets` the group coordinator applies or drops the
/// transaction's offsets. Shared by the coordinator and the WriteTxnMarkers handler.
pub async fn write_local(
    topics: &TopicRegistry,
    groups: &GroupCoordinator,
    marker: TxnMarker,
    (topic_name, index): &TopicPartition,
    replicated: bool,
) -> Result<(), MarkerWriteError> {
    let unknown = || MarkerWriteError::UnknownPartition {
        topic: topic_name.clone(),
        partition: *index,
    };
    let topic = topics.get(topic_name).ok_or_else(unknown)?;
    let partition = topic.partition(*index).ok_or_else(unknown)?;
    if !partition.is_leader() {
        return Err(MarkerWriteError::NotLeader);
    }
    let min_insync_replicas = topic.config.min_insync_replicas;
    if replicated {
        partition.check_min_insync(min_insync_replicas)?;
    }
    let info = partition
        .append_marker(
            marker.producer_id,
            marker.producer_epoch,
            marker.kind(),
            marker.coordinator_epoch,
        )
        .inspect_err(|error| {
            tracing::debug!(topic = %topic_name, partition = index, %error, "marker refused");
        })?;
    if replicated {
        let wait = partition.wait_replicated(info.last_offset, min_insync_replicas);
        match tokio::time::timeout(MARKER_WRITE_TIMEOUT, wait).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(MarkerWriteError::TimedOut {
                    timeout_ms: MARKER_WRITE_TIMEOUT.as_millis(),
                })
            }
        }
    }
    if topic_name == OFFSETS_TOPIC {
        groups.complete_txn(marker.producer_id, marker.commit);
    }
    Ok(())
}
