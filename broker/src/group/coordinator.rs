//! The group coordinator service: owns every group's state machine and committed offsets, parks
//! join/sync requests until their replies are released, runs the timeout ticker, and persists
//! offsets to `__consumer_offsets` (read back at start-up).
//!
//! In a cluster, a group belongs to the broker leading its partition of `__consumer_offsets`
//! (as in Kafka): that partition's groups and offsets are loaded from its log when this broker
//! starts leading it and dropped when it stops; requests for other groups get NOT_COORDINATOR.

mod offset_store;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::records::Record;
use tokio::sync::oneshot;

use crate::clock::Clock;
use crate::error::BrokerError;
use crate::group::error::{GroupDeleteError, GroupError};
use crate::group::metadata::{self, GroupSnapshot};
use crate::group::offsets::{self, CommittedOffset, OFFSETS_TOPIC};
use crate::group::state::{
    Group, GroupLimits, GroupState, JoinReply, JoinRequest, Outcome, Reply, SyncReply, Waiter,
};
use crate::topic::{internal, Topic, TopicRegistry};

/// How often group timeouts are checked.
pub const TICK_INTERVAL: Duration = Duration::from_millis(100);

enum Parked {
    Join(oneshot::Sender<JoinReply>),
    Sync(oneshot::Sender<SyncReply>),
}

/// A group's offsets by (topic, partition).
type GroupOffsets = BTreeMap<(String, i32), CommittedOffset>;

#[derive(Default)]
struct CoordinatorState {
    groups: HashMap<String, Group>,
    offsets: HashMap<String, BTreeMap<(String, i32), CommittedOffset>>,
    parked: HashMap<Waiter, Parked>,
    next_waiter: Waiter,
    /// Last time (ms) each group was seen with members, for offset expiry.
    last_active_ms: HashMap<String, i64>,
    /// The group metadata last written for each group (see `group::metadata`).
    persisted: HashMap<String, GroupSnapshot>,
    /// Offsets committed in open transactions (TxnOffsetCommit): producer id → group →
    /// offsets, applied by the commit marker, dropped by the abort marker.
    pending_txn: HashMap<i64, HashMap<String, GroupOffsets>>,
    /// Cluster mode: the `__consumer_offsets` partitions loaded here, with the leader epoch
    /// they were loaded at (unused alone: every group is the broker's own).
    owned: BTreeMap<i32, i32>,
}

/// A `__consumer_offsets` record left out while loading, with the reason.
fn skipped(record: &Record, reason: &str) {
    tracing::warn!(
        offset = record.offset,
        reason,
        "skipping a __consumer_offsets record while loading"
    );
}

impl CoordinatorState {
    /// Applies one record of `__consumer_offsets` read at start-up; true when it was an offset
    /// commit or group metadata.
    fn apply_record(&mut self, record: &Record) -> bool {
        let Some(key) = record.key.as_deref() else {
            return false;
        };
        if record.control {
            // A transaction marker: the producer's pending offsets apply or go.
            let commit = key.get(3) == Some(&1);
            self.complete_txn(record.producer_id, commit);
            return false;
        }
        if let Some(group_id) = metadata::decode_key(key) {
            match record.value.as_deref().map(metadata::decode_value) {
                Some(Some(snapshot)) => self.persisted.insert(group_id, snapshot),
                Some(None) => {
                    skipped(record, "group metadata that does not decode");
                    return false;
                }
                None => self.persisted.remove(&group_id),
            };
            return true;
        }
        let Some((group, topic, index)) = offsets::decode_key(key) else {
            skipped(
                record,
                "a key that is neither an offset commit nor group metadata",
            );
            return false;
        };
        let value = match record.value.as_deref().map(offsets::decode_value) {
            Some(Some(value)) => Some(value),
            // A damaged value is not a tombstone: the offset committed before stays.
            Some(None) => {
                skipped(record, "an offset commit whose value does not decode");
                return false;
            }
            None => None,
        };
        if record.transactional {
            if let Some(value) = value {
                self.pending_txn
                    .entry(record.producer_id)
                    .or_default()
                    .entry(group)
                    .or_default()
                    .insert((topic, index), value);
            }
            return true;
        }
        let group_offsets = self.offsets.entry(group).or_default();
        match value {
            Some(value) => group_offsets.insert((topic, index), value),
            None => group_offsets.remove(&(topic, index)),
        };
        true
    }

