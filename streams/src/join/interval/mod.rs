//! Interval joins between two streams: `a JOIN b ON a.k = b.k AND b.t BETWEEN a.t + lower AND
//! a.t + upper` (inner, or left outer: a left row without a match is emitted with nulls once
//! the watermark shows none can come), as Flink's interval join.
//!
//! The pieces, as they land:
//! - [`plan`]: the join taken out of the planned query — keys, the time bound, each side's rows
//!   as the join needs them, and the query above the join.
//! - [`state`]: the state of one repartition partition — rows of both sides buffered by key,
//!   matched as the other side's rows arrive, dropped (and, unmatched, emitted for a left outer
//!   join) by the watermark; why that is exact whatever the checkpoints; its changelog.
//!
//! Still to come: the job that repartitions both inputs by key and runs the state in the
//! checkpoint's transaction (until then, `crate::plan::streaming` refuses joins between streams).

pub mod plan;
pub mod state;

#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod tests;
