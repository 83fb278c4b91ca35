//! The group coordinator service: owns every group's state machine and committed offsets, parks
//! join/sync requests until their replies are released, runs the timeout ticker, and persists
//! offsets to `__consumer_offsets` (read back at start-up).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use crate::clock::Clock;
use crate::error::BrokerError;
use crate::group::offsets::{self, CommittedOffset, OFFSETS_TOPIC};
use crate::group::state::{
    Group, GroupLimits, GroupState, JoinReply, JoinRequest, Outcome, Reply, SyncReply, Waiter,
};
use crate::topic::{Topic, TopicRegistry};

/// How often group timeouts are checked.
pub const TICK_INTERVAL: Duration = Duration::from_millis(100);
/// Kafka's `offset.metadata.max.bytes`.
pub const OFFSET_METADATA_MAX_BYTES: usize = 4096;

enum Parked {
    Join(oneshot::Sender<JoinReply>),
    Sync(oneshot::Sender<SyncReply>),
}

#[derive(Default)]
struct CoordinatorState {
    groups: HashMap<String, Group>,
    offsets: HashMap<String, BTreeMap<(String, i32), CommittedOffset>>,
    parked: HashMap<Waiter, Parked>,
    next_waiter: Waiter,
}

impl CoordinatorState {
    fn park(&mut self, parked: Parked) -> Waiter {
        self.next_waiter += 1;
        self.parked.insert(self.next_waiter, parked);
        self.next_waiter
    }

    fn release(&mut self, replies: Vec<Reply>) {
        for reply in replies {
            match reply {
                Reply::Join(waiter, reply) => {
                    if let Some(Parked::Join(sender)) = self.parked.remove(&waiter) {
                        let _ = sender.send(reply);
                    }
                }
                Reply::Sync(waiter, reply) => {
                    if let Some(Parked::Sync(sender)) = self.parked.remove(&waiter) {
                        let _ = sender.send(reply);
                    }
                }
            }
        }
    }
}

/// One group as ListGroups / DescribeGroups show it.
pub struct GroupSummary {
    pub group_id: String,
    pub generation_id: i32,
    pub state: &'static str,
    pub protocol_type: String,
    pub protocol_name: String,
    /// (member id, client id, client host, metadata for the chosen protocol, assignment)
    pub members: Vec<(String, String, String, Bytes, Bytes)>,
}

pub struct GroupCoordinator {
    state: Mutex<CoordinatorState>,
    limits: GroupLimits,
    offsets_partitions: i32,
    clock: Arc<dyn Clock>,
}

impl GroupCoordinator {
    pub fn new(limits: GroupLimits, offsets_partitions: i32, clock: Arc<dyn Clock>) -> Self {
        GroupCoordinator {
            state: Mutex::new(CoordinatorState::default()),
            limits,
            offsets_partitions,
            clock,
        }
    }

    fn lock(&self) -> MutexGuard<'_, CoordinatorState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Rebuilds committed offsets from `__consumer_offsets`, if it exists.
    pub fn load(&self, topics: &TopicRegistry) -> Result<usize, BrokerError> {
        let Some(topic) = topics.get(OFFSETS_TOPIC) else {
            return Ok(0);
        };
        let mut state = self.lock();
        let mut loaded = 0;
        for partition in &topic.partitions {
            for (_, batch) in partition.log().read_all_batches()? {
                let mut bytes = batch;
                let Ok(set) = RecordBatchDecoder::decode(&mut bytes) else {
                    tracing::warn!(
                        partition = partition.index,
                        "skipping an unreadable batch in {OFFSETS_TOPIC}"
                    );
                    continue;
                };
                for record in set.records {
                    let Some((group, topic, index)) =
                        record.key.as_deref().and_then(offsets::decode_key)
                    else {
                        continue;
                    };
                    let group_offsets = state.offsets.entry(group).or_default();
                    match record.value.as_deref().and_then(offsets::decode_value) {
                        Some(value) => {
                            group_offsets.insert((topic, index), value);
                        }
                        None => {
                            group_offsets.remove(&(topic, index));
                        }
                    }
                    loaded += 1;
                }
            }
        }
        state.offsets.retain(|_, offsets| !offsets.is_empty());
        Ok(loaded)
    }