    /// Checks a commit's member against the group's membership and generation.
    fn check_member(&self, group_id: &str, member: &CommitMember<'_>) -> Option<GroupError> {
        match self.groups.get(group_id) {
            Some(group) => group
                .check_instance(member.member_id, member.group_instance_id)
                .or_else(|| group.check_commit(member.member_id, member.generation_id)),
            // A group the coordinator does not know accepts only "simple" commits, as in Kafka.
            None if member.generation_id < 0 => None,
            None => Some(GroupError::IllegalGeneration {
                requested: member.generation_id,
                current: -1,
            }),
        }
    }

    /// Takes back the pending offsets a failed TxnOffsetCommit registered (`replaced`: each
    /// key and the offset the transaction had pending for it before, if any).
    fn unregister_pending(
        &mut self,
        producer_id: i64,
        group_id: &str,
        replaced: Vec<((String, i32), Option<CommittedOffset>)>,
    ) {
        let Some(pending) = self
            .pending_txn
            .get_mut(&producer_id)
            .and_then(|groups| groups.get_mut(group_id))
        else {
            return;
        };
        for (key, before) in replaced {
            match before {
                Some(offset) => pending.insert(key, offset),
                None => pending.remove(&key),
            };
        }
    }

    /// A transaction of `producer_id` ended: its pending offsets apply (commit) or go (abort).
    fn complete_txn(&mut self, producer_id: i64, commit: bool) {
        let Some(groups) = self.pending_txn.remove(&producer_id) else {
            return;
        };
        if !commit {
            return;
        }
        for (group, offsets) in groups {
            self.offsets.entry(group).or_default().extend(offsets);
        }
    }

    /// Forgets the groups (and their offsets and parked requests) for which `belongs` holds.
    fn drop_groups(&mut self, belongs: impl Fn(&str) -> bool) {
        let dropped: Vec<String> = self
            .groups
            .keys()
            .chain(self.offsets.keys())
            .chain(self.persisted.keys())
            .filter(|id| belongs(id))
            .cloned()
            .collect();
        for group_id in dropped {
            if let Some(group) = self.groups.remove(&group_id) {
                // Their callers get COORDINATOR_NOT_AVAILABLE and look for the new coordinator.
                for waiter in group.waiters() {
                    self.parked.remove(&waiter);
                }
            }
            self.offsets.remove(&group_id);
            self.persisted.remove(&group_id);
            self.last_active_ms.remove(&group_id);
        }
        for groups in self.pending_txn.values_mut() {
            groups.retain(|group_id, _| !belongs(group_id));
        }
        self.pending_txn.retain(|_, groups| !groups.is_empty());
    }

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

/// What an offset commit's answer waits for.
pub struct CommitWait {
    pub partition: Arc<crate::partition::Partition>,
    pub last_offset: i64,
    /// An fsync covering the commit (`flush.on.ack`).
    pub durable: bool,
    /// Every in-sync replica holding it (cluster mode).
    pub replicated: bool,
}

/// The member an offset commit names: an OffsetCommit's, or a KIP-447 TxnOffsetCommit's (a
/// transactional producer committing without a consumer group's metadata names none, and is
/// checked by nothing but its transaction).
pub struct CommitMember<'a> {
    pub member_id: &'a str,
    pub group_instance_id: Option<&'a str>,
    pub generation_id: i32,
}

