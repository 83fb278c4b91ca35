//! The `generator` source: realistic web-server access-log lines, made up deterministically
//! from a seed and the line's number — so a restarted pipeline continues the same sequence and
//! exactly-once holds for demos and benchmarks too. Its position is the next line's number.

mod config;
#[cfg(feature = "runtime")]
mod lines;
#[cfg(feature = "runtime")]
mod source;

pub use config::GeneratorSourceConfig;
#[cfg(feature = "runtime")]
pub use lines::AccessLogGenerator;
#[cfg(feature = "runtime")]
pub use source::GeneratorSource;
