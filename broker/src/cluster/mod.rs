//! Cluster metadata, KRaft's way: a log of [`MetadataRecord`]s, replicated by the controller
//! quorum (openraft), applied in order to a [`MetadataImage`] on every node — brokers,
//! topics, replica assignments, leaders, leader epochs and ISRs.
//!
//! Module map:
//! - [`record`]: what the metadata log holds (broker registrations and fencing, topics,
//!   partition changes). Records carry decisions, never inputs: applying them is deterministic.
//! - [`image`]: the state the records build, and [`image::MetadataImage::apply`].
//! - [`placement`]: where a new topic's replicas go (spread across brokers, leaders too).
//! - [`controller`]: the active controller's decisions — register and fence brokers by their
//!   heartbeats, create topics, elect leaders from the ISR (or any live replica when unclean
//!   election is enabled), check leaders' ISR changes (AlterPartition) — as records to append.
//!   It reads time only from its caller, so tests drive it with a fake clock.
//! - [`quorum`]: the Raft side — durable log and state machine, the controller listener, the
//!   active controller's task, and a broker's client to it.
//! - [`lifecycle`]: a broker's registration, heartbeats and controlled shutdown.
//! - [`producer_id_blocks`]: a broker's supply of producer id blocks from the controller.
//!
//! Invariants (checked by the tests): a leader is always an unfenced replica in the ISR; each
//! leader change bumps the partition's leader epoch and each change its partition epoch; the
//! ISR never becomes empty (the last member stays, leaderless, until it returns — so no
//! acknowledged write is lost by electing a replica that missed it, unless unclean election was
//! asked for).

pub mod controller;
pub mod image;
pub mod lifecycle;
pub mod member;
pub mod placement;
pub mod producer_id_blocks;
pub mod quorum;
pub mod record;

#[cfg(test)]
mod tests;

pub use controller::{Controller, ControllerConfig, ControllerError, Registration};
pub use image::{BrokerEndpoint, BrokerState, MetadataImage, PartitionState, TopicState};
pub use record::{MetadataRecord, PartitionChange, NO_LEADER};
