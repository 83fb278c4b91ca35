//! The active controller's decisions. Each request is checked against the image and answered
//! with the records that carry its outcome; the caller appends them to the metadata log and
//! [`Controller::apply`]s them once committed (in tests: at once). Heartbeat times are the only
//! state outside the log: a controller that takes over gives every broker a fresh session.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::image::{BrokerEndpoint, BrokerState, MetadataImage, PartitionState};
use super::placement;
use super::record::{MetadataRecord, PartitionChange, NO_LEADER};

use crate::config::BrokerConfig;

/// Producer ids per block a broker gets (Kafka's controller hands out 1000 too).
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

#[derive(Debug, Clone)]
pub struct ControllerConfig {
    /// A broker whose last heartbeat is older than this is fenced (`broker.session.timeout.ms`).
    pub broker_session_timeout_ms: i64,
    /// `unclean.leader.election.enable` as set statically: elect a live replica outside the
    /// ISR when no ISR member is alive (availability over the acknowledged writes it may
    /// lack). A dynamic value in the image wins ([`Self::unclean_leader_election_in`]).
    pub unclean_leader_election: bool,
    /// This node's id: the broker whose dynamic configs the controller's own settings follow.
    pub node_id: i32,
    /// `default.replication.factor`.
    pub default_replication_factor: i32,
    /// `cluster.id` as configured on this node: what the first active controller writes as the
    /// cluster's id (a random one when unset).
    pub cluster_id: Option<String>,
    /// `auto.leader.rebalance.enable` with `leader.imbalance.check.interval.seconds`: how often
    /// leadership goes back to preferred replicas that are live and in sync (`None`: never).
    pub leader_rebalance_interval_ms: Option<i64>,
}

impl ControllerConfig {
    /// What the active controller decides with.
    pub fn from_config(config: &BrokerConfig) -> Self {
        Self {
            broker_session_timeout_ms: config.long_or("broker.session.timeout.ms", 9000),
            unclean_leader_election: config.boolean("unclean.leader.election.enable"),
            node_id: config.node_id(),
            default_replication_factor: config.long_or("default.replication.factor", 1) as i32,
            cluster_id: config.explicit("cluster.id").map(str::to_string),
            leader_rebalance_interval_ms: config.boolean("auto.leader.rebalance.enable").then(
                || {
                    config
                        .long_or("leader.imbalance.check.interval.seconds", 300)
                        .max(1)
                        * 1000
                },
            ),
        }
    }
}

impl ControllerConfig {
    /// `unclean.leader.election.enable` as Kafka's controller reads it: its own node's dynamic
    /// value, else the cluster-wide dynamic default, else the static one.
    pub fn unclean_leader_election_in(&self, image: &MetadataImage) -> bool {
        const NAME: &str = "unclean.leader.election.enable";
        [self.node_id.to_string(), String::new()]
            .iter()
            .find_map(|resource| image.broker_configs.get(resource)?.get(NAME))
            .map_or(self.unclean_leader_election, |value| value == "true")
    }
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            broker_session_timeout_ms: 9_000,
            unclean_leader_election: false,
            node_id: 1,
            default_replication_factor: 1,
            cluster_id: None,
            leader_rebalance_interval_ms: Some(300_000),
        }
    }
}

/// Kafka's controller refuses a user operation (one CreateTopics or CreatePartitions request)
/// that would write more metadata records than this (`QuorumController.MAX_RECORDS_PER_USER_OP`):
/// a topic is one record, each partition one more, each config one more. Checked before any
/// placement is computed, so a request for 2^31 partitions costs nothing.
pub const MAX_RECORDS_PER_USER_OPERATION: u64 = 10_000;

/// The metadata records creating a topic writes, as Kafka counts them: the topic, each
/// partition, each config.
pub fn topic_creation_records(partitions: i32, configs: usize) -> u64 {
    1 + u64::try_from(partitions).unwrap_or(0) + configs as u64
}

