//! # weir-broker
//!
//! A Kafka-compatible broker: it speaks the Kafka wire protocol (via the `kafka-protocol` crate),
//! so existing Kafka clients work unchanged, and stores each partition as a durable, segmented,
//! append-only log.
//!
//! ## Layers
//! The modules stack bottom-up; each uses only its own layer and those below
//! (`scripts/layers/check.py` enforces it in the test command):
//!
//! 1. [`clock`] (time behind a seam), `shutdown` (the stop signal every task watches),
//!    [`memory_pool`] (bytes reserved before they are allocated), [`durable_file`] (small files
//!    replaced whole and durably, the file system behind a seam)
//! 2. [`config`] (broker and topic properties by Kafka's names)
//! 3. [`log`] (storage: batches, segments, indexes, recovery, retention, compaction) beside
//!    [`producer`] (idempotent producers: ids, per-partition sequence state, snapshots),
//!    [`security`] (principals, the SASL mechanisms' server side, SCRAM credentials, JAAS, the
//!    ACL decision, the listeners' TLS acceptors, and `BrokerIdentity`: how this broker's own
//!    connections to other brokers and controllers are secured, from its properties; they are
//!    made with `weir-wire`'s protocol client)
//! 4. [`partition`]: a partition's replication-facing state (role, leader epoch, high
//!    watermark, the leader's view of its followers) and its waiters (long polls, group-commit
//!    fsyncs, `acks=all`)
//! 5. [`cluster`] (metadata as a replicated log of records, KRaft's model: the controller's
//!    decisions, the openraft quorum, registration, the image), [`topic`] (the topic
//!    registry), [`error`] (the broker's own error, wrapping those below)
//! 6. [`group`] (consumer groups and committed offsets), [`transaction`] (the transaction
//!    coordinator, markers, verification of transactional writes), [`replication`] (followers
//!    fetching from leaders, ISR changes sent to the controller), [`broker_configs`] (dynamic
//!    broker configs: stored, validated, applied to the live config and the topics),
//!    [`user_credentials`] (SCRAM users: Kafka's rules for a change, the single node's file),
//!    [`acls`] (the ACLs' store and the authorizer's settings), [`quota`] (client quotas: who
//!    they are for, the single node's file, rates and throttles), [`fetch_session`] (KIP-227
//!    incremental fetch sessions: the bounded cache, epochs, what an answer includes). Each
//!    speaks its own errors ([`group::GroupError`], [`transaction::TxnError`], …).
//! 7. [`context`] (what every handler shares), [`metrics`] (the Prometheus registry and what
//!    it reads of the layers below)
//! 8. [`handler`]: one file per Kafka API; `handler::errors` is the one mapping from internal
//!    errors to Kafka error codes; `SUPPORTED_APIS` is what ApiVersions reports.
//! 9. [`server`]: the running [`Broker`] — start-up wiring, listener, per-connection framing
//!    and in-order responses, `/metrics`, background tasks, following the cluster metadata
//!    (`server::metadata`), clean shutdown.
//!
//! ## Data flow
//! Produce: connection reads a frame → `handler::produce` validates the batch (CRC, size, record
//! framing, bounded decompression) → `Partition::append` stamps offsets and leader epoch and
//! writes it to the active segment → high watermark moves, waking long-poll fetchers → the
//! response is sent (after a group-commit fsync when `flush.on.ack` is set).
//! Fetch: `handler::fetch` → its partitions from the request or its fetch session →
//! `Partition::read` → offset index lookup → whole batches, as stored.
//!
//! ## Invariants
//! - Batches are stored byte-for-byte as producers sent them, except base offset, partition
//!   leader epoch and (LogAppendTime topics) timestamps + CRC.
//! - Offsets within a partition strictly increase; consumers see only offsets below the high
//!   watermark.
//! - After a crash, recovery cuts each log at its first torn or corrupt batch; nothing before it
//!   is lost.

pub mod acls;
pub mod broker_configs;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod context;
pub mod durable_file;
pub mod error;
pub mod fetch_session;
pub mod group;
pub mod handler;
pub mod log;
pub mod memory_pool;
pub mod metrics;
pub mod partition;
pub mod producer;
pub mod quota;
pub mod replication;
pub mod security;
#[cfg(test)]
mod seeded_rng;
pub mod server;
mod shutdown;
pub mod topic;
pub mod transaction;
pub mod user_credentials;

pub use config::BrokerConfig;
pub use error::BrokerError;
pub use server::{Broker, BrokerFuture};
