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
//! Not yet: the KIP-848 protocol, persisted group metadata (members rejoin after a broker restart;
//! committed offsets do survive), offset retention for empty groups, OffsetDelete, and compaction
//! of `__consumer_offsets` (it keeps every record for now).

pub mod coordinator;
pub mod offsets;
pub mod state;

pub use coordinator::GroupCoordinator;