/// Why a TxnOffsetCommit was refused: by the group (a zombie member or generation), or by the
/// broker (the offsets partition, the append).
#[derive(Debug, thiserror::Error)]
pub enum TxnCommitError {
    #[error(transparent)]
    Group(GroupError),
    #[error(transparent)]
    Broker(#[from] BrokerError),
}

/// A committed offset as OffsetFetch answers it.
pub struct FetchedOffset {
    pub topic: String,
    pub partition: i32,
    /// `None`: nothing committed.
    pub offset: Option<CommittedOffset>,
    /// An open transaction is committing an offset for the partition (asked with
    /// `require_stable`).
    pub unstable: bool,
}

/// One group as ListGroups / DescribeGroups show it.
pub struct GroupSummary {
    pub group_id: String,
    pub generation_id: i32,
    pub state: &'static str,
    pub protocol_type: String,
    pub protocol_name: String,
    pub members: Vec<MemberSummary>,
}

/// One member as DescribeGroups shows it.
pub struct MemberSummary {
    pub member_id: String,
    /// KIP-345: the static member's `group.instance.id`.
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// The member's metadata for the group's chosen protocol.
    pub metadata: Bytes,
    pub assignment: Bytes,
}

pub struct GroupCoordinator {
    state: Mutex<CoordinatorState>,
    limits: GroupLimits,
    offsets_partitions: i32,
    clock: Arc<dyn Clock>,
    /// Cluster mode (groups follow offsets partition leadership); readable without the lock.
    in_cluster: std::sync::atomic::AtomicBool,
}

impl GroupCoordinator {
    pub fn new(limits: GroupLimits, offsets_partitions: i32, clock: Arc<dyn Clock>) -> Self {
        GroupCoordinator {
            state: Mutex::new(CoordinatorState::default()),
            limits,
            offsets_partitions,
            clock,
            in_cluster: std::sync::atomic::AtomicBool::new(false),
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
        internal::for_each_record(&topic, |record| {
            if state.apply_record(&record) {
                loaded += 1;
            }
        })?;
        self.restore_groups(&mut state, |_| true);
        Ok(loaded)
    }

    /// Groups from their persisted metadata, for the group ids `wanted` accepts.
    fn restore_groups(&self, state: &mut CoordinatorState, wanted: impl Fn(&str) -> bool) {
        state.offsets.retain(|_, offsets| !offsets.is_empty());
        let now_ms = self.clock.now_ms();
        let restored: Vec<(String, Group)> = state
            .persisted
            .iter()
            .filter(|(id, _)| wanted(id) && !state.groups.contains_key(*id))
            .map(|(id, snapshot)| {
                let group = Group::restore(id, snapshot.clone(), self.limits, now_ms);
                (id.clone(), group)
            })
            .collect();
        for (id, group) in restored {
            if !group.is_empty() {
                state.last_active_ms.insert(id.clone(), now_ms);
            }
            state.groups.insert(id, group);
        }
    }

    /// `__consumer_offsets` was deleted (a broker running alone; Kafka allows it): every group
    /// and committed offset goes with it, as on Kafka. Members find out when they next call
    /// (UNKNOWN_MEMBER_ID) and join again; the topic comes back with the next commit.
    pub fn offsets_topic_deleted(&self) {
        let mut state = self.lock();
        state.drop_groups(|_| true);
        tracing::warn!("__consumer_offsets deleted: every group and committed offset is gone");
    }

    /// Cluster mode: groups are served only once their offsets partition is loaded here.
    pub fn follow_partition_leadership(&self) {
        self.in_cluster
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Cluster mode: groups follow offsets partition leadership. Needs no lock.
    fn in_cluster(&self) -> bool {
        self.in_cluster.load(std::sync::atomic::Ordering::Acquire)
    }

    /// NOT_COORDINATOR for a group whose offsets partition this broker does not lead.
    pub fn coordinator_error(&self, group_id: &str) -> Option<GroupError> {
        if !self.in_cluster() {
            return None;
        }
        let index = offsets::partition_for(group_id, self.offsets_partitions);
        let owned = self.lock().owned.contains_key(&index);
        (!owned).then(|| GroupError::NotCoordinator {
            group_id: group_id.to_string(),
        })
    }

    /// This broker now leads partition `index` of `__consumer_offsets` at `leader_epoch`
    /// (`None`: it no longer does): its groups are loaded from the log, or dropped.
    pub fn leadership_changed(
        &self,
        topics: &TopicRegistry,
        index: i32,
        leader_epoch: Option<i32>,
    ) -> Result<(), BrokerError> {
        let partitions = self.offsets_partitions;
        let belongs = |group_id: &str| offsets::partition_for(group_id, partitions) == index;
        if !self.in_cluster() {
            return Ok(());
        }
        let mut state = self.lock();
        if state.owned.get(&index).copied() == leader_epoch {
            return Ok(());
        }
        state.drop_groups(belongs);
        state.owned.remove(&index);
        let Some(leader_epoch) = leader_epoch else {
            tracing::info!(
                partition = index,
                "no longer coordinating the groups of this offsets partition"
            );
            return Ok(());
        };
        let partition = topics.partition(OFFSETS_TOPIC, index)?;
        let mut loaded = 0;
        internal::for_each_record_of(&partition, |record| {
            let key = record.key.as_deref().unwrap_or_default();
            let ours = record.control
                || metadata::decode_key(key).is_some_and(|g| belongs(&g))
                || offsets::decode_key(key).is_some_and(|(g, _, _)| belongs(&g));
            if ours && state.apply_record(&record) {
                loaded += 1;
            }
        })?;
        self.restore_groups(&mut state, belongs);
        state.owned.insert(index, leader_epoch);
        tracing::info!(
            partition = index,
            leader_epoch,
            records = loaded,
            "coordinating the groups of this offsets partition"
        );
        Ok(())
    }

    /// The offsets topic, created on first use (FindCoordinator), like Kafka: compacted (the
    /// latest commit of each group/partition stays; tombstones of deleted offsets go after
    /// delete.retention.ms), `offsets.topic.segment.bytes` segments.
    pub fn offsets_topic(&self, topics: &TopicRegistry) -> Result<Arc<Topic>, BrokerError> {
        let configs = self.offsets_topic_configs(topics);
        // Read without the state lock: callers may hold it.
        if self.in_cluster() {
            // In a cluster the controller creates it; only a leader of one of its partitions
            // writes here.
            return topics.get(OFFSETS_TOPIC).ok_or(BrokerError::UnknownTopic {
                topic: OFFSETS_TOPIC.into(),
            });
        }
        internal::ensure_topic(topics, OFFSETS_TOPIC, self.offsets_partitions, configs)
    }

    /// The offsets topic's configs: compacted, `offsets.topic.segment.bytes` segments.
    pub fn offsets_topic_configs(&self, topics: &TopicRegistry) -> BTreeMap<String, String> {
        let segment_bytes = topics.broker_config().offsets_topic_segment_bytes();
        BTreeMap::from([
            ("cleanup.policy".to_string(), "compact".to_string()),
            ("segment.bytes".to_string(), segment_bytes.to_string()),
        ])
    }

    pub async fn join(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        request: JoinRequest,
    ) -> JoinReply {
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
            self.persist_group(&mut state, topics, group_id);
            if let Outcome::Now(reply) = outcome {
                state.parked.remove(&waiter);
                state.release(released);
                return reply;
            }
            state.release(released);
        }
        receiver.await.unwrap_or_else(|_| JoinReply {
            error: Some(GroupError::Unavailable),
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
        topics: &TopicRegistry,
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
                return sync_error(GroupError::unknown_member(member_id));
            };
            if let Some(error) = group.check_instance(member_id, group_instance_id) {
                state.parked.remove(&waiter);
                return sync_error(error);
            }
            let (outcome, released) =
                group.sync(member_id, generation_id, assignments, waiter, now_ms);
            // Persisted before the members learn their assignment, as Kafka does.
            self.persist_group(&mut state, topics, group_id);
            if let Outcome::Now(reply) = outcome {
                state.parked.remove(&waiter);
                state.release(released);
                return reply;
            }
            state.release(released);
        }
        receiver
            .await
            .unwrap_or_else(|_| sync_error(GroupError::Unavailable))
    }

    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
    ) -> Option<GroupError> {
        let now_ms = self.clock.now_ms();
        let mut state = self.lock();
        match state.groups.get_mut(group_id) {
            Some(group) => group
                .check_instance(member_id, group_instance_id)
                .or_else(|| group.heartbeat(member_id, generation_id, now_ms)),
            None => Some(GroupError::unknown_member(member_id)),
        }
    }

