//! # weir-connectors
//!
//! Where records come from and where they go outside Weir's topics.
//!
//! ## Module map
//! - [`weblog`] (the `weir-weblog` crate, re-exported): web-server log formats (nginx/apache
//!   combined, apache common, JSON lines, raw)
//!   parsed into typed columns; bad lines are errors with a reason and a column.
//! - [`source`]: the pull-source trait — records polled, positions taken for the pipeline to
//!   commit in the same transaction. Sources: [`file`] (tailing with rotation),
//!   [`generator`] (made-up access logs); [`http`] is pushed to, not polled (an endpoint that
//!   answers once the lines are durable).
//! - [`sink`]: the sink trait — rows written, then committed atomically with the input
//!   offsets they cover, which the sink itself keeps. Sinks: [`parquet`] (manifest-published
//!   files), [`postgres`] (COPY + `weir_offsets` in one transaction), [`stdout`].
//!   [`kafka`] bridges to other Kafka clusters both ways (source and sink), its clients and
//!   transactional producer from `weir_client`.
//!
//! - [`connector`]: what a pipeline asks of any connector's config (problems, the source's
//!   format, the source or sink itself, reachability); [`registry`]: every `kind:` a pipeline
//!   may name and its config type.
//!
//! Layers, bottom first (`scripts/layers/check.py connectors/src`): [`error`]; the traits
//! ([`source`], [`sink`], [`connector`]); the connector folders, which know only those; the
//! registry, which knows every folder.
//!
//! Every connector folder has the same shape: `config.rs` (serde, unknown fields refused,
//! `problems()` listing what is wrong, the registry's trait implemented), the source or sink,
//! tests beside them. Adding a connector is a folder and one line in the registry.
//!
//! Features: `runtime` (default) is everything; without it the crate is only the settings —
//! each folder's `config.rs` and the registry's `kind:` enums — so the pipeline loader can be
//! fuzzed without building arrow, parquet or librdkafka.
//!
//! Invariant: a sink's commit publishes rows and offsets together or not at all, and a
//! replay of rows it already holds (same offsets) never adds them twice.

#[cfg(feature = "runtime")]
pub mod connector;
#[cfg(feature = "runtime")]
pub mod error;
pub mod file;
pub mod generator;
pub mod http;
pub mod kafka;
pub mod parquet;
pub mod postgres;
pub mod registry;
#[cfg(feature = "runtime")]
pub mod sink;
#[cfg(feature = "runtime")]
pub mod source;
pub mod stdout;
pub use weir_weblog as weblog;

#[cfg(feature = "runtime")]
pub use error::ConnectorError;
#[cfg(feature = "runtime")]
pub use source::{PositionUpdate, Source, SourceRecord};
