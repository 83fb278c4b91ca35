//! Weir's stream processing: jobs that turn topics into other topics exactly once, with SQL
//! transforms planned by DataFusion over Arrow batches.
//!
//! The engine talks to brokers only through `rdkafka`, its clients configured and its checkpoint
//! producer provided by `weir_client`, so a job runs the same against Weir or any Kafka cluster;
//! nothing here depends on the broker crate.
//!
//! Module map:
//! - [`adhoc`] — ad-hoc SQL over topics (`weir sql`): every topic a table, read up to its end.
//! - [`record`] — input and output records, value formats; [`record_time`] — a stateless
//!   job's output records keep their input record's timestamp.
//! - [`decode`] — consumed records → an Arrow batch (JSON by a declared or inferred schema, or
//!   raw strings; plus `_key`, `_partition`, `_offset`, `_timestamp`); bad records are rejected
//!   with a reason, never dropped silently.
//! - [`sql`] — the SQL transform: a DataFusion session planned once; stateless, windowed, or an
//!   interval join.
//! - [`streaming`] — what a query may do over a stream: unbounded joins, ORDER BY, LIMIT,
//!   OVER (…) and subqueries are refused at planning with the reason, never run per checkpoint.
//! - [`window`] — aggregations: over event-time windows (`tumble`, `hop`, `session` — sessions
//!   merge), or without one as an updating aggregate (upserts and tombstones keyed by the group);
//!   local partial aggregation, a repartition topic, state with a changelog, watermarks, lateness.
//! - [`watermark`] — a state partition's event time from its input partitions' times; idle
//!   partitions (no records for `--idle-timeout-ms`) left out so they do not hold it back.
//! - [`topic_reader`] — reading partitions up to their end (ad-hoc queries, schema samples,
//!   state restore).
//! - [`topic_table`] — a topic as a table for ad-hoc queries, or its latest value per key.
//! - [`encode`] — result rows → output records (`_key` column → record key; JSON or raw value).
//! - [`join`] — joins over streams: with a declared table as of each record's event time (a
//!   versioned table kept current), and between two inputs within a time bound (interval joins:
//!   both sides repartitioned by key, buffered until the watermark passes their bound).
//! - [`state_map`] — the hash map job state is kept in (keys from the input, aHash-seeded).
//! - [`job`] — the exactly-once loop: read_committed consumer in a group, one transaction per
//!   checkpoint holding the output (and a stateful job's repartition and changelog records) and
//!   the consumed offsets (KIP-447), fencing of zombies, state reloaded after a rebalance.
//!   `job::stages`: a query whose `WITH` groups or joins runs as stages, each CTE a job of its
//!   own whose results the stages naming it read from an internal topic.
//!
//! Data flow of one checkpoint: poll (bounded) → decode → transform → encode → begin
//! transaction → produce → send offsets → commit. A failed checkpoint is aborted and the input
//! rewound to the last committed offsets, so output and offsets move together or not at all.
//!
//! Invariants: offsets are committed only inside the transaction that holds the output derived
//! from them; memory per checkpoint is bounded by `checkpoint.max.records`, window, join and
//! table state by `max_state_entries`.

pub mod adhoc;
pub mod decode;
pub mod encode;
pub mod error;
pub mod job;
pub mod join;
pub mod record;
pub mod record_time;
pub mod sql;
pub mod state_map;
pub mod streaming;
pub mod topic_reader;
pub mod topic_table;
pub mod watermark;
pub mod window;

pub use error::{Result, StreamsError};
