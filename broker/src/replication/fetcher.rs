//! Followers copying their leaders (Kafka's replica fetcher): one task per leader broker,
//! fetching every partition this broker follows there over one connection.
//!
//! For each partition, at each new leader epoch:
//! 1. Truncate (KIP-101/279): ask the leader where this log's latest epoch ends
//!    (OffsetForLeaderEpoch) and cut the log there; when the leader answers with an older epoch
//!    this log does not hold, cut where that epoch ends here and ask again. Records a new
//!    leader does not have never stay on a follower.
//! 2. Fetch from the log end (Fetch with `replica_id`, `current_leader_epoch`), append the
//!    batches as they are, take the leader's high watermark. The fetch offset tells the
//!    leader how far this replica got.
//!
//! A leader whose log now starts past this log's end (OFFSET_OUT_OF_RANGE, retention ran) is
//! asked for its log start, and this log starts over there. Errors that mean the metadata is
//! moving (NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH) pause the partition for
//! `replica.fetch.backoff.ms`; the next metadata image brings the new assignment.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    BrokerId, FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use tokio::sync::watch;
use tokio::time::Instant;
use weir_wire::{ClientError, ProtocolClient, SecurityConfigError};

use crate::cluster::member::ClusterMember;
use crate::config::BrokerConfig;
use crate::log::leader_epochs::UNDEFINED_OFFSET;
use crate::partition::Partition;
use crate::security::BrokerIdentity;

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

impl ReplicaSettings {
    /// How followers fetch and how long a leader waits for them.
    pub fn from_config(config: &BrokerConfig) -> Self {
        Self {
            lag_time_max_ms: config.long_or("replica.lag.time.max.ms", 30_000).max(1),
            fetch_wait_max_ms: config.long_or("replica.fetch.wait.max.ms", 500).max(0) as i32,
            fetch_max_bytes: config.long_or("replica.fetch.max.bytes", 1 << 20).max(0) as i32,
            fetch_response_max_bytes: config
                .long_or("replica.fetch.response.max.bytes", 10 << 20)
                .max(0) as i32,
            fetch_backoff_ms: config.long_or("replica.fetch.backoff.ms", 1000).max(0) as u64,
            socket_timeout_ms: config.long_or("replica.socket.timeout.ms", 30_000).max(1) as u64,
        }
    }
}

const FETCH_VERSION: i16 = 12;
const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 4;
const LIST_OFFSETS_VERSION: i16 = 7;
/// Rounds of OffsetForLeaderEpoch before giving up on a partition for a backoff.
const MAX_TRUNCATION_ROUNDS: usize = 64;
const EARLIEST_TIMESTAMP: i64 = -2;

/// A partition this broker follows, at the leader epoch the metadata gave.
#[derive(Clone)]
pub struct Followed {
    pub partition: Arc<Partition>,
    pub leader_epoch: i32,
}

impl Followed {
    fn key(&self) -> (Arc<str>, i32) {
        (Arc::clone(&self.partition.topic), self.partition.index)
    }
}

/// What a fetcher task needs besides its partitions.
#[derive(Clone)]
pub struct FetcherSetup {
    pub node_id: i32,
    pub settings: ReplicaSettings,
    pub cluster: Arc<ClusterMember>,
    /// How this broker connects to the leaders' inter-broker listener.
    pub identity: BrokerIdentity,
}

struct FollowState {
    followed: Followed,
    truncated: bool,
    paused_until: Option<Instant>,
}

