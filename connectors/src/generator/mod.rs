//! The `generator` source: realistic web-server access-log lines, made up deterministically
//! from a seed and the line's number — so a restarted pipeline continues the same sequence and
//! exactly-once holds for demos and benchmarks too. Its position is the next line's number.

mod config;
mod lines;
mod source;

pub use config::GeneratorSourceConfig;
pub use lines::AccessLogGenerator;
pub use source::GeneratorSource;
