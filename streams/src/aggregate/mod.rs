//! Aggregations, exactly once: over event-time windows, or without one as an updating aggregate.
//!
//! A query such as
//! `SELECT tumble(_timestamp, INTERVAL '1 minute') AS minute, status, count(*) AS n
//!  FROM weblogs GROUP BY tumble(_timestamp, INTERVAL '1 minute'), status`
//! runs in two halves, like Kafka Streams' repartitioned aggregations:
//!
//! 1. [`pre_aggregate`] — the owner of an input partition evaluates the query below its GROUP BY
//!    ([`query`]'s pre-aggregate plan), puts rows in their windows (`crate::plan::window_spec`), drops rows too
//!    late for every window (they go to the late topic, or are counted), and aggregates the rest
//!    into partial groups ([`accumulator`]). Partials and the partition's largest event time go
//!    to the job's repartition topic ([`codec`]), partitioned by window and key.
//! 2. [`store`] — the owner of a repartition partition merges the partials into window state,
//!    takes the watermark from every input partition's event time, and emits each window once
//!    when the watermark passes its end; the emitted rows go through the query above its GROUP
//!    BY (HAVING, the SELECT list) to the output topic. Every state change is written to the
//!    compacted changelog topic, from which the state is restored after a restart or rebalance.
//!
//! Everything one checkpoint produces — output, late records, partials, changelog records — and
//! the consumed offsets of both topics (with each input partition's largest event time in the
//! offset's metadata) are one transaction: a crash at any point replays to the same result.
//!
//! Session windows (`session(time, gap)`) take the same two halves; their windows merge as
//! records arrive, so partials carry partial sessions, keyed by group key alone, and the store
//! merges them into each key's open sessions ([`session`] has the rules and why they are exact).
//!
//! A `GROUP BY` without a window is an updating aggregate ([`updates`]): the same two halves
//! with a single window that never closes; each checkpoint emits the groups it changed, as
//! upserts keyed by the group (a tombstone when HAVING leaves a group out).
//!
//! `crate::plan::window_functions` defines `tumble()`, `hop()` and `session()` for SQL; [`datum`]
//! the values state holds.

pub mod accumulator;
pub mod changes;
pub mod codec;
pub mod datum;
pub mod pre_aggregate;
pub mod query;
pub mod session;
pub mod store;
pub mod updates;

#[cfg(test)]
mod tests;
