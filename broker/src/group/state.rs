//! The classic consumer-group protocol as a pure state machine: requests and clock ticks in,
//! replies out. No I/O, no tasks, no real time — the coordinator (`group::coordinator`) feeds it
//! and delivers the replies, and tests drive it with a hand-moved clock.
//!
//! States as in Kafka: Empty → PreparingRebalance → CompletingRebalance → Stable, and Dead once
//! deleted. A rebalance completes when every known member has rejoined or the rebalance timeout
//! (the largest `rebalance_timeout_ms` of the members) passes; members that did not rejoin are
//! removed. Members that stop heartbeating for `session_timeout_ms` are removed and trigger a
//! rebalance. Join and sync replies may be parked until the rebalance (or the leader's sync)
//! completes; they come out of later calls as [`Reply`]s addressed by [`Waiter`] id.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::config::BrokerConfig;
use crate::group::metadata::{GroupSnapshot, MemberSnapshot};
use crate::group::GroupError;

/// Identifies a parked request so its reply can be delivered later.
pub type Waiter = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// Limits from the broker config (`group.min.session.timeout.ms` etc.).
#[derive(Debug, Clone, Copy)]
pub struct GroupLimits {
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub initial_rebalance_delay_ms: i64,
    pub max_members: usize,
}

impl GroupLimits {
    pub fn from_config(config: &BrokerConfig) -> Self {
        Self {
            min_session_timeout_ms: config.long_or("group.min.session.timeout.ms", 6000) as i32,
            max_session_timeout_ms: config.long_or("group.max.session.timeout.ms", 1_800_000)
                as i32,
            initial_rebalance_delay_ms: config.long_or("group.initial.rebalance.delay.ms", 3000),
            max_members: config.long_or("group.max.size", i32::MAX as i64) as usize,
        }
    }
}