/// Refuses an operation of `records` metadata records over [`MAX_RECORDS_PER_USER_OPERATION`].
pub fn check_operation_records(records: u64) -> Result<(), ControllerError> {
    if records > MAX_RECORDS_PER_USER_OPERATION {
        return Err(ControllerError::ExcessivelyLargeBatch { records });
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum ControllerError {
    /// Kafka's words (POLICY_VIOLATION), with the count.
    #[error(
        "Unable to perform excessively large batch operation: {records} metadata records, at \
         most {MAX_RECORDS_PER_USER_OPERATION} per request"
    )]
    ExcessivelyLargeBatch { records: u64 },
    #[error("replication factor {replication_factor} with {live_brokers} live brokers")]
    InvalidReplicationFactor {
        replication_factor: i32,
        live_brokers: usize,
    },
    #[error("{partitions} partitions: at least one is needed")]
    InvalidPartitions { partitions: i32 },
    #[error("topic '{name}' has {current} partitions; it can only grow (asked for {requested})")]
    PartitionsNotIncreased {
        name: String,
        current: i32,
        requested: i32,
    },
    #[error("unknown topic '{name}'")]
    UnknownTopic { name: String },
    #[error("no reassignment of {topic}-{partition} is in progress")]
    NoReassignmentInProgress { topic: String, partition: i32 },
    #[error("invalid replica assignment: {reason}")]
    InvalidReplicaAssignment { reason: String },
    #[error("topic '{name}' already exists")]
    TopicAlreadyExists { name: String },
    #[error("unknown topic id {topic_id}")]
    UnknownTopicId { topic_id: Uuid },
    #[error("unknown partition {partition} of topic id {topic_id}")]
    UnknownPartition { topic_id: Uuid, partition: i32 },
    #[error("broker {broker_id} is not registered")]
    UnknownBroker { broker_id: i32 },
    #[error("broker {broker_id} sent epoch {sent}; its registration has {current}")]
    StaleBrokerEpoch {
        broker_id: i32,
        sent: i64,
        current: i64,
    },
    #[error("broker {broker_id} is registered by another live process")]
    DuplicateBrokerRegistration { broker_id: i32 },
    #[error("broker {broker_id} is not the leader (the leader is {leader})")]
    NotLeader { broker_id: i32, leader: i32 },
    #[error("partition epoch {sent} is stale; the partition is at {current}")]
    InvalidUpdateVersion { sent: i32, current: i32 },
    #[error("node {node_id} is a voter of the metadata quorum; it cannot join as an observer")]
    VoterCannotObserve { node_id: u64 },
    #[error("broker {broker_id} cannot join the ISR: {reason}")]
    IneligibleReplica { broker_id: i32, reason: String },
}

/// A broker's registration request.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Registration {
    pub broker_id: i32,
    pub incarnation_id: Uuid,
    /// The inter-broker listener's advertised address.
    pub host: String,
    pub port: u16,
    pub rack: Option<String>,
    /// Every client listener's advertised address.
    #[serde(default)]
    pub listeners: Vec<BrokerEndpoint>,
}

pub struct Controller {
    config: ControllerConfig,
    image: MetadataImage,
    last_heartbeat_ms: BTreeMap<i32, i64>,
    /// When preferred leaders are next restored.
    next_rebalance_ms: i64,
}

