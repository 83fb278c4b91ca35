//! Weir's stream processing: jobs that turn topics into other topics exactly once, with SQL
//! transforms planned by DataFusion over Arrow batches.
//!
//! The engine talks to brokers only through `rdkafka`, its clients configured and its checkpoint
//! producer provided by `weir_client`, so a job runs the same against Weir or any Kafka cluster;
//! nothing here depends on the broker crate.
//!
//! Module map:
//! - [`adhoc`] — ad-hoc SQL over topics (`weir sql`): every topic a table, read up to its end.
//! - [`record`] — input and output records, value formats.
//! - [`decode`] — consumed records → an Arrow batch (JSON by a declared or inferred schema, or
//!   raw strings; plus `_key`, `_partition`, `_offset`, `_timestamp`); bad records are rejected
//!   with a reason, never dropped silently.
//! - [`sql`] — the SQL transform: a DataFusion session planned once; stateless or windowed.
//! - [`streaming`] — what a query may do over a stream: joins, ORDER BY, LIMIT, OVER (…) and
//!   subqueries are refused at planning with the reason, never run per checkpoint.
//! - [`window`] — windowed aggregations over event time (`tumble`, `hop`): local partial
//!   aggregation, a repartition topic, window state with a changelog, watermarks and lateness.
//! - [`topic_reader`] — reading partitions up to their end (ad-hoc queries, schema samples,
//!   state restore).
//! - [`encode`] — result rows → output records (`_key` column → record key; JSON or raw value).
//! - [`join`] — joins over streams (being built): the versioned table a stream–table join
//!   looks records up in, as of their event time.
//! - [`job`] — the exactly-once loop: read_committed consumer in a group, one transaction per
//!   checkpoint holding the output (and a windowed job's repartition and changelog records) and
//!   the consumed offsets (KIP-447), fencing of zombies, state reloaded after a rebalance.
//!
//! Data flow of one checkpoint: poll (bounded) → decode → transform → encode → begin
//! transaction → produce → send offsets → commit. A failed checkpoint is aborted and the input
//! rewound to the last committed offsets, so output and offsets move together or not at all.
//!
//! Invariants: offsets are committed only inside the transaction that holds the output derived
//! from them; memory per checkpoint is bounded by `checkpoint.max.records`, window state by
//! `max_state_entries`.

pub mod adhoc;
pub mod decode;
pub mod encode;
pub mod error;
pub mod job;
pub mod join;
pub mod record;
pub mod sql;
pub mod streaming;
pub mod topic_reader;
pub mod topic_table;
pub mod window;

pub use error::{Result, StreamsError};
