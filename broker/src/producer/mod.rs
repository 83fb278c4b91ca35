//! Idempotent producers (KIP-98): producer ids, per-partition sequence state and its snapshots.
//!
//! - `id_manager`: hands out producer ids, unique across restarts (blocks reserved on disk).
//! - `state`: per partition and producer: epoch and the last five batches' sequences and offsets;
//!   decides append / duplicate / error for each idempotent batch.
//! - `snapshot`: the state written to `<offset>.snapshot` at segment rolls and clean shutdowns;
//!   a restart loads the newest one and replays the batches after it.
//!
//! Data flow: Produce → `PartitionLog::append` checks the batch against the state under the log
//! lock, appends it (or answers a duplicate with the original offsets) and records it.

pub mod error;
pub mod id_manager;
pub mod snapshot;
pub mod state;

pub use error::ProducerError;
pub use id_manager::ProducerIdManager;
pub use state::{ProducerStateManager, SequenceCheck};
