//! Consumer groups (classic protocol) and committed offsets.
//!
//! - `state`: one group's membership state machine (pure: requests and ticks in, replies out).
//! - `coordinator`: the service around it — parked join/sync replies, timeout ticks, offsets.
//! - `offsets`: the `__consumer_offsets` record format and group placement.
//!
//! Static membership (KIP-345): a member with a `group.instance.id` that comes back within its
//! session timeout takes its old place (same generation, same assignment) and fences the old
//! incarnation (FENCED_INSTANCE_ID).
//!
//! Offsets of a group without members expire `offsets.retention.minutes` after the later of its
//! last commit and the last time it had members (KIP-211); expiry and DeleteGroups/OffsetDelete
//! write tombstones.
//!
//! Not yet: the KIP-848 protocol, persisted group metadata (members rejoin after a broker restart;
//! committed offsets do survive), and compaction of `__consumer_offsets` (it keeps every record,
//! tombstones included, for now).

pub mod coordinator;
pub mod offsets;
pub mod state;

pub use coordinator::GroupCoordinator;