impl Controller {
    /// A controller taking over `image` at `now_ms`: every registered broker starts a fresh
    /// session (heartbeat times are not in the log).
    pub fn new(config: ControllerConfig, image: MetadataImage, now_ms: i64) -> Self {
        let last_heartbeat_ms = image.brokers.keys().map(|id| (*id, now_ms)).collect();
        let next_rebalance_ms = now_ms + config.leader_rebalance_interval_ms.unwrap_or(0);
        Controller {
            config,
            image,
            last_heartbeat_ms,
            next_rebalance_ms,
        }
    }

    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }

    pub fn image(&self) -> &MetadataImage {
        &self.image
    }

    /// Applies committed records to the controller's image.
    pub fn apply(&mut self, records: &[MetadataRecord]) {
        for record in records {
            self.image.apply(record);
        }
    }

    /// The record naming the cluster, if no controller wrote one yet.
    pub fn cluster_id_record(&self) -> Option<MetadataRecord> {
        if self.image.cluster_id.is_some() {
            return None;
        }
        let cluster_id = self
            .config
            .cluster_id
            .clone()
            .unwrap_or_else(|| Uuid::new_v4().simple().to_string());
        Some(MetadataRecord::SetClusterId { cluster_id })
    }

    /// A broker process starting. A previous incarnation still heartbeating is refused; one
    /// that went away is fenced (its leaderships move) before the new one is registered.
    pub fn register_broker(
        &mut self,
        registration: Registration,
        now_ms: i64,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        let broker_id = registration.broker_id;
        let mut records = Vec::new();
        if let Some(existing) = self.image.brokers.get(&broker_id) {
            let alive = self.heartbeat_fresh(broker_id, now_ms);
            if existing.incarnation_id != registration.incarnation_id && !existing.fenced && alive {
                return Err(ControllerError::DuplicateBrokerRegistration { broker_id });
            }
            if !existing.fenced {
                records.extend(self.fence(broker_id));
            }
        }
        let broker_epoch = self.next_broker_epoch();
        records.push(MetadataRecord::RegisterBroker {
            broker_id,
            incarnation_id: registration.incarnation_id,
            broker_epoch,
            host: registration.host,
            port: registration.port,
            rack: registration.rack,
            listeners: registration.listeners,
        });
        self.last_heartbeat_ms.insert(broker_id, now_ms);
        Ok(records)
    }

    /// A broker's heartbeat: keeps its session; the first one after registering unfences it,
    /// and offline partitions it can lead get it as leader.
    pub fn heartbeat(
        &mut self,
        broker_id: i32,
        broker_epoch: i64,
        now_ms: i64,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        let fenced = self.registered(broker_id, broker_epoch)?.fenced;
        self.last_heartbeat_ms.insert(broker_id, now_ms);
        if !fenced {
            return Ok(Vec::new());
        }
        let mut records = vec![MetadataRecord::UnfenceBroker {
            broker_id,
            broker_epoch,
        }];
        let live = |b| b == broker_id || self.image.is_live(b);
        records.extend(elect_offline(&self.config, &self.image, live));
        Ok(records)
    }

    /// Fences brokers whose heartbeats stopped for a session timeout; their leaderships move.
    pub fn tick(&mut self, now_ms: i64) -> Vec<MetadataRecord> {
        let expired: Vec<i32> = self
            .image
            .brokers
            .values()
            .filter(|b| !b.fenced && !self.heartbeat_fresh(b.broker_id, now_ms))
            .map(|b| b.broker_id)
            .collect();
        // Each fence decided on the image the previous ones leave, with every expiring broker
        // counted as down (so none is elected in place of another).
        let mut image = self.image.clone();
        let mut records = Vec::new();
        for &broker_id in &expired {
            let fenced = fence_all(&self.config, &image, &expired, broker_id);
            for record in &fenced {
                image.apply(record);
            }
            records.extend(fenced);
        }
        records.extend(self.completed_reassignments(&image));
        if let Some(interval_ms) = self.config.leader_rebalance_interval_ms {
            if now_ms >= self.next_rebalance_ms {
                self.next_rebalance_ms = now_ms + interval_ms;
                records.extend(preferred_leaders(&image));
            }
        }
        records
    }

    /// A broker stopping on purpose: fenced at once, so its leaderships move before it goes.
    pub fn controlled_shutdown(
        &mut self,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        self.registered(broker_id, broker_epoch)?;
        Ok(self.fence(broker_id))
    }

    /// The next block of producer ids, for a registered broker.
    pub fn allocate_producer_ids(
        &self,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        self.registered(broker_id, broker_epoch)?;
        Ok(vec![MetadataRecord::ProducerIdBlock {
            broker_id,
            broker_epoch,
            first_id: self.image.next_producer_id,
            size: PRODUCER_ID_BLOCK_SIZE,
        }])
    }

    /// A new topic over the live brokers, or on explicit `assignments`.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: Option<i32>,
        assignments: Option<Vec<Vec<i32>>>,
        configs: BTreeMap<String, String>,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        if self.image.topic_by_name(name).is_some() {
            return Err(ControllerError::TopicAlreadyExists { name: name.into() });
        }
        let partitions_written = assignments.as_ref().map_or(partitions, |a| a.len() as i32);
        check_operation_records(topic_creation_records(partitions_written, configs.len()))?;
        let topic_id = Uuid::new_v4();
        let assignments = match assignments {
            Some(assignments) => self.checked_assignments(assignments)?,
            None => {
                if partitions < 1 {
                    return Err(ControllerError::InvalidPartitions { partitions });
                }
                let live = self.live_brokers();
                let factor = replication_factor.unwrap_or(self.config.default_replication_factor);
                let start = (topic_id.as_u128() % 1_000_003) as usize;
                placement::assign(&live, partitions, factor, start)?
            }
        };
        Ok(vec![MetadataRecord::CreateTopic {
            name: name.into(),
            topic_id,
            assignments,
            configs,
        }])
    }

    /// Deletes a topic (every broker drops its replicas once it applies the record).
    pub fn delete_topic(&self, name: &str) -> Result<Vec<MetadataRecord>, ControllerError> {
        let topic = self.known_topic(name)?;
        Ok(vec![MetadataRecord::DeleteTopic {
            topic_id: topic.topic_id,
        }])
    }

    /// Grows a topic to `count` partitions: the new ones placed over the live brokers with the
    /// topic's replication factor, or on explicit `assignments` (one per new partition).
    pub fn create_partitions(
        &self,
        name: &str,
        count: i32,
        assignments: Option<Vec<Vec<i32>>>,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        let topic = self.known_topic(name)?;
        let current = topic.partitions.len() as i32;
        if count <= current {
            return Err(ControllerError::PartitionsNotIncreased {
                name: name.into(),
                current,
                requested: count,
            });
        }
        let added = count - current;
        check_operation_records(added as u64)?;
        let factor = topic.partitions.first().map_or(1, |p| p.replicas.len()) as i32;
        let assignments = match assignments {
            Some(assignments) => {
                if assignments.len() as i32 != added {
                    return Err(ControllerError::InvalidReplicaAssignment {
                        reason: format!(
                            "{added} new partitions need {added} assignments, {} given",
                            assignments.len()
                        ),
                    });
                }
                self.checked_assignments(assignments)?
            }
            None => {
                let live = self.live_brokers();
                let start = (topic.topic_id.as_u128() % 1_000_003) as usize + current as usize;
                placement::assign(&live, added, factor, start)?
            }
        };
        Ok(vec![MetadataRecord::AddPartitions {
            topic_id: topic.topic_id,
            assignments,
        }])
    }

    /// Replaces a BROKER resource's dynamic configs: one broker's (its id) or the cluster
    /// default ("") — validated by the broker that asks.
    pub fn alter_broker_configs(
        &self,
        resource: String,
        configs: BTreeMap<String, String>,
    ) -> Vec<MetadataRecord> {
        let record = MetadataRecord::BrokerConfigs { resource, configs };
        let mut after = self.image.clone();
        after.apply(&record);
        // Unclean election turned on: partitions without a leader may get one now.
        let unclean_enabled = !self.config.unclean_leader_election_in(&self.image)
            && self.config.unclean_leader_election_in(&after);
        let mut records = vec![record];
        if unclean_enabled {
            records.extend(elect_offline(&self.config, &after, |b| after.is_live(b)));
        }
        records
    }

    /// Replaces a topic's config overrides (validated by the broker that asks).
    pub fn alter_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        let topic = self.known_topic(name)?;
        Ok(vec![MetadataRecord::TopicConfigs {
            topic_id: topic.topic_id,
            configs,
        }])
    }

    /// AlterPartitionReassignments for one partition (KIP-455): `target` replicas (`None`:
    /// cancel the ongoing reassignment). Replicas to add join the partition and catch up; once
    /// all are in the ISR, [`Controller::tick`] completes the move and drops the others. A
    /// reassignment that only removes replicas completes at once.
    pub fn reassign(
        &self,
        name: &str,
        partition: i32,
        target: Option<Vec<i32>>,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        let topic = self.known_topic(name)?;
        let topic_id = topic.topic_id;
        let state = self.known_partition(topic_id, partition)?;
        // What the partition had before any ongoing reassignment.
        let original: Vec<i32> = state
            .replicas
            .iter()
            .copied()
            .filter(|r| !state.adding_replicas.contains(r))
            .collect();
        let Some(target) = target else {
            if !state.is_reassigning() {
                return Err(ControllerError::NoReassignmentInProgress {
                    topic: name.into(),
                    partition,
                });
            }
            return Ok(self.move_replicas(topic_id, partition, state, original));
        };
        let checked = self.checked_assignments(vec![target])?;
        let target = checked.into_iter().next().unwrap_or_default();
        let adding: Vec<i32> = target
            .iter()
            .copied()
            .filter(|r| !original.contains(r))
            .collect();
        if adding.is_empty() {
            return Ok(self.move_replicas(topic_id, partition, state, target));
        }
        let removing: Vec<i32> = original
            .iter()
            .copied()
            .filter(|r| !target.contains(r))
            .collect();
        let mut replicas = target.clone();
        replicas.extend(removing.iter().copied());
        Ok(vec![MetadataRecord::PartitionChange(PartitionChange {
            topic_id,
            partition,
            isr: Some(in_replica_order(&replicas, &state.isr)),
            replicas: Some(replicas),
            adding_replicas: Some(adding),
            removing_replicas: Some(removing),
            ..Default::default()
        })])
    }

    /// The partition on exactly `replicas` (a reassignment completed or cancelled): the ISR
    /// keeps its members among them; a leader outside them hands over to the first in sync.
    fn move_replicas(
        &self,
        topic_id: Uuid,
        partition: i32,
        state: &PartitionState,
        replicas: Vec<i32>,
    ) -> Vec<MetadataRecord> {
        let mut isr = in_replica_order(&replicas, &state.isr);
        let leader = if replicas.contains(&state.leader) {
            state.leader
        } else {
            isr.iter()
                .copied()
                .find(|r| self.image.is_live(*r))
                .unwrap_or(NO_LEADER)
        };
        if isr.is_empty() {
            // None of the new replicas is in sync: keep the leader's ISR until one catches up.
            isr = state.isr.clone();
        }
        vec![MetadataRecord::PartitionChange(PartitionChange {
            topic_id,
            partition,
            leader: (leader != state.leader).then_some(leader),
            isr: (isr != state.isr).then_some(isr),
            replicas: Some(replicas),
            adding_replicas: Some(Vec::new()),
            removing_replicas: Some(Vec::new()),
            ..Default::default()
        })]
    }

    /// Reassignments whose added replicas are all in sync now: completed.
    fn completed_reassignments(&self, image: &MetadataImage) -> Vec<MetadataRecord> {
        let mut records = Vec::new();
        for topic in image.topics.values() {
            for (index, state) in topic.partitions.iter().enumerate() {
                let caught_up = state.adding_replicas.iter().all(|r| state.isr.contains(r));
                if state.is_reassigning() && caught_up {
                    let target = state.target_replicas();
                    tracing::info!(topic = %topic.name, partition = index, replicas = ?target, "reassignment complete");
                    records.extend(self.move_replicas(topic.topic_id, index as i32, state, target));
                }
            }
        }
        records
    }

    fn known_partition(
        &self,
        topic_id: Uuid,
        partition: i32,
    ) -> Result<&PartitionState, ControllerError> {
        self.image
            .partition(topic_id, partition)
            .ok_or(ControllerError::UnknownPartition {
                topic_id,
                partition,
            })
    }

    fn known_topic(&self, name: &str) -> Result<&crate::cluster::TopicState, ControllerError> {
        self.image
            .topic_by_name(name)
            .ok_or_else(|| ControllerError::UnknownTopic { name: name.into() })
    }

    fn live_brokers(&self) -> Vec<i32> {
        self.image
            .brokers
            .values()
            .filter(|b| !b.fenced)
            .map(|b| b.broker_id)
            .collect()
    }

    /// A leader's ISR change (AlterPartition): from the current leader, at the current
    /// partition epoch, to an ISR of live replicas that includes the leader.
    pub fn alter_partition(
        &self,
        leader_id: i32,
        leader_broker_epoch: i64,
        topic_id: Uuid,
        partition: i32,
        partition_epoch: i32,
        isr: Vec<i32>,
    ) -> Result<Vec<MetadataRecord>, ControllerError> {
        self.registered(leader_id, leader_broker_epoch)?;
        let state = self.known_partition(topic_id, partition)?;
        if state.leader != leader_id {
            return Err(ControllerError::NotLeader {
                broker_id: leader_id,
                leader: state.leader,
            });
        }
        if state.partition_epoch != partition_epoch {
            return Err(ControllerError::InvalidUpdateVersion {
                sent: partition_epoch,
                current: state.partition_epoch,
            });
        }
        let mut isr = isr;
        isr.sort_unstable();
        isr.dedup();
        for &member in &isr {
            let reason = if !state.replicas.contains(&member) {
                Some("not a replica")
            } else if !self.image.is_live(member) {
                Some("fenced")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(ControllerError::IneligibleReplica {
                    broker_id: member,
                    reason: reason.into(),
                });
            }
        }
        if !isr.contains(&leader_id) {
            return Err(ControllerError::IneligibleReplica {
                broker_id: leader_id,
                reason: "the leader must stay in its ISR".into(),
            });
        }
        Ok(vec![MetadataRecord::PartitionChange(PartitionChange {
            topic_id,
            partition,
            leader: None,
            isr: Some(in_replica_order(&state.replicas, &isr)),
            ..Default::default()
        })])
    }

    /// The broker's registration, if `broker_epoch` is its current one.
    fn registered(
        &self,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<&BrokerState, ControllerError> {
        let broker = self
            .image
            .brokers
            .get(&broker_id)
            .ok_or(ControllerError::UnknownBroker { broker_id })?;
        if broker.broker_epoch != broker_epoch {
            return Err(ControllerError::StaleBrokerEpoch {
                broker_id,
                sent: broker_epoch,
                current: broker.broker_epoch,
            });
        }
        Ok(broker)
    }

    fn heartbeat_fresh(&self, broker_id: i32, now_ms: i64) -> bool {
        self.last_heartbeat_ms
            .get(&broker_id)
            .is_some_and(|at| now_ms - at < self.config.broker_session_timeout_ms)
    }

    /// Deterministic from the image: one past the largest epoch handed out.
    fn next_broker_epoch(&self) -> i64 {
        let largest = self.image.brokers.values().map(|b| b.broker_epoch).max();
        largest.unwrap_or(0) + 1
    }

    fn checked_assignments(
        &self,
        assignments: Vec<Vec<i32>>,
    ) -> Result<Vec<Vec<i32>>, ControllerError> {
        let invalid = |reason: String| ControllerError::InvalidReplicaAssignment { reason };
        let Some(first) = assignments.first() else {
            return Err(invalid("no partitions".into()));
        };
        for (partition, replicas) in assignments.iter().enumerate() {
            if replicas.len() != first.len() || replicas.is_empty() {
                return Err(invalid(format!(
                    "partition {partition} has {} replicas, partition 0 has {}",
                    replicas.len(),
                    first.len()
                )));
            }
            let mut distinct = replicas.clone();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.len() != replicas.len() {
                return Err(invalid(format!("partition {partition} repeats a broker")));
            }
            if let Some(unknown) = replicas
                .iter()
                .find(|r| !self.image.brokers.contains_key(r))
            {
                return Err(invalid(format!(
                    "partition {partition} names broker {unknown}, which is not registered"
                )));
            }
        }
        Ok(assignments)
    }

    fn fence(&self, broker_id: i32) -> Vec<MetadataRecord> {
        fence_all(&self.config, &self.image, &[broker_id], broker_id)
    }
}

