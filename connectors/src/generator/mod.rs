//! The `generator` source: realistic web-server access-log lines, made up deterministically
//! from a seed and the line's number — so a restarted pipeline continues the same sequence and
//! exactly-once holds for demos and benchmarks too. Its position is the next line's number.
//! [`nexmark`] makes the Nexmark benchmark's events the same way.

mod config;
#[cfg(feature = "runtime")]
mod lines;
#[cfg(feature = "runtime")]
pub mod nexmark;
#[cfg(feature = "runtime")]
mod source;

pub use config::GeneratorSourceConfig;
#[cfg(feature = "runtime")]
pub use lines::AccessLogGenerator;
#[cfg(feature = "runtime")]
pub use source::GeneratorSource;
