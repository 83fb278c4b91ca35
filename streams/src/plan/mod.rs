//! Planning that every kind of query shares: the DataFusion session queries are planned and run
//! in ([`session`]), what a query may do over a stream ([`streaming`]), and the windows of SQL —
//! `tumble()`, `hop()`, `session()` ([`window_functions`]) and what they mean ([`window_spec`]).
//!
//! The plans of each stateful operator are taken apart beside the operator that runs them
//! (`crate::aggregate::query`, `crate::join::plan`, `crate::join::interval::plan`); `crate::sql`
//! chooses among them. Nothing here reads topics or keeps state.

pub mod session;
pub mod streaming;
pub mod window_functions;
pub mod window_spec;

pub(crate) use session::renamed_scan;
pub use session::Session;
