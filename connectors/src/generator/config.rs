//! The `generator` source's YAML settings.

use serde::{Deserialize, Serialize};

use crate::weblog::LogFormat;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSourceConfig {
    /// `nginx_combined`, `apache_combined` or `apache_common` lines.
    #[serde(default = "default_format")]
    pub format: LogFormat,
    /// Stop after this many lines (default: never).
    #[serde(default)]
    pub count: Option<u64>,
    /// At most this many lines per second (default: as fast as they are taken).
    #[serde(default)]
    pub lines_per_second: Option<u64>,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// The first line's time (default 2026-01-01T00:00:00Z).
    #[serde(default = "default_start_time_ms")]
    pub start_time_ms: i64,
    /// Event time between two lines.
    #[serde(default = "default_line_interval_ms")]
    pub line_interval_ms: i64,
    /// Every n-th line is garbage (to see the dead-letter topic at work); default none.
    #[serde(default)]
    pub bad_line_every: Option<u64>,
}

fn default_format() -> LogFormat {
    LogFormat::NginxCombined
}
fn default_seed() -> u64 {
    1
}
fn default_line_interval_ms() -> i64 {
    10
}
fn default_start_time_ms() -> i64 {
    1_767_225_600_000
}

impl GeneratorSourceConfig {
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !matches!(
            self.format,
            LogFormat::NginxCombined | LogFormat::ApacheCombined | LogFormat::ApacheCommon
        ) {
            problems.push("format: the generator writes nginx_combined, apache_combined or apache_common lines".into());
        }
        if self.line_interval_ms < 0 {
            problems.push("line_interval_ms: cannot be negative".into());
        }
        if self.lines_per_second == Some(0) || self.bad_line_every == Some(0) {
            problems.push("lines_per_second and bad_line_every must be positive".into());
        }
        problems
    }
}

#[cfg(feature = "runtime")]
impl crate::connector::SourceConnector for GeneratorSourceConfig {
    fn problems(&self) -> Vec<String> {
        GeneratorSourceConfig::problems(self)
    }

    fn format(&self) -> LogFormat {
        self.format
    }

    fn open(&self) -> Result<Box<dyn crate::source::Source>, crate::ConnectorError> {
        Ok(Box::new(super::GeneratorSource::new(self.clone())?))
    }
}