    /// LeaveGroup for one member, named by member id or (static members, v3+) instance id.
    pub fn leave(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Option<GroupError> {
        let now_ms = self.clock.now_ms();
        let mut state = self.lock();
        let Some(group) = state.groups.get_mut(group_id) else {
            return Some(GroupError::unknown_member(member_id));
        };
        let member_id = match group_instance_id {
            Some(instance) => match group.member_of_instance(instance) {
                Some(current) if member_id.is_empty() || current == member_id => current,
                Some(_) => return Some(GroupError::fenced_instance(member_id)),
                None => return Some(GroupError::unknown_member(member_id)),
            },
            None => member_id.to_string(),
        };
        let (error, released) = group.leave(&member_id, now_ms);
        self.persist_group(&mut state, topics, group_id);
        state.release(released);
        error
    }

    /// Applies timeouts to every group.
    pub fn tick(&self, topics: &TopicRegistry) {
        let now_ms = self.clock.now_ms();
        let mut state = self.lock();
        let mut released = Vec::new();
        let mut changed = Vec::new();
        for (id, group) in state.groups.iter_mut() {
            let replies = group.tick(now_ms);
            if !replies.is_empty() || group.state == GroupState::Empty {
                changed.push(id.clone());
            }
            released.extend(replies);
        }
        for id in changed {
            self.persist_group(&mut state, topics, &id);
        }
        state.release(released);
    }

    /// Writes the group's metadata record if the group is settled and changed since the last
    /// one. A failed write is logged: the group carries on, and would need a rebalance after a
    /// restart.
    fn persist_group(&self, state: &mut CoordinatorState, topics: &TopicRegistry, group_id: &str) {
        let now_ms = self.clock.now_ms();
        let Some(snapshot) = state.groups.get(group_id).and_then(|g| g.snapshot(now_ms)) else {
            return;
        };
        if state
            .persisted
            .get(group_id)
            .is_some_and(|last| last.same_as(&snapshot))
        {
            return;
        }
        let record = (
            metadata::encode_key(group_id),
            Some(metadata::encode_value(&snapshot)),
        );
        match self.append_records(topics, group_id, vec![record]) {
            Ok(_) => {
                state.persisted.insert(group_id.to_string(), snapshot);
            }
            Err(error) => {
                tracing::warn!(group = %group_id, %error, "could not persist group metadata")
            }
        }
    }

    /// Writes a tombstone for a group's metadata (deleted or expired group).
    fn forget_group(&self, topics: &TopicRegistry, group_id: &str) -> Result<(), BrokerError> {
        if self.lock().persisted.remove(group_id).is_none() {
            return Ok(());
        }
        let record = (metadata::encode_key(group_id), None);
        self.append_records(topics, group_id, vec![record])
            .map(|_| ())
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
                .map(|m| MemberSummary {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: m
                        .protocols
                        .iter()
                        .find(|(n, _)| *n == protocol)
                        .map(|(_, b)| b.clone())
                        .unwrap_or_default(),
                    assignment: m.assignment.clone(),
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
    ) -> Result<(), GroupDeleteError> {
        let committed: Vec<(String, i32)> = {
            let state = self.lock();
            let known = state
                .groups
                .get(group_id)
                .is_some_and(|g| g.state != GroupState::Dead)
                || state.offsets.contains_key(group_id);
            if !known {
                return Err(not_found(group_id));
            }
            if state.groups.get(group_id).is_some_and(|g| !g.is_empty()) {
                return Err(GroupError::NotEmpty.into());
            }
            state
                .offsets
                .get(group_id)
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default()
        };
        if !committed.is_empty() {
            self.append_tombstones(topics, group_id, &committed)?;
        }
        self.forget_group(topics, group_id)?;
        let mut state = self.lock();
        state.offsets.remove(group_id);
        if let Some(group) = state.groups.get_mut(group_id) {
            if let Some(error) = group.delete() {
                return Err(error.into());
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

fn sync_error(error: GroupError) -> SyncReply {
    SyncReply {
        error: Some(error),
        protocol_type: None,
        protocol_name: None,
        assignment: Bytes::new(),
    }
}

fn not_found(group_id: &str) -> GroupDeleteError {
    GroupError::NotFound {
        group_id: group_id.to_string(),
    }
    .into()
}
