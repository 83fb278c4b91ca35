//! Consumer groups (classic protocol) and committed offsets.
//!
//! - `state`: one group's membership state machine (pure: requests and ticks in, replies out).
//! - `coordinator`: the service around it — parked join/sync replies, timeout ticks, offsets.
//! - `offsets`: the `__consumer_offsets` record format and group placement.
//!
//! Not yet: static membership (KIP-345), the KIP-848 protocol, persisted group metadata (members
//! rejoin after a broker restart; committed offsets do survive), offset retention for empty
//! groups, and compaction of `__consumer_offsets` (it keeps every record for now).

pub mod coordinator;
pub mod offsets;
pub mod state;

pub use coordinator::GroupCoordinator;
