//! # weir-broker
//!
//! A Kafka-compatible broker: it speaks the Kafka wire protocol (via the `kafka-protocol` crate),
//! so existing Kafka clients work unchanged, and stores each partition as a durable, segmented,
//! append-only log.
//!
//! ## Module map
//! - [`server`]: the running [`Broker`] — listener, per-connection framing and in-order
//!   responses, `/metrics`, background retention/flush tasks, clean shutdown.
//! - [`handler`]: one file per Kafka API (`produce.rs`, `fetch.rs`, …); `handler::errors` is the
//!   one mapping from internal errors to Kafka error codes; `SUPPORTED_APIS` is what ApiVersions
//!   reports.
//! - [`group`]: consumer groups — the classic protocol's state machine, the coordinator that
//!   parks joins/syncs and applies timeouts, committed offsets in `__consumer_offsets`.
//! - [`producer`]: idempotent producers — producer ids, per-partition sequence state (duplicate
//!   and gap detection), its snapshots.
//! - [`transaction`]: the transaction coordinator (`__transaction_state`, markers, timeouts);
//!   in a cluster it follows the leadership of `__transaction_state` partitions, sends markers
//!   to partition leaders and answers their checks of transactional writes.
//! - [`cluster`]: cluster metadata as a log of records (KRaft's model) and the active
//!   controller's decisions — broker registration and fencing, replica placement, leader
//!   election from the ISR, AlterPartition checks; the openraft quorum that replicates it
//!   (`cluster::quorum`), a broker's registration and heartbeats, its view of the image.
//! - [`replication`]: replicas following the cluster metadata — leaders tracking their
//!   followers (ISR, high watermark, AlterPartition to the controller), followers fetching from
//!   their leaders with truncation by leader epoch.
//! - [`client`]: a small Kafka protocol client (followers' fetches, the CLI's admin calls).
//! - [`topic`]: topic registry — names, ids, partitions, config overrides, persistence.
//! - [`partition`]: a partition's replication-facing state (role, leader epoch, high watermark)
//!   and waiters (long-poll fetches, group-commit fsyncs, `acks=all`).
//! - [`log`]: storage — record batches, segments, indexes, recovery, retention, compaction.
//! - [`config`]: broker and topic configuration by Kafka's property names.
//! - [`metrics`], [`clock`] (time behind a seam), [`error`].
//!
//! ## Data flow
//! Produce: connection reads a frame → `handler::produce` validates the batch (CRC, size, record
//! framing, bounded decompression) → `Partition::append` stamps offsets and leader epoch and
//! writes it to the active segment → high watermark moves, waking long-poll fetchers → the
//! response is sent (after a group-commit fsync when `flush.on.ack` is set).
//! Fetch: `handler::fetch` → `Partition::read` → offset index lookup → whole batches, as stored.
//!
//! ## Invariants
//! - Batches are stored byte-for-byte as producers sent them, except base offset, partition
//!   leader epoch and (LogAppendTime topics) timestamps + CRC.
//! - Offsets within a partition strictly increase; consumers see only offsets below the high
//!   watermark.
//! - After a crash, recovery cuts each log at its first torn or corrupt batch; nothing before it
//!   is lost.

pub mod client;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod error;
pub mod group;
pub mod handler;
pub mod log;
pub mod metrics;
pub mod partition;
pub mod producer;
pub mod replication;
#[cfg(test)]
mod seeded_rng;
pub mod server;
pub mod topic;
pub mod transaction;

pub use config::BrokerConfig;
pub use error::BrokerError;
pub use server::Broker;
