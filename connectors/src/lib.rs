//! # weir-connectors
//!
//! Where records come from and where they go outside Weir's topics.
//!
//! ## Module map
//! - [`weblog`]: web-server log formats (nginx/apache combined, apache common, JSON lines, raw)
//!   parsed into typed columns; bad lines are errors with a reason and a column.

pub mod error;
pub mod file;
pub mod parquet;
pub mod postgres;
pub mod sink;
pub mod source;
pub mod weblog;

pub use error::ConnectorError;
pub use source::{PositionUpdate, Source, SourceRecord};