    /// The offsets topic, created on first use (FindCoordinator), like Kafka.
    pub fn offsets_topic(&self, topics: &TopicRegistry) -> Result<Arc<Topic>, BrokerError> {
        if let Some(topic) = topics.get(OFFSETS_TOPIC) {
            return Ok(topic);
        }
        // Until compaction exists, keep every record: retention must never drop offsets.
        let configs = BTreeMap::from([("retention.ms".to_string(), "-1".to_string())]);
        match topics.create(OFFSETS_TOPIC, self.offsets_partitions, 1, configs) {
            Ok(topic) => Ok(topic),
            Err(BrokerError::TopicAlreadyExists { .. }) => topics
                .get(OFFSETS_TOPIC)
                .ok_or_else(|| BrokerError::InvalidRequest(format!("{OFFSETS_TOPIC} vanished"))),
            Err(error) => Err(error),
        }
    }

    pub async fn join(&self, group_id: &str, request: JoinRequest) -> JoinReply {
        let now_ms = self.clock.now_ms();
        let new_member_id = format!("{}-{}", request.client_id, uuid::Uuid::new_v4());
        let (sender, receiver) = oneshot::channel();
        {
            let mut state = self.lock();
            let waiter = state.park(Parked::Join(sender));
            let limits = self.limits;
            let group = state
                .groups
                .entry(group_id.to_string())
                .or_insert_with(|| Group::new(group_id, limits));
            if group.state == GroupState::Dead {
                *group = Group::new(group_id, limits);
            }
            let (outcome, released) = group.join(request, new_member_id, waiter, now_ms);
            if let Outcome::Now(reply) = outcome {
                state.parked.remove(&waiter);
                state.release(released);
                return reply;
            }
            state.release(released);
        }
        receiver.await.unwrap_or_else(|_| JoinReply {
            error: Some(ResponseError::CoordinatorNotAvailable),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            member_id: String::new(),
            members: Vec::new(),
        })
    }

    pub async fn sync(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        assignments: Vec<(String, Bytes)>,
    ) -> SyncReply {
        let now_ms = self.clock.now_ms();
        let (sender, receiver) = oneshot::channel();
        {
            let mut state = self.lock();
            let waiter = state.park(Parked::Sync(sender));
            let Some(group) = state.groups.get_mut(group_id) else {
                state.parked.remove(&waiter);
                return sync_error(ResponseError::UnknownMemberId);
            };
            if let Some(error) = group.check_instance(member_id, group_instance_id) {
                state.parked.remove(&waiter);
                return sync_error(error);
            }
            let (outcome, released) =
                group.sync(member_id, generation_id, assignments, waiter, now_ms);
            if let Outcome::Now(reply) = outcome {
                state.parked.remove(&waiter);
                state.release(released);
                return reply;
            }
            state.release(released);
        }
        receiver
            .await
            .unwrap_or_else(|_| sync_error(ResponseError::CoordinatorNotAvailable))
    }

    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Option<ResponseError> {
        let now_ms = self.clock.now_ms();
        let mut state = self.lock();
        match state.groups.get_mut(group_id) {
            Some(group) => group
                .check_instance(member_id, group_instance_id)
                .or_else(|| group.heartbeat(member_id, generation_id, now_ms)),
            None => Some(ResponseError::UnknownMemberId),
        }
    }

