//! Joins over streams.
//!
//! The design, so the pieces fit as they land:
//! - **Stream–table join.** A topic declared as a table is the latest value per record key
//!   (tombstones delete). A stream record is joined with the table *as of its event time* (its
//!   `_timestamp`): the latest version of the key whose timestamp is not after the record's —
//!   Kafka Streams' versioned-table join (KIP-914) and Flink's event-time temporal join, without
//!   waiting for the table's watermark. Before a checkpoint's records are joined, the table is
//!   read up to the end its partitions had when the checkpoint began, so an update written
//!   before a stream record is always seen by it, and the version picked by timestamp makes the
//!   answer independent of how records fall into checkpoints (and so replayable after a crash).
//!   Every copy of a job reads all of the table's partitions (a global table: no
//!   co-partitioning needed); the table topic is its own changelog, as for Kafka Streams'
//!   global tables.
//! - [`versioned_table`]: the per-key version history that lookup needs, bounded by a history
//!   retention and a state bound.
//! - [`table`]: a declared table's state and the reader that keeps it current.
//! - [`plan`]: the joins taken out of the planned query, each replaced by a scan of its output.
//! - [`lookup`]: per checkpoint, each join's stream rows matched with the table's versions.
//! - **Interval join** between two streams ([`interval`]): rows of both sides repartitioned by
//!   key, buffered for as long as a row of the other side within the interval can still come.

pub mod interval;
pub mod lookup;
pub mod plan;
pub mod table;
pub mod versioned_table;

#[cfg(test)]
mod tests;