/// Leaders for the partitions of `image` that have none, now that `live` says who is up.
fn elect_offline(
    config: &ControllerConfig,
    image: &MetadataImage,
    live: impl Fn(i32) -> bool,
) -> Vec<MetadataRecord> {
    let unclean = config.unclean_leader_election_in(image);
    let mut records = Vec::new();
    for topic in image.topics.values() {
        for (index, state) in topic.partitions.iter().enumerate() {
            if state.leader != NO_LEADER {
                continue;
            }
            let partition = index as i32;
            if let Some(change) = reelect(unclean, topic.topic_id, partition, state, &live) {
                records.push(MetadataRecord::PartitionChange(change));
            }
        }
    }
    records
}

/// Fences `broker_id` on `image`, with `down` the brokers being fenced in the same decision.
fn fence_all(
    config: &ControllerConfig,
    image: &MetadataImage,
    down: &[i32],
    broker_id: i32,
) -> Vec<MetadataRecord> {
    let Some(broker) = image.brokers.get(&broker_id) else {
        return Vec::new();
    };
    let mut records = vec![MetadataRecord::FenceBroker {
        broker_id,
        broker_epoch: broker.broker_epoch,
    }];
    let live = |b: i32| !down.contains(&b) && image.is_live(b);
    let unclean = config.unclean_leader_election_in(image);
    for topic in image.topics.values() {
        for (index, state) in topic.partitions.iter().enumerate() {
            if !state.isr.contains(&broker_id) && state.leader != broker_id {
                continue;
            }
            if let Some(change) = reelect(unclean, topic.topic_id, index as i32, state, &live) {
                records.push(MetadataRecord::PartitionChange(change));
            }
        }
    }
    records
}