    /// LeaveGroup for one member, named by member id or (static members, v3+) instance id.
    pub fn leave(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Option<ResponseError> {
        let now_ms = self.clock.now_ms();
        let mut state = self.lock();
        let Some(group) = state.groups.get_mut(group_id) else {
            return Some(ResponseError::UnknownMemberId);
        };
        let member_id = match group_instance_id {
            Some(instance) => match group.member_of_instance(instance) {
                Some(current) if member_id.is_empty() || current == member_id => current,
                Some(_) => return Some(ResponseError::FencedInstanceId),
                None => return Some(ResponseError::UnknownMemberId),
            },
            None => member_id.to_string(),
        };
        let (error, released) = group.leave(&member_id, now_ms);
        state.release(released);
        error
    }

    /// Applies timeouts to every group.
    pub fn tick(&self) {
        let now_ms = self.clock.now_ms();
        let mut state = self.lock();
        let mut released = Vec::new();
        for group in state.groups.values_mut() {
            released.extend(group.tick(now_ms));
        }
        state.release(released);
    }

    /// Checks an offset commit against the group's membership and generation.
    pub fn check_commit(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Option<ResponseError> {
        let state = self.lock();
        match state.groups.get(group_id) {
            Some(group) => group
                .check_instance(member_id, group_instance_id)
                .or_else(|| group.check_commit(member_id, generation_id)),
            // A group the coordinator does not know accepts only "simple" commits, as in Kafka.
            None if generation_id < 0 => None,
            None => Some(ResponseError::IllegalGeneration),
        }
    }

    /// Appends offset commits to the group's `__consumer_offsets` partition, then applies them.
    /// Returns the last offset appended (for durability waits).
    pub fn commit(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        commits: Vec<(String, i32, CommittedOffset)>,
    ) -> Result<Option<(Arc<crate::partition::Partition>, i64)>, BrokerError> {
        if commits.is_empty() {
            return Ok(None);
        }
        let records = commits
            .iter()
            .map(|(topic, partition, offset)| (topic.as_str(), *partition, Some(offset)))
            .collect();
        let (partition, last_offset, flush_on_ack) =
            self.append_offset_records(topics, group_id, records)?;
        let mut state = self.lock();
        let group_offsets = state.offsets.entry(group_id.to_string()).or_default();
        for (topic, index, offset) in commits {
            group_offsets.insert((topic, index), offset);
        }
        Ok(flush_on_ack.then_some((partition, last_offset)))
    }

    /// Appends offset records (a `None` value is a tombstone) to the group's offsets partition.
    /// Returns the partition, the last offset written and whether acks wait for an fsync.
    fn append_offset_records(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        entries: Vec<(&str, i32, Option<&CommittedOffset>)>,
    ) -> Result<(Arc<crate::partition::Partition>, i64, bool), BrokerError> {
        let topic = self.offsets_topic(topics)?;
        let index = offsets::partition_for(group_id, topic.partitions.len() as i32);
        let partition = topic.partition(index).cloned().ok_or_else(|| {
            BrokerError::UnknownTopicOrPartition {
                topic: OFFSETS_TOPIC.into(),
                partition: index,
            }
        })?;
        let now_ms = self.clock.now_ms();
        let records: Vec<Record> = entries
            .iter()
            .enumerate()
            .map(|(i, (topic, partition, offset))| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                sequence: i as i32 - 1,
                timestamp: now_ms,
                key: Some(offsets::encode_key(group_id, topic, *partition)),
                value: offset.map(offsets::encode_value),
                headers: Default::default(),
            })
            .collect();
        let mut batch = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut batch,
            records.iter(),
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::None,
            },
        )
        .map_err(|e| BrokerError::InvalidRequest(format!("cannot encode offset records: {e}")))?;
        let appended = partition.append(batch)?;
        Ok((partition, appended.last_offset, topic.config.flush_on_ack))
    }

    /// Committed offsets of a group: the requested partitions, or all when `None`.
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        partitions: Option<Vec<(String, i32)>>,
    ) -> Vec<(String, i32, Option<CommittedOffset>)> {
        let state = self.lock();
        let committed = state.offsets.get(group_id);
        match partitions {
            Some(wanted) => wanted
                .into_iter()
                .map(|(topic, index)| {
                    let found = committed.and_then(|c| c.get(&(topic.clone(), index)).cloned());
                    (topic, index, found)
                })
                .collect(),
            None => committed
                .map(|c| {
                    c.iter()
                        .map(|((t, p), o)| (t.clone(), *p, Some(o.clone())))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// Every group the coordinator knows, with members.
    pub fn describe(&self, group_id: &str) -> Option<GroupSummary> {
        let state = self.lock();
        let group = state.groups.get(group_id)?;
        let protocol = group.protocol_name.clone().unwrap_or_default();
        Some(GroupSummary {
            group_id: group.group_id.clone(),
            generation_id: group.generation_id,
            state: group.state.name(),
            protocol_type: group.protocol_type.clone().unwrap_or_default(),
            protocol_name: protocol.clone(),
            members: group
                .members
                .values()
                .map(|m| {
                    let metadata = m
                        .protocols
                        .iter()
                        .find(|(n, _)| *n == protocol)
                        .map(|(_, b)| b.clone())
                        .unwrap_or_default();
                    (
                        m.member_id.clone(),
                        m.client_id.clone(),
                        m.client_host.clone(),
                        metadata,
                        m.assignment.clone(),
                    )
                })
                .collect(),
        })
    }

    /// Every known group as (group id, protocol type, state): groups with a state machine, and
    /// groups that only have committed offsets (shown as Empty, like Kafka after a restart).
    pub fn list(&self) -> Vec<(String, String, &'static str)> {
        let state = self.lock();
        let mut groups: Vec<(String, String, &'static str)> = state
            .groups
            .values()
            .filter(|g| g.state != GroupState::Dead)
            .map(|g| {
                (
                    g.group_id.clone(),
                    g.protocol_type.clone().unwrap_or_default(),
                    g.state.name(),
                )
            })
            .collect();
        for id in state.offsets.keys() {
            if !groups.iter().any(|(g, _, _)| g == id) {
                groups.push((id.clone(), "consumer".to_string(), GroupState::Empty.name()));
            }
        }
        groups.sort();
        groups
    }

    /// Deletes an empty group and its committed offsets (tombstones in `__consumer_offsets`).
    pub fn delete_group(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
    ) -> Result<(), ResponseError> {
        let committed: Vec<(String, i32)> = {
            let state = self.lock();
            let known = state
                .groups
                .get(group_id)
                .is_some_and(|g| g.state != GroupState::Dead)
                || state.offsets.contains_key(group_id);
            if !known {
                return Err(ResponseError::GroupIdNotFound);
            }
            if state.groups.get(group_id).is_some_and(|g| !g.is_empty()) {
                return Err(ResponseError::NonEmptyGroup);
            }
            state
                .offsets
                .get(group_id)
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        if !committed.is_empty() {
            self.append_offset_records(
                topics,
                group_id,
                committed
                    .iter()
                    .map(|(t, p)| (t.as_str(), *p, None))
                    .collect(),
            )
            .map_err(|error| crate::handler::errors::error_for(&error))?;
        }
        let mut state = self.lock();
        state.offsets.remove(group_id);
        if let Some(group) = state.groups.get_mut(group_id) {
            if let Some(error) = group.delete() {
                return Err(error);
            }
        }
        state.groups.remove(group_id);
        Ok(())
    }

    /// Group ids: those with members or committed offsets.
    pub fn group_ids(&self) -> Vec<String> {
        let state = self.lock();
        let mut ids: Vec<String> = state
            .groups
            .iter()
            .filter(|(_, g)| g.state != GroupState::Dead)
            .map(|(id, _)| id.clone())
            .chain(state.offsets.keys().cloned())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }
}

fn sync_error(error: ResponseError) -> SyncReply {
    SyncReply {
        error: Some(error),
        protocol_type: None,
        protocol_name: None,
        assignment: Bytes::new(),
    }
}
