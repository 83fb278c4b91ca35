//! # weir-pipelines
//!
//! A pipeline, declared in YAML: a source (tailed files, a generator), the topic its records
//! land in, an optional SQL transform, and sinks (Parquet, PostgreSQL, stdout) — run exactly
//! once by the `weir` binary (`weir pipeline run|validate`), on an embedded broker or any
//! Kafka cluster.
//!
//! ## Module map
//! - [`config`]: the YAML model (unknown fields refused). [`load`]: files and directories,
//!   `${VAR}` / `${file:PATH}` ([`interpolate`]), parse errors with line and column
//!   ([`locate`], [`diagnostic`]); every problem of a file in one run, each field repaired to
//!   go on ([`repair`]). [`validate`]: names, topics, connector settings, the SQL planned
//!   against the topic's columns, reachability of cluster and databases.
//! - [`cluster`]: the embedded broker, topic creation.
//! - [`ingest`]: the source stage — poll, parse (bad lines to the dead-letter topic), produce,
//!   and commit records and source positions in one Kafka transaction (`weir_client`'s
//!   checkpoint producer, [`positions`]).
//! - [`http_ingest`]: the `http` source's endpoint — lines parsed and produced (acks=all),
//!   answered once durable.
//! - [`deliver`]: a sink stage — read the topic from the offsets the sink holds, decode, SQL
//!   (on `parallelism` workers, [`rows`]), write, and commit rows with offsets in the sink.
//! - [`windows`]: a windowed transform, run as the streams engine's windowed job between the
//!   topic and the sinks.
//! - [`membership`]: copies of a pipeline (pods) sharing its work through the group protocol:
//!   a sink's partitions, or a lease on the source and on one-writer sinks.
//! - [`run`]: stages started, watched and stopped together. [`metrics`]: Prometheus.
//!
//! Features: `runtime` (default) is everything; without it the crate is the loader only
//! (`config`, `load`, `repair`, `interpolate`, `locate`, `diagnostic`), which `fuzz/` builds with
//! coverage instrumentation without DataFusion or librdkafka.
//!
//! ## Data flow and invariants
//! source → (one transaction: records + dead letters + positions) → topic → (read_committed)
//! → decode → SQL → sink (one commit: rows + offsets). Each arrow commits atomically, and each
//! resume point (positions topic, sink offsets) is written in the same commit as the data it
//! covers, so a `kill -9` anywhere loses and repeats nothing.

// The loader, in every build.
pub mod config;
pub mod diagnostic;
pub mod interpolate;
pub mod load;
pub mod locate;
pub mod repair;

/// Items that run pipelines: not in a settings-only build.
macro_rules! runtime {
    ($($item:item)*) => { $(#[cfg(feature = "runtime")] $item)* };
}

runtime! {
    pub mod cluster;
    pub mod deliver;
    pub mod error;
    pub mod http_ingest;
    pub mod ingest;
    pub mod membership;
    pub mod metrics;
    pub mod positions;
    pub mod rows;
    pub mod run;
    pub mod schema;
    pub mod validate;
    pub mod windows;

    pub use error::{PipelineError, Result};
}
