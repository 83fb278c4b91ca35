//! Consumer groups (classic protocol) and committed offsets.
//!
//! - `error`: what the coordinator and the state machine refuse ([`GroupError`]).
//! - `state`: one group's membership state machine (pure: requests and ticks in, replies out).
//! - `coordinator`: the service around it — parked join/sync replies, timeout ticks, offsets.
//! - `offsets`: the `__consumer_offsets` offset-commit records and group placement.
//! - `metadata`: the group metadata records (generation, protocol, members, assignments) that
//!   let a settled group carry on across a broker restart without a rebalance.
//!
//! Static membership (KIP-345): a member with a `group.instance.id` that comes back within its
//! session timeout takes its old place (same generation, same assignment) and fences the old
//! incarnation (FENCED_INSTANCE_ID).
//!
//! Offsets of a group without members expire `offsets.retention.minutes` after the later of its
//! last commit and the last time it had members (KIP-211); expiry and DeleteGroups/OffsetDelete
//! write tombstones.
//!
//! `__consumer_offsets` is compacted: the latest commit per partition and the latest metadata
//! per group stay; tombstones go after `delete.retention.ms`.
//!
//! Not yet: the KIP-848 protocol.

pub mod coordinator;
pub mod error;
pub mod metadata;
pub mod offsets;
pub mod state;

pub use coordinator::{CommitMember, FetchedOffset, GroupCoordinator, TxnCommitError};
pub use error::{GroupDeleteError, GroupError};
