//! # weir-client
//!
//! librdkafka's clients for Weir's stream jobs, connectors, pipelines and CLI. Every producer,
//! consumer and admin client they make starts here, so what a connection to a cluster needs
//! (the bootstrap servers, the user's client properties, timeouts, security) is decided in one
//! place. Its sibling `weir-wire` (`client/wire`) is Weir's own protocol client, which the
//! broker uses and which therefore cannot depend on rdkafka.
//!
//! ## Module map
//! - [`settings`]: [`ClientSettings`] — a cluster's bootstrap servers and the user's librdkafka
//!   properties; builds every client's `ClientConfig` (the caller's defaults first, the user's
//!   properties over them). [`CLUSTER_TIMEOUT`] bounds a cluster operation.
//! - [`reach`]: whether a cluster can be used with those settings, and when not, why
//!   ([`Unreached`]: a refused login, an untrusted certificate, a protocol mismatch, a missing
//!   Describe ACL — each with the fix), for `weir pipeline validate`.
//! - [`checkpoint`]: [`CheckpointProducer`] — the one producer that writes a checkpoint: with a
//!   transactional id, one Kafka transaction per checkpoint (records and consumed offsets
//!   together); without, an idempotent producer whose commit waits for every acknowledgement.
//!   Used by stream jobs, pipeline ingest and the Kafka sink.
//! - [`topics`]: [`create_topics`] — creating the topics a part of Weir owns, one that exists
//!   already being no error.
//! - [`error`]: [`ClientError`], and [`Fenced`] — the one error saying a newer incarnation of a
//!   writer took over (a fatal transactional error, or a sink's offsets moved by another
//!   writer).
//!
//! ## Data flow of a checkpoint
//! `begin` → `send` (waits while the client's bounded queue is full) → `send_offsets`
//! (transactional) → `commit` (waits for every acknowledgement, then commits) — or `abort`.
//!
//! ## Invariants
//! A commit returns only once every record sent since `begin` is acknowledged (transactional:
//! and the transaction committed); an idempotent commit with a failed delivery is an error,
//! never a silent loss. A fenced producer is reported as [`Fenced`] and never retried.

pub mod checkpoint;
pub mod error;
pub mod reach;
pub mod settings;
pub mod topics;

pub use checkpoint::{CheckpointProducer, Outgoing};
pub use error::{remedy_of_code, remedy_of_kafka, ClientError, Fenced, Remedy};
pub use reach::Unreached;
pub use settings::{ClientSettings, CLUSTER_TIMEOUT};
pub use topics::{create_topics, TopicCreation};