/// The task fetching from broker `leader_id` everything `assigned` names, until shutdown.
pub async fn run(
    leader_id: i32,
    setup: FetcherSetup,
    mut assigned: watch::Receiver<Vec<Followed>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut states: BTreeMap<(Arc<str>, i32), FollowState> = BTreeMap::new();
    let mut client: Option<ProtocolClient> = None;
    let backoff = Duration::from_millis(setup.settings.fetch_backoff_ms);
    let mut last_error: Option<String> = None;
    loop {
        if *shutdown.borrow() {
            return;
        }
        if assigned.has_changed().unwrap_or(false) || states.is_empty() {
            refresh(&mut states, &assigned.borrow_and_update());
        }
        if states.is_empty() {
            tokio::select! {
                changed = assigned.changed() => if changed.is_err() { return },
                _ = crate::shutdown::stopped(&mut shutdown) => return,
            }
            continue;
        }
        let outcome = match client.as_mut() {
            Some(connection) => tokio::select! {
                outcome = fetch_round(connection, &setup, &mut states) => outcome,
                _ = crate::shutdown::stopped(&mut shutdown) => return,
            },
            None => match connect(leader_id, &setup).await {
                Ok(connection) => {
                    tracing::info!(
                        leader = leader_id,
                        address = connection.address(),
                        "fetching from leader"
                    );
                    client = Some(connection);
                    last_error = None;
                    continue;
                }
                Err(error) => Err(error),
            },
        };
        let pause = match outcome {
            Ok(pause) => pause,
            Err(error) => {
                let message = error.to_string();
                if last_error.as_deref() != Some(&message) {
                    tracing::warn!(leader = leader_id, error = %message, "cannot fetch from leader; retrying");
                    last_error = Some(message);
                }
                client = None;
                Some(Instant::now() + backoff)
            }
        };
        if let Some(until) = pause {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => {}
                // `changed` marks the assignment seen: take it now, or it is missed.
                changed = assigned.changed() => match changed {
                    Ok(()) => refresh(&mut states, &assigned.borrow_and_update()),
                    Err(_) => return,
                },
                _ = crate::shutdown::stopped(&mut shutdown) => return,
            }
        }
    }
}

/// Takes the new assignment; a partition keeps its progress while its leader epoch stays.
fn refresh(states: &mut BTreeMap<(Arc<str>, i32), FollowState>, assigned: &[Followed]) {
    let mut next = BTreeMap::new();
    for followed in assigned {
        let key = followed.key();
        let state = match states.remove(&key) {
            Some(state) if state.followed.leader_epoch == followed.leader_epoch => state,
            _ => FollowState {
                followed: followed.clone(),
                truncated: false,
                paused_until: None,
            },
        };
        next.insert(key, state);
    }
    *states = next;
}

#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("broker {leader_id} is not in the metadata")]
    UnknownLeader { leader_id: i32 },
    #[error(transparent)]
    Security(#[from] SecurityConfigError),
}

async fn connect(leader_id: i32, setup: &FetcherSetup) -> Result<ProtocolClient, FetchError> {
    let image = setup.cluster.image().image;
    let broker = image
        .brokers
        .get(&leader_id)
        .ok_or(FetchError::UnknownLeader { leader_id })?;
    let address = format!("{}:{}", broker.host, broker.port);
    let client_id = format!("weir-replica-{}", setup.node_id);
    let timeout = Duration::from_millis(setup.settings.socket_timeout_ms);
    let security = setup.identity.client_security()?;
    Ok(ProtocolClient::connect_secured(&address, &client_id, timeout, &security).await?)
}

/// Truncates what needs it, then one fetch. Returns when to try again if nothing could be
/// fetched now.
async fn fetch_round(
    client: &mut ProtocolClient,
    setup: &FetcherSetup,
    states: &mut BTreeMap<(Arc<str>, i32), FollowState>,
) -> Result<Option<Instant>, FetchError> {
    let now = Instant::now();
    let backoff = Duration::from_millis(setup.settings.fetch_backoff_ms);
    for state in states.values_mut() {
        if state.truncated || state.paused_until.is_some_and(|until| until > now) {
            continue;
        }
        match truncate(client, setup.node_id, &state.followed).await? {
            Ok(()) => state.truncated = true,
            Err(reason) => {
                tracing::debug!(topic = %state.followed.partition.topic, partition = state.followed.partition.index, %reason, "truncation deferred");
                state.paused_until = Some(now + backoff);
            }
        }
    }
    let ready: Vec<&FollowState> = states
        .values()
        .filter(|s| s.truncated && s.paused_until.is_none_or(|until| until <= now))
        .collect();
    if ready.is_empty() {
        let next = states.values().filter_map(|s| s.paused_until).min();
        return Ok(Some(next.unwrap_or(now + backoff)));
    }
    let request = fetch_request(setup, &ready);
    let wait = Duration::from_millis(setup.settings.fetch_wait_max_ms.max(0) as u64);
    let timeout = wait + Duration::from_millis(setup.settings.socket_timeout_ms);
    let response = client.call_within(FETCH_VERSION, &request, timeout).await?;
    if response.error_code != 0 {
        return Ok(Some(now + backoff));
    }
    for topic in response.responses {
        for data in topic.partitions {
            let key = (Arc::from(topic.topic.as_str()), data.partition_index);
            let Some(state) = states.get_mut(&key) else {
                continue;
            };
            if let Err(reason) = take_fetched(client, state, data).await? {
                tracing::debug!(topic = %state.followed.partition.topic, partition = state.followed.partition.index, %reason, "fetch paused");
                state.paused_until = Some(Instant::now() + backoff);
            }
        }
    }
    Ok(None)
}

