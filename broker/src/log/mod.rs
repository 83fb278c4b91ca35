//! Storage: the durable, segmented log of each partition.
//!
//! - `batch`: the v2 record batch format, validation, offset assignment.
//! - `compression`: codecs, with bounded decompression.
//! - `index`: sparse offset and time indexes.
//! - `segment`: one `.log` file with its indexes, scanning and recovery of a torn tail.
//! - `partition_log`: the ordered segments of a partition: append, read, roll, retention,
//!   truncation, flush planning and crash recovery.

pub mod batch;
pub mod compression;
pub mod index;
pub mod partition_log;
pub mod segment;

pub use partition_log::{AppendInfo, FlushPlan, PartitionLog, ReadResult};

#[cfg(test)]
#[path = "../../tests/support/records.rs"]
pub(crate) mod test_support;
