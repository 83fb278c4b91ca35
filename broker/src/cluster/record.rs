//! The records of the metadata log. Each is a decision already taken by the active controller,
//! so every node that applies the same records in the same order holds the same image.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A partition without a leader (Kafka's -1).
pub const NO_LEADER: i32 = -1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetadataRecord {
    /// The cluster's id, written once by the first active controller (KRaft keeps it in every
    /// node's formatted storage; here the metadata log carries it to every broker).
    SetClusterId {
        cluster_id: String,
    },
    /// A broker (re)registered: a new incarnation, fenced until its first heartbeat.
    RegisterBroker {
        broker_id: i32,
        incarnation_id: Uuid,
        broker_epoch: i64,
        host: String,
        port: u16,
        rack: Option<String>,
        /// Every client listener's advertised address (older records: none).
        #[serde(default)]
        listeners: Vec<super::image::BrokerEndpoint>,
    },
    /// The broker may lead and be in ISRs (it heartbeats).
    UnfenceBroker {
        broker_id: i32,
        broker_epoch: i64,
    },
    /// The broker stopped heartbeating or shut down: it leads nothing and joins no ISR.
    FenceBroker {
        broker_id: i32,
        broker_epoch: i64,
    },
    CreateTopic {
        name: String,
        topic_id: Uuid,
        /// Per partition, its replicas, the preferred leader first.
        assignments: Vec<Vec<i32>>,
        configs: BTreeMap<String, String>,
    },
    DeleteTopic {
        topic_id: Uuid,
    },
    /// New partitions at the end of a topic, with their replicas (CreatePartitions).
    AddPartitions {
        topic_id: Uuid,
        assignments: Vec<Vec<i32>>,
    },
    /// A topic's config overrides, all of them (AlterConfigs / IncrementalAlterConfigs).
    TopicConfigs {
        topic_id: Uuid,
        configs: BTreeMap<String, String>,
    },
    /// A BROKER config resource's dynamic configs, all of them: one broker's (resource its
    /// id) or the cluster-wide default (resource ""). Empty: none.
    BrokerConfigs {
        resource: String,
        configs: BTreeMap<String, String>,
    },
    /// A SCRAM user's credential for one mechanism (Kafka's UserScramCredentialRecord), or
    /// its removal (`credential` None: RemoveUserScramCredentialRecord).
    ScramCredential {
        user: String,
        mechanism: crate::security::scram::ScramMechanism,
        credential: Option<crate::security::scram::ScramCredential>,
    },
    /// An ACL added (Kafka's AccessControlEntryRecord); adding one already there changes nothing.
    AclCreated {
        binding: crate::security::acl::AclBinding,
    },
    /// An ACL removed (RemoveAccessControlEntryRecord).
    AclRemoved {
        binding: crate::security::acl::AclBinding,
    },
    PartitionChange(PartitionChange),
    /// Producer ids `first_id..first_id + size` belong to this broker (Kafka's
    /// ProducerIdsRecord): every broker hands out ids no other broker has.
    ProducerIdBlock {
        broker_id: i32,
        broker_epoch: i64,
        first_id: i64,
        size: i64,
    },
}

/// A change to one partition: a new leader, a new ISR, a new replica set (reassignment), or
/// several. Fields left `None` stay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionChange {
    pub topic_id: Uuid,
    pub partition: i32,
    pub leader: Option<i32>,
    pub isr: Option<Vec<i32>>,
    /// Set when the new leader was not in the ISR (unclean election): counted and logged.
    #[serde(default)]
    pub unclean: bool,
    /// The replica set (during a reassignment: the target's replicas, then those leaving).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<Vec<i32>>,
    /// Replicas a reassignment adds (still catching up) and removes (once they have).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adding_replicas: Option<Vec<i32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removing_replicas: Option<Vec<i32>>,
}