fn fetch_request(setup: &FetcherSetup, ready: &[&FollowState]) -> FetchRequest {
    let mut topics: BTreeMap<Arc<str>, Vec<FetchPartition>> = BTreeMap::new();
    for state in ready {
        let partition = &state.followed.partition;
        let offsets = partition.offsets();
        topics
            .entry(Arc::clone(&partition.topic))
            .or_default()
            .push(
                FetchPartition::default()
                    .with_partition(partition.index)
                    .with_current_leader_epoch(state.followed.leader_epoch)
                    .with_fetch_offset(offsets.log_end_offset)
                    .with_log_start_offset(offsets.log_start_offset)
                    .with_partition_max_bytes(setup.settings.fetch_max_bytes),
            );
    }
    let topics = topics
        .into_iter()
        .map(|(name, partitions)| {
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_string(name.to_string())))
                .with_partitions(partitions)
        })
        .collect();
    FetchRequest::default()
        .with_replica_id(BrokerId(setup.node_id))
        .with_max_wait_ms(setup.settings.fetch_wait_max_ms)
        .with_min_bytes(1)
        .with_max_bytes(setup.settings.fetch_response_max_bytes)
        .with_session_epoch(-1)
        .with_topics(topics)
}

/// Appends one partition's fetched data, or deals with its error. The inner error is a reason
/// to pause the partition; the outer one a broken connection.
async fn take_fetched(
    client: &mut ProtocolClient,
    state: &mut FollowState,
    data: kafka_protocol::messages::fetch_response::PartitionData,
) -> Result<Result<(), String>, FetchError> {
    let followed = &state.followed;
    let partition = &followed.partition;
    match ResponseError::try_from_code(data.error_code) {
        None => {
            let records = data.records.unwrap_or_default();
            let appended =
                partition.append_as_follower(followed.leader_epoch, &records, data.high_watermark);
            Ok(appended.map(|_| ()).map_err(|error| error.to_string()))
        }
        Some(ResponseError::OffsetOutOfRange) => {
            let leader_start = list_log_start(client, followed).await?;
            Ok(match leader_start {
                Ok(start) if start > partition.offsets().log_end_offset => {
                    tracing::warn!(topic = %partition.topic, partition = partition.index, leader_log_start = start, "leader's log starts past ours: starting over there");
                    partition
                        .reset_as_follower(followed.leader_epoch, start)
                        .map_err(|error| error.to_string())
                }
                Ok(_) => {
                    // Ahead of the leader: truncate by epoch again.
                    state.truncated = false;
                    Ok(())
                }
                Err(reason) => Err(reason),
            })
        }
        Some(error) => Ok(Err(error.to_string())),
    }
}

/// KIP-279 truncation against the leader. The inner error means "not now" (the leader does not
/// lead at this epoch yet, or a log error).
async fn truncate(
    client: &mut ProtocolClient,
    node_id: i32,
    followed: &Followed,
) -> Result<Result<(), String>, FetchError> {
    let partition = &followed.partition;
    for _ in 0..MAX_TRUNCATION_ROUNDS {
        let Some(latest_epoch) = partition.latest_epoch() else {
            return Ok(Ok(())); // Nothing written in any epoch: nothing to cut.
        };
        let answer = ask_epoch_end(client, node_id, followed, latest_epoch).await?;
        let (leader_epoch, leader_end) = match answer {
            Ok(answer) => answer,
            Err(reason) => return Ok(Err(reason)),
        };
        let log_end = partition.offsets().log_end_offset;
        let step = truncation_step(
            (leader_epoch, leader_end),
            |epoch| partition.end_offset_for_epoch(epoch),
            partition.high_watermark(),
        );
        if step.cut_at < log_end {
            tracing::info!(topic = %partition.topic, partition = partition.index, from = log_end, to = step.cut_at, leader_epoch = followed.leader_epoch, "truncating to the leader's log");
        }
        // Also drops epochs begun at the cut with nothing written (the next round asks with
        // an older one).
        if let Err(error) = partition.truncate_as_follower(followed.leader_epoch, step.cut_at) {
            return Ok(Err(error.to_string()));
        }
        let progressed = partition.latest_epoch() != Some(latest_epoch);
        if step.done || !progressed {
            return Ok(Ok(()));
        }
    }
    Ok(Err("truncation did not settle".into()))
}

