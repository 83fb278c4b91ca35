//! The metadata image: what the applied records say about brokers, topics and partitions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::record::{MetadataRecord, PartitionChange, NO_LEADER};

/// Where clients reach a broker on one of its named listeners.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerEndpoint {
    /// The listener's name, upper case (PLAINTEXT, SSL, INTERNAL…).
    pub name: String,
    pub host: String,
    pub port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerState {
    pub broker_id: i32,
    pub incarnation_id: Uuid,
    pub broker_epoch: i64,
    /// The inter-broker listener's address (replica fetches, transaction markers).
    pub host: String,
    pub port: u16,
    pub rack: Option<String>,
    pub fenced: bool,
    /// Every client listener's advertised address (none in a registration older than named
    /// listeners: then `host:port` on every listener).
    #[serde(default)]
    pub listeners: Vec<BrokerEndpoint>,
}

impl BrokerState {
    /// The broker's address on `listener`, `None` when it has no such listener (Kafka leaves
    /// such a broker out of that listener's Metadata).
    pub fn endpoint(&self, listener: &str) -> Option<(&str, u16)> {
        if self.listeners.is_empty() {
            return Some((&self.host, self.port));
        }
        self.listeners
            .iter()
            .find(|endpoint| endpoint.name == listener)
            .map(|endpoint| (endpoint.host.as_str(), endpoint.port))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionState {
    /// The preferred leader first.
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub leader: i32,
    /// Bumped on every leader change: stamped into batches, checked by fetchers (KIP-101/320).
    pub leader_epoch: i32,
    /// Bumped on every change: an AlterPartition must name the epoch it changes (KIP-497).
    pub partition_epoch: i32,
    /// An ongoing reassignment (KIP-455): replicas being added (in `replicas`, catching up)
    /// and replicas to remove once every added one is in sync.
    #[serde(default)]
    pub adding_replicas: Vec<i32>,
    #[serde(default)]
    pub removing_replicas: Vec<i32>,
}

impl PartitionState {
    pub fn is_reassigning(&self) -> bool {
        !self.adding_replicas.is_empty() || !self.removing_replicas.is_empty()
    }

    /// The replicas a reassignment moves to (all of them when none is ongoing).
    pub fn target_replicas(&self) -> Vec<i32> {
        self.replicas
            .iter()
            .copied()
            .filter(|r| !self.removing_replicas.contains(r))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicState {
    pub name: String,
    pub topic_id: Uuid,
    pub partitions: Vec<PartitionState>,
    pub configs: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataImage {
    /// Set by the first record of the log (none before a controller was active).
    #[serde(default)]
    pub cluster_id: Option<String>,
    pub brokers: BTreeMap<i32, BrokerState>,
    pub topics: BTreeMap<Uuid, TopicState>,
    /// How many partition changes elected a leader from outside the ISR.
    pub unclean_elections: u64,
    /// How many partition changes gave a partition a new leader.
    #[serde(default)]
    pub leader_elections: u64,
    /// The first producer id not yet given to any broker.
    #[serde(default)]
    pub next_producer_id: i64,
    /// The latest producer id block of each broker: (first id, size).
    #[serde(default)]
    pub producer_id_blocks: BTreeMap<i32, (i64, i64)>,
    /// Dynamic broker configs by BROKER resource: a broker's id, or "" for the cluster default.
    #[serde(default)]
    pub broker_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// SCRAM users' credentials, by user and mechanism.
    #[serde(default)]
    pub scram_credentials: crate::security::scram::UserCredentials,
    /// The ACLs.
    #[serde(default)]
    pub acls: std::collections::BTreeSet<crate::security::acl::AclBinding>,
}

impl MetadataImage {
    pub fn topic_by_name(&self, name: &str) -> Option<&TopicState> {
        self.topics.values().find(|t| t.name == name)
    }

    pub fn partition(&self, topic_id: Uuid, partition: i32) -> Option<&PartitionState> {
        let topic = self.topics.get(&topic_id)?;
        topic.partitions.get(usize::try_from(partition).ok()?)
    }

    /// The registered brokers that are not fenced (what Metadata lists).
    pub fn live_brokers(&self) -> impl Iterator<Item = &BrokerState> {
        self.brokers.values().filter(|broker| !broker.fenced)
    }

    /// Registered and heartbeating.
    pub fn is_live(&self, broker_id: i32) -> bool {
        self.brokers.get(&broker_id).is_some_and(|b| !b.fenced)
    }

    /// Applies one record. Records come from the controller, which checked them against this
    /// same image; one that does not fit (a topic already deleted, say) changes nothing.
    #[allow(clippy::too_many_lines)] // one arm per metadata record type
    pub fn apply(&mut self, record: &MetadataRecord) {
        match record {
            MetadataRecord::SetClusterId { cluster_id } => {
                // Written once; a second one (a controller that missed the first) changes nothing.
                self.cluster_id.get_or_insert_with(|| cluster_id.clone());
            }
            MetadataRecord::RegisterBroker {
                broker_id,
                incarnation_id,
                broker_epoch,
                host,
                port,
                rack,
                listeners,
            } => {
                self.brokers.insert(
                    *broker_id,
                    BrokerState {
                        broker_id: *broker_id,
                        incarnation_id: *incarnation_id,
                        broker_epoch: *broker_epoch,
                        host: host.clone(),
                        port: *port,
                        rack: rack.clone(),
                        fenced: true,
                        listeners: listeners.clone(),
                    },
                );
            }
            MetadataRecord::UnfenceBroker {
                broker_id,
                broker_epoch,
            } => self.set_fenced(*broker_id, *broker_epoch, false),
            MetadataRecord::FenceBroker {
                broker_id,
                broker_epoch,
            } => self.set_fenced(*broker_id, *broker_epoch, true),
            MetadataRecord::CreateTopic {
                name,
                topic_id,
                assignments,
                configs,
            } => {
                let partitions = assignments
                    .iter()
                    .map(|replicas| self.new_partition(replicas))
                    .collect();
                self.topics.insert(
                    *topic_id,
                    TopicState {
                        name: name.clone(),
                        topic_id: *topic_id,
                        partitions,
                        configs: configs.clone(),
                    },
                );
            }
            MetadataRecord::AddPartitions {
                topic_id,
                assignments,
            } => {
                let added: Vec<PartitionState> = assignments
                    .iter()
                    .map(|replicas| self.new_partition(replicas))
                    .collect();
                if let Some(topic) = self.topics.get_mut(topic_id) {
                    topic.partitions.extend(added);
                }
            }
            MetadataRecord::TopicConfigs { topic_id, configs } => {
                if let Some(topic) = self.topics.get_mut(topic_id) {
                    topic.configs = configs.clone();
                }
            }
            MetadataRecord::BrokerConfigs { resource, configs } => {
                match configs.is_empty() {
                    true => self.broker_configs.remove(resource),
                    false => self
                        .broker_configs
                        .insert(resource.clone(), configs.clone()),
                };
            }
            MetadataRecord::ScramCredential {
                user,
                mechanism,
                credential,
            } => crate::security::scram::apply_change(
                &mut self.scram_credentials,
                user,
                *mechanism,
                credential.as_ref(),
            ),
            MetadataRecord::AclCreated { binding } => {
                self.acls.insert(binding.clone());
            }
            MetadataRecord::AclRemoved { binding } => {
                self.acls.remove(binding);
            }
            MetadataRecord::DeleteTopic { topic_id } => {
                self.topics.remove(topic_id);
            }
            MetadataRecord::PartitionChange(change) => self.change_partition(change),
            MetadataRecord::ProducerIdBlock {
                broker_id,
                first_id,
                size,
                ..
            } => {
                self.next_producer_id = self.next_producer_id.max(first_id + size);
                self.producer_id_blocks
                    .insert(*broker_id, (*first_id, *size));
            }
        }
    }

    /// A new partition on `replicas`: in sync are the live ones, the first of them leads.
    fn new_partition(&self, replicas: &[i32]) -> PartitionState {
        let isr: Vec<i32> = replicas
            .iter()
            .copied()
            .filter(|r| self.is_live(*r))
            .collect();
        PartitionState {
            replicas: replicas.to_vec(),
            leader: isr.first().copied().unwrap_or(NO_LEADER),
            isr,
            leader_epoch: 0,
            partition_epoch: 0,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
        }
    }

    fn set_fenced(&mut self, broker_id: i32, broker_epoch: i64, fenced: bool) {
        if let Some(broker) = self.brokers.get_mut(&broker_id) {
            if broker.broker_epoch == broker_epoch {
                broker.fenced = fenced;
            }
        }
    }

    fn change_partition(&mut self, change: &PartitionChange) {
        let Some(topic) = self.topics.get_mut(&change.topic_id) else {
            return;
        };
        let Some(state) = usize::try_from(change.partition)
            .ok()
            .and_then(|p| topic.partitions.get_mut(p))
        else {
            return;
        };
        let mut new_leader_epoch = false;
        if let Some(leader) = change.leader {
            if leader != state.leader {
                state.leader = leader;
                new_leader_epoch = true;
                if leader != NO_LEADER {
                    self.leader_elections += 1;
                }
            }
        }
        if let Some(isr) = &change.isr {
            state.isr = isr.clone();
        }
        // A new replica set starts a new leader epoch too (the leader learns its followers
        // afresh), as Kafka's reassignments did.
        if let Some(replicas) = &change.replicas {
            new_leader_epoch |= *replicas != state.replicas;
            state.replicas = replicas.clone();
        }
        if let Some(adding) = &change.adding_replicas {
            state.adding_replicas = adding.clone();
        }
        if let Some(removing) = &change.removing_replicas {
            state.removing_replicas = removing.clone();
        }
        if new_leader_epoch {
            state.leader_epoch += 1;
        }
        state.partition_epoch += 1;
        if change.unclean {
            self.unclean_elections += 1;
        }
    }
}
