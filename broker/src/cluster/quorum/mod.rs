//! The controller quorum: the metadata log replicated by Raft (openraft) among the controller
//! voters (`controller.quorum.voters`), applied on each voter to a
//! [`MetadataImage`](crate::cluster::MetadataImage).
//!
//! - [`log_store`]: the durable Raft log and vote.
//! - [`state_machine`]: applies committed [`MetadataBatch`]es; snapshots; publishes the image.
//! - [`rpc`]: the controller listener's frames (Raft RPCs and brokers' controller requests);
//!   [`network`]: Raft's transport over it and the listener; [`client`]: a broker's way to the
//!   active controller; [`security`]: the listener's TLS (mTLS) and who may speak on it
//!   (CLUSTER_ACTION when an authorizer is on).
//! - [`controller_service`]: the active controller's task (decide, commit, answer; fence on
//!   expired sessions). [`node`]: one quorum member put together.
//!
//! Only the active controller (the Raft leader) appends, and only batches its
//! [`Controller`](crate::cluster::Controller) decided on the image all earlier batches built.

pub mod client;
pub mod controller_service;
pub mod log_store;
pub mod network;
pub mod node;
pub mod rpc;
pub mod security;
pub mod state_machine;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use crate::cluster::record::MetadataRecord;

/// Raft node ids are Kafka's `node.id`s.
pub type NodeId = u64;

/// One entry of the metadata log: the records of one controller decision, applied together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataBatch {
    pub records: Vec<MetadataRecord>,
}

/// What applying a batch answers: where it landed in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedBatch {
    pub index: u64,
}

/// The metadata quorum as its leader sees it (what Kafka's DescribeQuorum answers). Offsets
/// are Raft log positions: a replica's log end is one past its last entry it is known to hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuorumDescription {
    pub leader_id: NodeId,
    /// The leader's Raft term (KRaft's leader epoch).
    pub leader_epoch: u64,
    /// One past the last entry the leader has applied (committed entries, so far as applied).
    pub high_watermark: u64,
    pub voters: Vec<ReplicaProgress>,
    pub observers: Vec<ReplicaProgress>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaProgress {
    pub node_id: NodeId,
    /// Its controller listener.
    pub address: String,
    /// How far the leader knows it to hold the log (`None`: not known yet).
    pub log_end_offset: Option<u64>,
}

openraft::declare_raft_types!(
    /// openraft's types for the metadata quorum.
    pub MetadataTypes:
        D = MetadataBatch,
        R = AppliedBatch,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<MetadataTypes>,
        SnapshotData = std::io::Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);