/// One round of KIP-279 truncation: where to cut, and whether the logs now agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncationStep {
    pub cut_at: i64,
    pub done: bool,
}

/// Given the leader's answer `(epoch, end offset)` for this log's latest epoch, this log's own
/// `end_offset_for` lookup and its high watermark: cut at the end of the leader's epoch if
/// this log holds that epoch (done); otherwise cut where this log's older epoch ends and ask
/// again with what remains. A leader that knows no such epoch leaves only the committed prefix.
pub fn truncation_step(
    leader_answer: (i32, i64),
    end_offset_for: impl Fn(i32) -> (i32, i64),
    high_watermark: i64,
) -> TruncationStep {
    let (leader_epoch, leader_end) = leader_answer;
    if leader_end == UNDEFINED_OFFSET {
        return TruncationStep {
            cut_at: high_watermark,
            done: true,
        };
    }
    let (local_epoch, local_end) = end_offset_for(leader_epoch);
    match local_epoch == leader_epoch {
        true => TruncationStep {
            cut_at: local_end.min(leader_end),
            done: true,
        },
        false => TruncationStep {
            cut_at: local_end,
            done: local_epoch < 0,
        },
    }
}

/// OffsetForLeaderEpoch for one partition: `(epoch, end offset)` as the leader answers.
async fn ask_epoch_end(
    client: &mut ProtocolClient,
    node_id: i32,
    followed: &Followed,
    epoch: i32,
) -> Result<Result<(i32, i64), String>, FetchError> {
    let partition = &followed.partition;
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(node_id))
        .with_topics(vec![OffsetForLeaderTopic::default()
            .with_topic(TopicName(StrBytes::from_string(
                partition.topic.to_string(),
            )))
            .with_partitions(vec![OffsetForLeaderPartition::default()
                .with_partition(partition.index)
                .with_current_leader_epoch(followed.leader_epoch)
                .with_leader_epoch(epoch)])]);
    let response = client
        .call(OFFSET_FOR_LEADER_EPOCH_VERSION, &request)
        .await?;
    let answer = response
        .topics
        .iter()
        .flat_map(|topic| topic.partitions.iter())
        .find(|p| p.partition == partition.index);
    Ok(match answer {
        None => Err("no answer for the partition".into()),
        Some(answer) => match ResponseError::try_from_code(answer.error_code) {
            Some(error) => Err(error.to_string()),
            None => Ok((answer.leader_epoch, answer.end_offset)),
        },
    })
}

/// The leader's log start offset (ListOffsets, earliest).
async fn list_log_start(
    client: &mut ProtocolClient,
    followed: &Followed,
) -> Result<Result<i64, String>, FetchError> {
    let partition = &followed.partition;
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_string(
                partition.topic.to_string(),
            )))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(partition.index)
                .with_current_leader_epoch(followed.leader_epoch)
                .with_timestamp(EARLIEST_TIMESTAMP)])]);
    let response = client.call(LIST_OFFSETS_VERSION, &request).await?;
    let answer = response
        .topics
        .iter()
        .flat_map(|topic| topic.partitions.iter())
        .find(|p| p.partition_index == partition.index);
    Ok(match answer {
        None => Err("no answer for the partition".into()),
        Some(answer) => match ResponseError::try_from_code(answer.error_code) {
            Some(error) => Err(error.to_string()),
            None => Ok(answer.offset),
        },
    })
}

#[cfg(test)]
mod tests;