/// The partition's ISR without the brokers that are down (never emptied: the last member stays,
/// so that only it can lead again) and a leader from it — the current one if still up, else the
/// first live ISR member in replica order, else (unclean election enabled) the first live
/// replica, else none.
fn reelect(
    unclean_election: bool,
    topic_id: Uuid,
    partition: i32,
    state: &PartitionState,
    live: &impl Fn(i32) -> bool,
) -> Option<PartitionChange> {
    let live_isr: Vec<i32> = state.isr.iter().copied().filter(|b| live(*b)).collect();
    let isr = if live_isr.is_empty() {
        state.isr.clone()
    } else {
        live_isr.clone()
    };
    let mut unclean = false;
    let leader = if state.leader != NO_LEADER && live(state.leader) {
        state.leader
    } else if let Some(first) = state.replicas.iter().find(|r| live_isr.contains(r)) {
        *first
    } else if unclean_election {
        match state.replicas.iter().find(|r| live(**r)) {
            Some(replica) => {
                unclean = true;
                *replica
            }
            None => NO_LEADER,
        }
    } else {
        NO_LEADER
    };
    let isr = if unclean { vec![leader] } else { isr };
    if leader == state.leader && isr == state.isr {
        return None;
    }
    if unclean {
        tracing::warn!(%topic_id, partition, leader, "unclean leader election: a replica outside the ISR leads; writes it lacks are lost");
    }
    Some(PartitionChange {
        topic_id,
        partition,
        leader: (leader != state.leader).then_some(leader),
        isr: (isr != state.isr).then_some(isr),
        unclean,
        ..Default::default()
    })
}

/// `isr` in the order of `replicas`.
fn in_replica_order(replicas: &[i32], isr: &[i32]) -> Vec<i32> {
    replicas
        .iter()
        .copied()
        .filter(|r| isr.contains(r))
        .collect()
}

/// Leadership back to each partition's preferred replica (the first of its replicas) where
/// that one is live, in the ISR and not leading (Kafka's preferred leader election).
fn preferred_leaders(image: &MetadataImage) -> Vec<MetadataRecord> {
    let mut records = Vec::new();
    for topic in image.topics.values() {
        for (index, state) in topic.partitions.iter().enumerate() {
            let Some(&preferred) = state.replicas.first() else {
                continue;
            };
            if state.leader != preferred
                && state.isr.contains(&preferred)
                && image.is_live(preferred)
            {
                records.push(MetadataRecord::PartitionChange(PartitionChange {
                    topic_id: topic.topic_id,
                    partition: index as i32,
                    leader: Some(preferred),
                    ..Default::default()
                }));
            }
        }
    }
    records
}
