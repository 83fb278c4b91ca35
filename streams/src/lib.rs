//! Weir's stream processing: jobs that turn topics into other topics exactly once, with SQL
//! transforms planned by DataFusion over Arrow batches.
//!
//! The engine talks to brokers only through `rdkafka`, its clients configured and its checkpoint
//! producer provided by `weir_client`, so a job runs the same against Weir or any Kafka cluster;
//! nothing here depends on the broker crate.
//!
//! Layers, bottom first; a module imports only from its own layer or below
//! (`scripts/layers/check.py streams/src` checks it):
//! 1. Base — [`error`]; [`record`] (input and output records, value formats); [`state_map`]
//!    (the hash map job state is kept in, aHash-seeded); [`watermark`] (a state partition's
//!    event time from its input partitions' times, idle partitions left out).
//! 2. I/O — [`io`]: consumed records → Arrow batches (`decode`: JSON by a declared or inferred
//!    schema, or raw strings, plus `_key`, `_partition`, `_offset`, `_timestamp`; bad records
//!    rejected with a reason), result rows → output records (`encode`), the timestamp an output
//!    record keeps (`record_time`), and reading partitions up to their end (`topic_reader`).
//! 3. Planning — [`plan`]: the DataFusion session queries are planned and run in, what a query
//!    may do over a stream (unbounded joins, ORDER BY, LIMIT, OVER (…) and subqueries refused
//!    with the reason), and SQL's windows (`tumble`, `hop`, `session`).
//! 4. Operators and their state — [`aggregate`]: aggregations over event-time windows (sessions
//!    merge) or without one as an updating aggregate: local partial aggregation, a repartition
//!    topic, window state with a changelog, lateness. [`join`]: a stream with a declared table
//!    as of each record's event time (a versioned table kept current), and two streams within a
//!    time bound (interval joins: both sides repartitioned by key, buffered until the watermark
//!    passes their bound). Each takes its own part of the planned query apart (`query`,
//!    `plan`) and keeps its own state (`store`, `changes`; `table`, `interval::state`).
//! 5. The transform — [`sql`]: a query planned once into one of those (or a stateless plan).
//! 6. Jobs — [`job`]: the exactly-once loop: read_committed consumer in a group, one
//!    transaction per checkpoint holding the output (and a stateful job's repartition and
//!    changelog records) and the consumed offsets (KIP-447), fencing of zombies, state reloaded
//!    after a rebalance; `job::stages` runs a query whose `WITH` groups or joins as stages.
//! 7. Ad-hoc queries — [`adhoc`] (`weir sql`): every topic a table, read up to its end
//!    (`adhoc::topic_table`: a topic as a table, or its latest value per key).
//!
//! Data flow of one checkpoint: poll (bounded) → decode → transform → encode → begin
//! transaction → produce → send offsets → commit. A failed checkpoint is aborted and the input
//! rewound to the last committed offsets, so output and offsets move together or not at all.
//!
//! Invariants: offsets are committed only inside the transaction that holds the output derived
//! from them; memory per checkpoint is bounded by `checkpoint.max.records`, window, join and
//! table state by `max_state_entries`.

pub mod adhoc;
pub mod aggregate;
pub mod error;
pub mod io;
pub mod job;
pub mod join;
pub mod plan;
pub mod record;
pub mod sql;
pub mod state_map;
pub mod watermark;

pub use error::{Result, StreamsError};