#[derive(Debug, Clone)]
pub struct JoinRequest {
    pub member_id: String,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    /// KIP-394: JoinGroup v4+ must first obtain a member id (MEMBER_ID_REQUIRED).
    pub require_known_member_id: bool,
    /// KIP-345: a static member's `group.instance.id`.
    pub group_instance_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct JoinReply {
    pub error: Option<GroupError>,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// Only for the leader: every member with its metadata for the chosen protocol.
    pub members: Vec<(String, Bytes)>,
}

impl JoinReply {
    fn error(error: GroupError, member_id: &str) -> Self {
        JoinReply {
            error: Some(error),
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            member_id: member_id.to_string(),
            members: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SyncReply {
    pub error: Option<GroupError>,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncReply {
    fn error(error: GroupError) -> Self {
        SyncReply {
            error: Some(error),
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// A reply released by a state change.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Join(Waiter, JoinReply),
    Sync(Waiter, SyncReply),
}

/// The answer to a call: now, or later (parked under the given waiter).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    Now(T),
    Parked,
}

#[derive(Debug, Clone)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    last_heartbeat_ms: i64,
    awaiting_join: Option<Waiter>,
    awaiting_sync: Option<Waiter>,
}

impl Member {
    fn metadata_for(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, metadata)| metadata.clone())
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone)]
pub struct Group {
    pub group_id: String,
    pub state: GroupState,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: Option<String>,
    pub members: BTreeMap<String, Member>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, not yet joined (KIP-394), with expiry.
    pending_members: BTreeMap<String, i64>,
    /// KIP-345: group.instance.id → current member id of that static member.
    static_members: BTreeMap<String, String>,
    rebalance_deadline_ms: i64,
    initial_delay_until_ms: Option<i64>,
    limits: GroupLimits,
}

impl Group {
    pub fn new(group_id: &str, limits: GroupLimits) -> Self {
        Group {
            group_id: group_id.to_string(),
            state: GroupState::Empty,
            generation_id: 0,
            protocol_type: None,
            protocol_name: None,
            leader: None,
            members: BTreeMap::new(),
            pending_members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            rebalance_deadline_ms: 0,
            initial_delay_until_ms: None,
            limits,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// What is persisted of a settled group (Stable, or Empty after it had members); `None` in
    /// the other states, which a restart does not restore.
    pub fn snapshot(&self, now_ms: i64) -> Option<GroupSnapshot> {
        let settled = match self.state {
            GroupState::Stable => true,
            GroupState::Empty => self.generation_id > 0,
            _ => false,
        };
        if !settled {
            return None;
        }
        let protocol = self.protocol_name.clone().unwrap_or_default();
        Some(GroupSnapshot {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation_id: self.generation_id,
            protocol_name: self.protocol_name.clone(),
            leader: self.leader.clone(),
            state_timestamp_ms: now_ms,
            members: self
                .members
                .values()
                .map(|m| MemberSnapshot {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata_for(&protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        })
    }

    /// A group as persisted: Stable with its members (whose sessions start now, as after a
    /// heartbeat), or Empty.
    pub fn restore(
        group_id: &str,
        snapshot: GroupSnapshot,
        limits: GroupLimits,
        now_ms: i64,
    ) -> Self {
        let mut group = Group::new(group_id, limits);
        group.generation_id = snapshot.generation_id;
        group.protocol_type = Some(snapshot.protocol_type).filter(|t| !t.is_empty());
        group.protocol_name = snapshot.protocol_name;
        group.leader = snapshot.leader;
        let protocol = group.protocol_name.clone().unwrap_or_default();
        for member in snapshot.members {
            if let Some(instance) = &member.group_instance_id {
                group
                    .static_members
                    .insert(instance.clone(), member.member_id.clone());
            }
            group.members.insert(
                member.member_id.clone(),
                Member {
                    member_id: member.member_id,
                    group_instance_id: member.group_instance_id,
                    client_id: member.client_id,
                    client_host: member.client_host,
                    session_timeout_ms: member.session_timeout_ms,
                    rebalance_timeout_ms: member.rebalance_timeout_ms,
                    protocol_type: group.protocol_type.clone().unwrap_or_default(),
                    protocols: vec![(protocol.clone(), member.subscription)],
                    assignment: member.assignment,
                    last_heartbeat_ms: now_ms,
                    awaiting_join: None,
                    awaiting_sync: None,
                },
            );
        }
        group.state = if group.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        group
    }

    /// JoinGroup. `new_member_id` is used when the member has none yet. The cases in Kafka's
    /// order: the group or request refused, a static member (KIP-345), a new member (KIP-394's
    /// MEMBER_ID_REQUIRED round trip), a pending one, a known one rejoining.
    pub fn join(
        &mut self,
        request: JoinRequest,
        new_member_id: String,
        waiter: Waiter,
        now_ms: i64,
    ) -> (Outcome<JoinReply>, Vec<Reply>) {
        let member_id = request.member_id.clone();
        if let Some(refusal) = self.join_refusal(&request) {
            return refused(refusal, &member_id);
        }
        if let Some(instance) = request.group_instance_id.clone() {
            match self.static_members.get(&instance).cloned() {
                Some(current) if member_id.is_empty() => {
                    return self.replace_static_member(
                        request,
                        &current,
                        new_member_id,
                        waiter,
                        now_ms,
                    );
                }
                Some(current) if current != member_id => {
                    return refused(GroupError::fenced_instance(&member_id), &member_id);
                }
                None if !member_id.is_empty() => {
                    return refused(GroupError::unknown_member(&member_id), &member_id);
                }
                // A new static member needs no MEMBER_ID_REQUIRED round trip (KIP-394/KIP-345).
                None => {
                    return self.add_member_and_rebalance(request, new_member_id, waiter, now_ms)
                }
                Some(_) => {}
            }
        }
        if member_id.is_empty() {
            return self.join_new_member(request, new_member_id, waiter, now_ms);
        }
        if self.pending_members.remove(&member_id).is_some() {
            return self.add_member_and_rebalance(request, member_id, waiter, now_ms);
        }
        self.rejoin(request, waiter, now_ms)
    }

    /// Why the group cannot take this join at all: dead, a session timeout outside the
    /// broker's bounds, or protocols the group does not share.
    fn join_refusal(&self, request: &JoinRequest) -> Option<GroupError> {
        if self.state == GroupState::Dead {
            return Some(GroupError::Unavailable);
        }
        if request.session_timeout_ms < self.limits.min_session_timeout_ms
            || request.session_timeout_ms > self.limits.max_session_timeout_ms
        {
            return Some(GroupError::InvalidSessionTimeout {
                requested_ms: request.session_timeout_ms,
                min_ms: self.limits.min_session_timeout_ms,
                max_ms: self.limits.max_session_timeout_ms,
            });
        }
        if !self.supports(&request.protocol_type, &request.protocols) {
            return Some(GroupError::InconsistentProtocol);
        }
        None
    }

    /// A member without an id: refused when the group is full, asked to join again with the
    /// id it is given (KIP-394), or added.
    fn join_new_member(
        &mut self,
        request: JoinRequest,
        new_member_id: String,
        waiter: Waiter,
        now_ms: i64,
    ) -> (Outcome<JoinReply>, Vec<Reply>) {
        if self.members.len() >= self.limits.max_members {
            let full = GroupError::Full {
                max_members: self.limits.max_members,
            };
            return refused(full, "");
        }
        if request.require_known_member_id {
            let expiry = now_ms + request.session_timeout_ms as i64;
            self.pending_members.insert(new_member_id.clone(), expiry);
            let mut reply = JoinReply::error(
                GroupError::MemberIdRequired {
                    member_id: new_member_id.clone(),
                },
                &new_member_id,
            );
            reply.member_id = new_member_id;
            return (Outcome::Now(reply), vec![]);
        }
        self.add_member_and_rebalance(request, new_member_id, waiter, now_ms)
    }

    /// A known member joins again: it waits for the rebalance in progress, starts one (a
    /// changed subscription, or the leader rejoining a stable group), or gets the current
    /// generation.
    fn rejoin(
        &mut self,
        request: JoinRequest,
        waiter: Waiter,
        now_ms: i64,
    ) -> (Outcome<JoinReply>, Vec<Reply>) {
        let member_id = request.member_id;
        let Some(member) = self.members.get_mut(&member_id) else {
            return refused(GroupError::unknown_member(&member_id), &member_id);
        };
        member.last_heartbeat_ms = now_ms;
        let protocols_changed = member.protocols != request.protocols;
        member.protocols = request.protocols;
        member.session_timeout_ms = request.session_timeout_ms;
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        match self.state {
            GroupState::PreparingRebalance => {
                let mut released = self.take_join_waiter(&member_id);
                self.members
                    .get_mut(&member_id)
                    .expect("member exists")
                    .awaiting_join = Some(waiter);
                released.extend(self.maybe_complete_join(now_ms));
                (Outcome::Parked, released)
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                let is_leader = self.leader.as_deref() == Some(member_id.as_str());
                if protocols_changed || (is_leader && self.state == GroupState::Stable) {
                    // A changed subscription, or the leader rejoining: rebalance.
                    self.members
                        .get_mut(&member_id)
                        .expect("member exists")
                        .awaiting_join = Some(waiter);
                    let released = self.prepare_rebalance(now_ms);
                    (Outcome::Parked, released)
                } else {
                    (Outcome::Now(self.join_reply_for(&member_id)), vec![])
                }
            }
            GroupState::Empty | GroupState::Dead => {
                refused(GroupError::unknown_member(&member_id), &member_id)
            }
        }
    }

    /// A static member came back (restart) with its instance id and no member id: it takes the
    /// old member's place under a new member id. In a stable group with the same protocols that
    /// needs no rebalance; it gets the current generation and, on sync, its old assignment.
    fn replace_static_member(
        &mut self,
        request: JoinRequest,
        old_member_id: &str,
        new_member_id: String,
        waiter: Waiter,
        now_ms: i64,
    ) -> (Outcome<JoinReply>, Vec<Reply>) {
        let Some(mut member) = self.members.remove(old_member_id) else {
            self.static_members.retain(|_, id| id != old_member_id);
            return self.add_member_and_rebalance(request, new_member_id, waiter, now_ms);
        };
        let mut released = Vec::new();
        if let Some(old) = member.awaiting_join.take() {
            released.push(Reply::Join(
                old,
                JoinReply::error(GroupError::fenced_instance(old_member_id), old_member_id),
            ));
        }
        if let Some(old) = member.awaiting_sync.take() {
            released.push(Reply::Sync(
                old,
                SyncReply::error(GroupError::fenced_instance(old_member_id)),
            ));
        }
        let protocols_changed = member.protocols != request.protocols;
        member.member_id = new_member_id.clone();
        member.protocols = request.protocols;
        member.session_timeout_ms = request.session_timeout_ms;
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.last_heartbeat_ms = now_ms;
        self.members.insert(new_member_id.clone(), member);
        if let Some(instance) = request.group_instance_id {
            self.static_members.insert(instance, new_member_id.clone());
        }
        if self.leader.as_deref() == Some(old_member_id) {
            self.leader = Some(new_member_id.clone());
        }
        match self.state {
            GroupState::Stable if !protocols_changed => {
                (Outcome::Now(self.join_reply_for(&new_member_id)), released)
            }
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.members
                    .get_mut(&new_member_id)
                    .expect("member exists")
                    .awaiting_join = Some(waiter);
                released.extend(self.prepare_rebalance(now_ms));
                released.extend(self.maybe_complete_join(now_ms));
                (Outcome::Parked, released)
            }
            _ => {
                self.members
                    .get_mut(&new_member_id)
                    .expect("member exists")
                    .awaiting_join = Some(waiter);
                released.extend(self.maybe_complete_join(now_ms));
                (Outcome::Parked, released)
            }
        }
    }

    /// KIP-345: a request naming an instance id that now belongs to another member is fenced.
    pub fn check_instance(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Option<GroupError> {
        let instance = group_instance_id?;
        match self.static_members.get(instance) {
            Some(current) if current != member_id => Some(GroupError::fenced_instance(member_id)),
            Some(_) => None,
            None => Some(GroupError::unknown_member(member_id)),
        }
    }

    /// The member id of a static member (LeaveGroup by instance id).
    pub fn member_of_instance(&self, group_instance_id: &str) -> Option<String> {
        self.static_members.get(group_instance_id).cloned()
    }

    fn supports(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if protocols.is_empty() || protocol_type.is_empty() {
            return false;
        }
        if self.members.is_empty() {
            return true;
        }
        if self
            .protocol_type
            .as_deref()
            .is_some_and(|t| t != protocol_type)
        {
            return false;
        }
        // At least one protocol every current member also supports.
        protocols.iter().any(|(name, _)| {
            self.members
                .values()
                .all(|m| m.protocols.iter().any(|(n, _)| n == name))
        })
    }

    fn add_member_and_rebalance(
        &mut self,
        request: JoinRequest,
        member_id: String,
        waiter: Waiter,
        now_ms: i64,
    ) -> (Outcome<JoinReply>, Vec<Reply>) {
        if self.protocol_type.is_none() || self.members.is_empty() {
            self.protocol_type = Some(request.protocol_type.clone());
        }
        self.members.insert(
            member_id.clone(),
            Member {
                member_id: member_id.clone(),
                group_instance_id: request.group_instance_id.clone(),
                client_id: request.client_id,
                client_host: request.client_host,
                session_timeout_ms: request.session_timeout_ms,
                rebalance_timeout_ms: request.rebalance_timeout_ms,
                protocol_type: request.protocol_type,
                protocols: request.protocols,
                assignment: Bytes::new(),
                last_heartbeat_ms: now_ms,
                awaiting_join: Some(waiter),
                awaiting_sync: None,
            },
        );
        if let Some(instance) = request.group_instance_id {
            self.static_members.insert(instance, member_id);
        }
        let mut released = Vec::new();
        if self.state != GroupState::PreparingRebalance {
            released.extend(self.prepare_rebalance(now_ms));
        }
        released.extend(self.maybe_complete_join(now_ms));
        (Outcome::Parked, released)
    }

    /// Every parked join and sync of this group's members.
    pub fn waiters(&self) -> Vec<Waiter> {
        self.members
            .values()
            .flat_map(|m| [m.awaiting_join, m.awaiting_sync])
            .flatten()
            .collect()
    }

    fn take_join_waiter(&mut self, member_id: &str) -> Vec<Reply> {
        // A second join from the same member replaces the first; the first gets an error.
        match self
            .members
            .get_mut(member_id)
            .and_then(|m| m.awaiting_join.take())
        {
            Some(old) => vec![Reply::Join(
                old,
                JoinReply::error(GroupError::RebalanceInProgress, member_id),
            )],
            None => vec![],
        }
    }

    fn prepare_rebalance(&mut self, now_ms: i64) -> Vec<Reply> {
        // Members waiting on a sync must rejoin.
        let mut released = Vec::new();
        for member in self.members.values_mut() {
            if let Some(waiter) = member.awaiting_sync.take() {
                released.push(Reply::Sync(
                    waiter,
                    SyncReply::error(GroupError::RebalanceInProgress),
                ));
            }
        }
        let rebalance_timeout_ms = self
            .members
            .values()
            .map(|m| m.rebalance_timeout_ms as i64)
            .max()
            .unwrap_or(0);
        // Kafka's group.initial.rebalance.delay.ms: a group that was empty waits a little for
        // more members before its first generation, instead of rebalancing once per joiner.
        let delay_ms = if self.state == GroupState::Empty {
            self.limits
                .initial_rebalance_delay_ms
                .min(rebalance_timeout_ms)
        } else {
            0
        };
        self.initial_delay_until_ms = (delay_ms > 0).then_some(now_ms + delay_ms);
        self.state = GroupState::PreparingRebalance;
        self.rebalance_deadline_ms = now_ms + rebalance_timeout_ms;
        released
    }

    fn maybe_complete_join(&mut self, now_ms: i64) -> Vec<Reply> {
        if self.state != GroupState::PreparingRebalance {
            return vec![];
        }
        let everyone_joined = self.members.values().all(|m| m.awaiting_join.is_some());
        let delay_over = self
            .initial_delay_until_ms
            .is_none_or(|until| now_ms >= until);
        if now_ms >= self.rebalance_deadline_ms || (everyone_joined && delay_over) {
            self.initial_delay_until_ms = None;
            return self.complete_join();
        }
        vec![]
    }

    fn complete_join(&mut self) -> Vec<Reply> {
        self.members.retain(|_, m| m.awaiting_join.is_some());
        let members = &self.members;
        self.static_members.retain(|_, id| members.contains_key(id));
        self.generation_id += 1;
        if self.members.is_empty() {
            self.state = GroupState::Empty;
            self.leader = None;
            self.protocol_name = None;
            return vec![];
        }
        self.protocol_name = self.select_protocol();
        if self
            .leader
            .as_ref()
            .is_none_or(|l| !self.members.contains_key(l))
        {
            self.leader = self.members.keys().next().cloned();
        }
        self.state = GroupState::CompletingRebalance;
        for member in self.members.values_mut() {
            member.assignment = Bytes::new();
        }
        let ids: Vec<String> = self.members.keys().cloned().collect();
        let mut released = Vec::new();
        for id in ids {
            let reply = self.join_reply_for(&id);
            let waiter = self
                .members
                .get_mut(&id)
                .and_then(|m| m.awaiting_join.take());
            if let Some(waiter) = waiter {
                released.push(Reply::Join(waiter, reply));
            }
        }
        released
    }

    /// The protocol most preferred by the members among those all of them support: each member
    /// votes for the first of its protocols that everyone supports (ties go to the leader's order).
    fn select_protocol(&self) -> Option<String> {
        let supported_by_all = |name: &String| {
            self.members
                .values()
                .all(|m| m.protocols.iter().any(|(n, _)| n == name))
        };
        let first = self.members.values().next()?;
        let candidates: Vec<&String> = first
            .protocols
            .iter()
            .map(|(name, _)| name)
            .filter(|n| supported_by_all(n))
            .collect();
        let vote_of = |member: &Member| {
            member
                .protocols
                .iter()
                .map(|(n, _)| n)
                .find(|n| supported_by_all(n))
                .cloned()
        };
        let votes: Vec<Option<String>> = self.members.values().map(vote_of).collect();
        let mut best: Option<(&String, usize)> = None;
        for candidate in candidates {
            let count = votes
                .iter()
                .filter(|v| v.as_ref() == Some(candidate))
                .count();
            if best.is_none_or(|(_, most)| count > most) {
                best = Some((candidate, count));
            }
        }
        best.map(|(name, _)| name.clone())
    }

    fn join_reply_for(&self, member_id: &str) -> JoinReply {
        let leader = self.leader.clone().unwrap_or_default();
        let protocol = self.protocol_name.clone().unwrap_or_default();
        let members = if leader == member_id {
            self.members
                .values()
                .map(|m| (m.member_id.clone(), m.metadata_for(&protocol)))
                .collect()
        } else {
            Vec::new()
        };
        JoinReply {
            error: None,
            generation_id: self.generation_id,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader,
            member_id: member_id.to_string(),
            members,
        }
    }

    /// SyncGroup.
    pub fn sync(
        &mut self,
        member_id: &str,
        generation_id: i32,
        assignments: Vec<(String, Bytes)>,
        waiter: Waiter,
        now_ms: i64,
    ) -> (Outcome<SyncReply>, Vec<Reply>) {
        let Some(member) = self.members.get_mut(member_id) else {
            return (
                Outcome::Now(SyncReply::error(GroupError::unknown_member(member_id))),
                vec![],
            );
        };
        if generation_id != self.generation_id {
            return (
                Outcome::Now(SyncReply::error(GroupError::IllegalGeneration {
                    requested: generation_id,
                    current: self.generation_id,
                })),
                vec![],
            );
        }
        member.last_heartbeat_ms = now_ms;
        match self.state {
            GroupState::PreparingRebalance => (
                Outcome::Now(SyncReply::error(GroupError::RebalanceInProgress)),
                vec![],
            ),
            GroupState::Stable => (Outcome::Now(self.sync_reply_for(member_id)), vec![]),
            GroupState::CompletingRebalance => {
                member.awaiting_sync = Some(waiter);
                if self.leader.as_deref() != Some(member_id) {
                    return (Outcome::Parked, vec![]);
                }
                for (id, assignment) in assignments {
                    if let Some(m) = self.members.get_mut(&id) {
                        m.assignment = assignment;
                    }
                }
                self.state = GroupState::Stable;
                let mut released = Vec::new();
                let ids: Vec<String> = self.members.keys().cloned().collect();
                for id in ids {
                    let reply = self.sync_reply_for(&id);
                    if let Some(waiter) = self
                        .members
                        .get_mut(&id)
                        .and_then(|m| m.awaiting_sync.take())
                    {
                        released.push(Reply::Sync(waiter, reply));
                    }
                }
                (Outcome::Parked, released)
            }
            GroupState::Empty | GroupState::Dead => (
                Outcome::Now(SyncReply::error(GroupError::unknown_member(member_id))),
                vec![],
            ),
        }
    }

    fn sync_reply_for(&self, member_id: &str) -> SyncReply {
        SyncReply {
            error: None,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            assignment: self
                .members
                .get(member_id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default(),
        }
    }

    /// Heartbeat.
    pub fn heartbeat(
        &mut self,
        member_id: &str,
        generation_id: i32,
        now_ms: i64,
    ) -> Option<GroupError> {
        let state = self.state;
        let current_generation = self.generation_id;
        let Some(member) = self.members.get_mut(member_id) else {
            return Some(GroupError::unknown_member(member_id));
        };
        if generation_id != current_generation {
            return Some(GroupError::IllegalGeneration {
                requested: generation_id,
                current: current_generation,
            });
        }
        member.last_heartbeat_ms = now_ms;
        match state {
            GroupState::PreparingRebalance => Some(GroupError::RebalanceInProgress),
            GroupState::CompletingRebalance | GroupState::Stable => None,
            GroupState::Empty | GroupState::Dead => Some(GroupError::unknown_member(member_id)),
        }
    }

    /// LeaveGroup for one member.
    pub fn leave(&mut self, member_id: &str, now_ms: i64) -> (Option<GroupError>, Vec<Reply>) {
        if self.pending_members.remove(member_id).is_some() {
            return (None, vec![]);
        }
        let Some(member) = self.members.remove(member_id) else {
            return (Some(GroupError::unknown_member(member_id)), vec![]);
        };
        if let Some(instance) = &member.group_instance_id {
            self.static_members.remove(instance);
        }
        let mut released = Vec::new();
        if let Some(waiter) = member.awaiting_join {
            released.push(Reply::Join(
                waiter,
                JoinReply::error(GroupError::unknown_member(member_id), member_id),
            ));
        }
        if let Some(waiter) = member.awaiting_sync {
            released.push(Reply::Sync(
                waiter,
                SyncReply::error(GroupError::unknown_member(member_id)),
            ));
        }
        released.extend(self.after_member_removed(now_ms));
        (None, released)
    }

    fn after_member_removed(&mut self, now_ms: i64) -> Vec<Reply> {
        match self.state {
            GroupState::PreparingRebalance => self.maybe_complete_join(now_ms),
            GroupState::CompletingRebalance | GroupState::Stable if self.members.is_empty() => {
                self.state = GroupState::Empty;
                self.leader = None;
                self.generation_id += 1;
                self.protocol_name = None;
                vec![]
            }
            GroupState::CompletingRebalance | GroupState::Stable => self.prepare_rebalance(now_ms),
            GroupState::Empty | GroupState::Dead => vec![],
        }
    }

    /// Applies timeouts: expired sessions leave; an overdue rebalance completes.
    pub fn tick(&mut self, now_ms: i64) -> Vec<Reply> {
        self.pending_members.retain(|_, expiry| *expiry > now_ms);
        let mut released = Vec::new();
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| {
                // A member parked in a join is waiting on us, not silent.
                m.awaiting_join.is_none()
                    && now_ms - m.last_heartbeat_ms > m.session_timeout_ms as i64
            })
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in expired {
            tracing::info!(group = %self.group_id, member = %member_id, "session expired");
            let (_, replies) = self.leave(&member_id, now_ms);
            released.extend(replies);
        }
        released.extend(self.maybe_complete_join(now_ms));
        released
    }

    /// The next time `tick` could change something, if any.
    pub fn next_deadline_ms(&self) -> Option<i64> {
        let sessions = self
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none())
            .map(|m| m.last_heartbeat_ms + m.session_timeout_ms as i64 + 1);
        let rebalance =
            (self.state == GroupState::PreparingRebalance).then_some(self.rebalance_deadline_ms);
        sessions
            .chain(rebalance)
            .chain(self.initial_delay_until_ms)
            .min()
    }

    /// Marks a group deleted (DeleteGroups); only an empty group may be deleted.
    pub fn delete(&mut self) -> Option<GroupError> {
        if !self.members.is_empty() {
            return Some(GroupError::NotEmpty);
        }
        self.state = GroupState::Dead;
        None
    }

    /// Validates an offset commit from `member_id` at `generation_id` (Kafka's rules; a
    /// generation of -1 with no member id is a "simple" commit, allowed on an empty group).
    pub fn check_commit(&self, member_id: &str, generation_id: i32) -> Option<GroupError> {
        if self.state == GroupState::Dead {
            return Some(GroupError::Unavailable);
        }
        if generation_id < 0 && self.state == GroupState::Empty {
            return None;
        }
        if self.state == GroupState::CompletingRebalance {
            return Some(GroupError::RebalanceInProgress);
        }
        if !self.members.contains_key(member_id) {
            return Some(GroupError::unknown_member(member_id));
        }
        if generation_id != self.generation_id {
            return Some(GroupError::IllegalGeneration {
                requested: generation_id,
                current: self.generation_id,
            });
        }
        None
    }
}

#[cfg(test)]
mod tests;

/// A JoinGroup answered at once with `error`.
fn refused(error: GroupError, member_id: &str) -> (Outcome<JoinReply>, Vec<Reply>) {
    (Outcome::Now(JoinReply::error(error, member_id)), vec![])
}
