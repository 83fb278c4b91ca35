//! Storage: the durable, segmented log of each partition.
//!
//! - `error`: what can go wrong with a batch or a log ([`BatchError`], [`LogError`]).
//! - `aborted_index`: aborted transactions per partition, for read_committed fetches.
//! - `control`: transaction markers (control batches).
//! - `batch`: the v2 record batch format, validation, offset assignment.
//! - `compression`: codecs, with bounded decompression.
//! - `record`: records inside a batch (key, value, offset delta), read without copying.
//! - `index`: sparse offset and time indexes.
//! - `segment`: one `.log` file with its indexes, scanning and recovery of a torn tail.
//! - `compaction`: the cleaner of compacted topics (offset map, batch rewrite, atomic swap).
//! - `leader_epochs`: the first offset of each leader epoch (truncation by epoch, KIP-101/279).
//! - `read_buffers`: a bounded pool of buffers that fetch reads land in (no page faults per read).
//! - `partition_log`: the ordered segments of a partition: append, read, roll, retention,
//!   truncation, flush planning and crash recovery.

pub mod aborted_index;
pub mod batch;
pub mod compaction;
pub mod compression;
pub mod control;
pub mod error;
pub mod index;
pub mod leader_epochs;
pub mod partition_log;
pub mod read_buffers;
pub mod recompress;
pub mod record;
pub mod segment;

pub use error::{BatchError, LogError};
pub use partition_log::{AppendInfo, FlushPlan, PartitionLog, ReadResult};

#[cfg(test)]
#[path = "../../tests/support/records.rs"]
pub(crate) mod test_support;
