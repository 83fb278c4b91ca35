//! The `stdout` sink, for debugging: rows printed as JSON lines. It keeps no offsets, so it
//! reads its input from the beginning on every start (at-least-once by nature).

mod config;
#[cfg(feature = "runtime")]
mod sink;

pub use config::StdoutSinkConfig;
#[cfg(feature = "runtime")]
pub use sink::StdoutSink;
