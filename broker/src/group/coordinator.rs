//! The group coordinator service: owns every group's state machine and committed offsets, parks
//! join/sync requests until their replies are released, runs the timeout ticker, and persists
//! offsets to `__consumer_offsets` (read back at start-up).
//!
//! In a cluster, a group belongs to the broker leading its partition of `__consumer_offsets`
//! (as in Kafka): that partition's groups and offsets are loaded from its log when this broker
//! starts leading it and dropped when it stops; requests for other groups get NOT_COORDINATOR.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::records::Record;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use crate::clock::Clock;
use crate::error::BrokerError;
use crate::group::metadata::{self, GroupSnapshot};
use crate::group::offsets::{self, CommittedOffset, OFFSETS_TOPIC};
use crate::group::state::{
    Group, GroupLimits, GroupState, JoinReply, JoinRequest, Outcome, Reply, SyncReply, Waiter,
};
use crate::topic::{internal, Topic, TopicRegistry};

/// How often group timeouts are checked.
pub const TICK_INTERVAL: Duration = Duration::from_millis(100);
/// Kafka's `offset.metadata.max.bytes`.
pub const OFFSET_METADATA_MAX_BYTES: usize = 4096;

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
            match record.value.as_deref().and_then(metadata::decode_value) {
                Some(snapshot) => self.persisted.insert(group_id, snapshot),
                None => self.persisted.remove(&group_id),
            };
            return true;
        }
        let Some((group, topic, index)) = offsets::decode_key(key) else {
            return false;
        };
        let value = record.value.as_deref().and_then(offsets::decode_value);
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
    pub fn coordinator_error(&self, group_id: &str) -> Option<ResponseError> {
        if !self.in_cluster() {
            return None;
        }
        let index = offsets::partition_for(group_id, self.offsets_partitions);
        let owned = self.lock().owned.contains_key(&index);
        (!owned).then_some(ResponseError::NotCoordinator)
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
                return sync_error(ResponseError::UnknownMemberId);
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
        topics: &TopicRegistry,
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
    /// Returns what the answer must wait for: an fsync (`flush.on.ack`), and in a cluster the
    /// offsets partition's in-sync replicas (as Kafka writes commits with acks=all).
    pub fn commit(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        commits: Vec<(String, i32, CommittedOffset)>,
    ) -> Result<Option<CommitWait>, BrokerError> {
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
        let replicated = self.in_cluster();
        let group_offsets = state.offsets.entry(group_id.to_string()).or_default();
        for (topic, index, offset) in commits {
            group_offsets.insert((topic, index), offset);
        }
        Ok((flush_on_ack || replicated).then_some(CommitWait {
            partition,
            last_offset,
            durable: flush_on_ack,
            replicated,
        }))
    }

    /// Appends tombstones deleting the committed offsets of `partitions`.
    fn append_tombstones(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<(), BrokerError> {
        let records = partitions
            .iter()
            .map(|(t, p)| (t.as_str(), *p, None))
            .collect();
        self.append_offset_records(topics, group_id, records)
            .map(|_| ())
    }

    /// Appends offset records (a `None` value is a tombstone) to the group's offsets partition.
    /// Returns the partition, the last offset written and whether acks wait for an fsync.
    fn append_offset_records(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        entries: Vec<(&str, i32, Option<&CommittedOffset>)>,
    ) -> Result<(Arc<crate::partition::Partition>, i64, bool), BrokerError> {
        let records = entries
            .iter()
            .map(|(topic, partition, offset)| {
                (
                    offsets::encode_key(group_id, topic, *partition),
                    offset.map(offsets::encode_value),
                )
            })
            .collect();
        self.append_records(topics, group_id, records)
    }

    /// Appends (key, value) records (a `None` value is a tombstone) to the group's partition of
    /// `__consumer_offsets`. Returns the partition, the last offset written and whether acks
    /// wait for an fsync.
    fn append_records(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        entries: Vec<(Bytes, Option<Bytes>)>,
    ) -> Result<(Arc<crate::partition::Partition>, i64, bool), BrokerError> {
        let (topic, partition) = self.offsets_partition(topics, group_id)?;
        let batch = internal::key_value_batch(entries, None, self.clock.now_ms())?;
        let appended = partition.append(batch)?;
        Ok((partition, appended.last_offset, topic.config.flush_on_ack))
    }

    /// The topic and the `__consumer_offsets` partition of a group.
    /// The index of the group's `__consumer_offsets` partition, whether or not this broker
    /// hosts it (a transaction coordinator adding a group's offsets to a transaction).
    pub fn offsets_partition_index(&self, topics: &TopicRegistry, group_id: &str) -> i32 {
        let partitions = topics
            .get(OFFSETS_TOPIC)
            .map_or(self.offsets_partitions, |t| t.partitions.len() as i32);
        offsets::partition_for(group_id, partitions)
    }

    pub fn offsets_partition(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
    ) -> Result<(Arc<Topic>, Arc<crate::partition::Partition>), BrokerError> {
        let topic = self.offsets_topic(topics)?;
        let index = offsets::partition_for(group_id, topic.partitions.len() as i32);
        let partition = topic.partition(index).cloned().ok_or_else(|| {
            BrokerError::UnknownTopicOrPartition {
                topic: OFFSETS_TOPIC.into(),
                partition: index,
            }
        })?;
        Ok((topic, partition))
    }

    /// TxnOffsetCommit: the offsets are written to the group's partition of
    /// `__consumer_offsets` inside the producer's transaction and stay pending until its marker.
    pub fn txn_commit(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commits: Vec<(String, i32, CommittedOffset)>,
    ) -> Result<Option<CommitWait>, BrokerError> {
        if commits.is_empty() {
            return Ok(None);
        }
        let (topic, partition) = self.offsets_partition(topics, group_id)?;
        let records = commits
            .iter()
            .map(|(topic, index, offset)| {
                (
                    offsets::encode_key(group_id, topic, *index),
                    Some(offsets::encode_value(offset)),
                )
            })
            .collect();
        let producer = Some((producer_id, producer_epoch));
        let batch = internal::key_value_batch(records, producer, self.clock.now_ms())?;
        let appended = partition.append_from_coordinator(batch)?;
        let mut state = self.lock();
        let pending = state
            .pending_txn
            .entry(producer_id)
            .or_default()
            .entry(group_id.to_string())
            .or_default();
        for (topic, index, offset) in commits {
            pending.insert((topic, index), offset);
        }
        // As a plain commit: held by the offsets partition's replicas before it is answered,
        // or the transaction could commit without its offsets.
        let durable = topic.config.flush_on_ack;
        let replicated = self.in_cluster();
        Ok((durable || replicated).then_some(CommitWait {
            partition,
            last_offset: appended.last_offset,
            durable,
            replicated,
        }))
    }

    /// The transaction coordinator wrote `producer_id`'s marker to `__consumer_offsets`.
    pub fn complete_txn(&self, producer_id: i64, commit: bool) {
        self.lock().complete_txn(producer_id, commit);
    }

    /// Whether an open transaction holds a pending offset for the group's partition
    /// (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT then, KIP-447).
    pub fn has_pending_offset(&self, group_id: &str, topic: &str, partition: i32) -> bool {
        let key = (topic.to_string(), partition);
        self.lock().pending_txn.values().any(|groups| {
            groups
                .get(group_id)
                .is_some_and(|offsets| offsets.contains_key(&key))
        })
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
            self.append_tombstones(topics, group_id, &committed)
                .map_err(|error| crate::handler::errors::error_for(&error))?;
        }
        self.forget_group(topics, group_id)
            .map_err(|error| crate::handler::errors::error_for(&error))?;
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

    /// Topics a group's members subscribe to, from their consumer-protocol metadata (`None` when
    /// some member's metadata cannot be read: then every topic counts as subscribed).
    fn subscribed_topics(group: &Group) -> Option<Vec<String>> {
        use kafka_protocol::messages::ConsumerProtocolSubscription;
        use kafka_protocol::protocol::Decodable;
        let mut topics = Vec::new();
        for member in group.members.values() {
            for (_, metadata) in &member.protocols {
                let mut bytes = metadata.clone();
                if bytes.len() < 2 {
                    return None;
                }
                let version = i16::from_be_bytes([bytes[0], bytes[1]]);
                let _ = bytes::Buf::get_i16(&mut bytes);
                let subscription =
                    ConsumerProtocolSubscription::decode(&mut bytes, version.clamp(0, 3)).ok()?;
                topics.extend(subscription.topics.iter().map(|t| t.to_string()));
            }
        }
        Some(topics)
    }

    /// OffsetDelete: drops committed offsets of partitions the group does not subscribe to.
    /// Returns the group-level error, or per-partition errors.
    pub fn delete_offsets(
        &self,
        topics: &TopicRegistry,
        group_id: &str,
        partitions: Vec<(String, i32)>,
    ) -> Result<Vec<(String, i32, Option<ResponseError>)>, ResponseError> {
        let (deletable, results) = {
            let state = self.lock();
            let group = state
                .groups
                .get(group_id)
                .filter(|g| g.state != GroupState::Dead);
            if group.is_none() && !state.offsets.contains_key(group_id) {
                return Err(ResponseError::GroupIdNotFound);
            }
            let subscribed = match group {
                Some(g) if !g.is_empty() => Self::subscribed_topics(g),
                _ => Some(Vec::new()),
            };
            let mut deletable = Vec::new();
            let mut results = Vec::new();
            for (topic, partition) in partitions {
                let error = match &subscribed {
                    Some(list) if !list.contains(&topic) => None,
                    _ => Some(ResponseError::GroupSubscribedToTopic),
                };
                let committed = state
                    .offsets
                    .get(group_id)
                    .is_some_and(|o| o.contains_key(&(topic.clone(), partition)));
                if error.is_none() && committed {
                    deletable.push((topic.clone(), partition));
                }
                results.push((topic, partition, error));
            }
            (deletable, results)
        };
        if !deletable.is_empty() {
            self.append_tombstones(topics, group_id, &deletable)
                .map_err(|error| crate::handler::errors::error_for(&error))?;
            let mut state = self.lock();
            if let Some(offsets) = state.offsets.get_mut(group_id) {
                for key in &deletable {
                    offsets.remove(key);
                }
            }
        }
        Ok(results)
    }

    /// KIP-211: the committed offsets of a group with no members expire `retention_ms` after
    /// the later of its last commit and the last time it had members.
    pub fn expire_offsets(&self, topics: &TopicRegistry, retention_ms: i64) {
        let now_ms = self.clock.now_ms();
        let expired: Vec<(String, Vec<(String, i32)>)> = {
            let mut state = self.lock();
            let CoordinatorState {
                groups,
                offsets,
                last_active_ms,
                ..
            } = &mut *state;
            for (id, group) in groups.iter() {
                if !group.is_empty() {
                    last_active_ms.insert(id.clone(), now_ms);
                }
            }
            offsets
                .iter()
                .filter(|(id, _)| groups.get(*id).is_none_or(|g| g.is_empty()))
                .filter_map(|(id, committed)| {
                    let last_commit = committed
                        .values()
                        .map(|o| o.commit_timestamp_ms)
                        .max()
                        .unwrap_or(0);
                    let active = last_active_ms.get(id).copied().unwrap_or(0);
                    (now_ms - last_commit.max(active) > retention_ms)
                        .then(|| (id.clone(), committed.keys().cloned().collect()))
                })
                .collect()
        };
        for (group_id, partitions) in expired {
            tracing::info!(group = %group_id, partitions = partitions.len(), "committed offsets expired");
            if let Err(error) = self.append_tombstones(topics, &group_id, &partitions) {
                tracing::warn!(group = %group_id, %error, "could not write offset expiry");
                continue;
            }
            let mut state = self.lock();
            state.offsets.remove(&group_id);
            // An empty group without offsets is gone, as in Kafka; so is its metadata.
            let empty = state.groups.get(&group_id).is_none_or(|g| g.is_empty());
            if empty {
                state.groups.remove(&group_id);
                drop(state);
                if let Err(error) = self.forget_group(topics, &group_id) {
                    tracing::warn!(group = %group_id, %error, "could not delete group metadata");
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::config::BrokerConfig;

    fn offset(value: i64, at_ms: i64) -> CommittedOffset {
        CommittedOffset {
            offset: value,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp_ms: at_ms,
        }
    }

    #[test]
    fn offsets_of_empty_groups_expire_and_stay_expired_after_reload() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_000_000));
        let mut config =
            BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().to_path_buf());
        config.set("offsets.topic.num.partitions", "3").unwrap();
        let topics = TopicRegistry::open(config.clone(), clock.clone(), false).unwrap();
        topics.create("t", 1, 1, Default::default()).unwrap();
        let coordinator = GroupCoordinator::new(config.group_limits(), 3, clock.clone());
        coordinator
            .commit(&topics, "old", vec![("t".into(), 0, offset(5, 1_000_000))])
            .unwrap();
        clock.advance_ms(500);
        coordinator
            .commit(
                &topics,
                "recent",
                vec![("t".into(), 0, offset(7, 1_000_500))],
            )
            .unwrap();
        clock.advance_ms(700); // "old" committed 1200 ms ago, "recent" 700 ms ago
        coordinator.expire_offsets(&topics, 1000);
        let ids = coordinator.group_ids();
        assert_eq!(ids, vec!["recent".to_string()]);

        // Deleting offsets of an unsubscribed (memberless) group, and a group that does not exist.
        let results = coordinator
            .delete_offsets(&topics, "recent", vec![("t".into(), 0)])
            .unwrap();
        assert_eq!(results, vec![("t".to_string(), 0, None)]);
        assert_eq!(
            coordinator
                .delete_offsets(&topics, "nobody", vec![("t".into(), 0)])
                .err(),
            Some(ResponseError::GroupIdNotFound)
        );

        // A fresh coordinator reading __consumer_offsets sees the tombstones.
        let reloaded = GroupCoordinator::new(config.group_limits(), 3, clock);
        assert!(
            reloaded.load(&topics).unwrap() >= 4,
            "2 commits and 2 tombstones"
        );
        assert!(reloaded.group_ids().is_empty());
    }

    fn join_request(member_id: &str) -> JoinRequest {
        JoinRequest {
            member_id: member_id.to_string(),
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            protocol_type: "consumer".into(),
            protocols: vec![("range".into(), Bytes::from_static(b"subscription"))],
            require_known_member_id: false,
            group_instance_id: None,
        }
    }

    #[tokio::test]
    async fn a_settled_group_comes_back_after_a_restart_and_carries_on_without_a_rebalance() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_000_000));
        let mut config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().into());
        config.set("group.initial.rebalance.delay.ms", "0").unwrap();
        let topics = TopicRegistry::open(config.clone(), clock.clone(), false).unwrap();
        let coordinator = GroupCoordinator::new(config.group_limits(), 3, clock.clone());
        let joined = coordinator.join(&topics, "g", join_request("")).await;
        let member = joined.member_id.clone();
        assert_eq!(joined.generation_id, 1);
        let assignment = Bytes::from_static(b"partitions 0-5");
        let synced = coordinator
            .sync(
                &topics,
                "g",
                &member,
                None,
                1,
                vec![(member.clone(), assignment.clone())],
            )
            .await;
        assert_eq!(synced.error, None);

        // "Restart": a new coordinator loads __consumer_offsets.
        clock.advance_ms(5_000);
        let restarted = GroupCoordinator::new(config.group_limits(), 3, clock.clone());
        restarted.load(&topics).unwrap();
        let summary = restarted.describe("g").unwrap();
        assert_eq!((summary.state, summary.generation_id), ("Stable", 1));
        assert_eq!(summary.protocol_name, "range");
        assert_eq!(summary.members.len(), 1);
        assert_eq!(summary.members[0].4, assignment);
        // The member's next heartbeat is accepted: no rebalance. Its session restarted at load.
        clock.advance_ms(9_000);
        restarted.tick(&topics);
        assert_eq!(restarted.heartbeat("g", &member, None, 1), None);
        let synced = restarted.sync(&topics, "g", &member, None, 1, vec![]).await;
        assert_eq!(
            synced.assignment, assignment,
            "a Stable group answers SyncGroup"
        );

        // The member goes silent: the group empties (generation 2), and that is persisted too.
        clock.advance_ms(10_001);
        restarted.tick(&topics);
        let again = GroupCoordinator::new(config.group_limits(), 3, clock.clone());
        again.load(&topics).unwrap();
        let summary = again.describe("g").unwrap();
        assert_eq!((summary.state, summary.generation_id), ("Empty", 2));
        assert!(summary.members.is_empty());
        assert_eq!(
            again.heartbeat("g", &member, None, 1),
            Some(ResponseError::UnknownMemberId)
        );

        // Deleting the group writes a tombstone: after a reload it is gone.
        again.delete_group(&topics, "g").unwrap();
        let last = GroupCoordinator::new(config.group_limits(), 3, clock);
        last.load(&topics).unwrap();
        assert!(last.describe("g").is_none());
        assert!(last.group_ids().is_empty());
    }
}
