//! The `file` source's YAML settings.

use serde::{Deserialize, Serialize};

use crate::weblog::LogFormat;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StartAt {
    /// Files present at the first start are read from their first line.
    #[default]
    Beginning,
    /// Files present at the first start are read from their end (only new lines). Files that
    /// appear later (after a rotation) are always read from the beginning.
    End,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FileSourceConfig {
    /// Glob patterns, e.g. `/var/log/nginx/access.log*`.
    pub paths: Vec<String>,
    /// How lines are parsed: `nginx_combined`, `apache_combined`, `apache_common`, `json`, `raw`.
    pub format: LogFormat,
    /// File names (not paths) never read, e.g. rotated logs compressed by logrotate.
    #[serde(default = "default_exclude")]
    pub exclude: Vec<String>,
    #[serde(default)]
    pub start_at: StartAt,
    /// How often the globs are matched again (new and rotated files).
    #[serde(default = "default_scan_interval_ms")]
    pub scan_interval_ms: u64,
    /// Longer lines are cut there and sent to the dead-letter topic.
    #[serde(default = "default_max_line_bytes")]
    pub max_line_bytes: usize,
    /// A file renamed away (rotated) or deleted is read on until it has not grown for this
    /// long, since a web server keeps writing to it until it reopens its log.
    #[serde(default = "default_rotate_wait_ms")]
    pub rotate_wait_ms: u64,
    /// The most files read at once.
    #[serde(default = "default_max_open_files")]
    pub max_open_files: usize,
}

fn default_exclude() -> Vec<String> {
    ["*.gz", "*.bz2", "*.xz", "*.zst", "*.zip"]
        .map(String::from)
        .to_vec()
}
fn default_scan_interval_ms() -> u64 {
    1000
}
fn default_max_line_bytes() -> usize {
    1 << 20
}
fn default_rotate_wait_ms() -> u64 {
    5000
}
fn default_max_open_files() -> usize {
    1024
}

impl FileSourceConfig {
    pub fn new(paths: &[&str], format: LogFormat) -> Self {
        FileSourceConfig {
            paths: paths.iter().map(|p| p.to_string()).collect(),
            format,
            exclude: default_exclude(),
            start_at: StartAt::Beginning,
            scan_interval_ms: default_scan_interval_ms(),
            max_line_bytes: default_max_line_bytes(),
            rotate_wait_ms: default_rotate_wait_ms(),
            max_open_files: default_max_open_files(),
        }
    }

    /// Problems with the settings, as sentences.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.paths.is_empty() {
            problems.push("paths: at least one path or glob is needed".to_string());
        }
        for pattern in self.paths.iter().chain(&self.exclude) {
            if let Err(error) = glob::Pattern::new(pattern) {
                problems.push(format!("'{pattern}' is not a valid glob: {error}"));
            }
        }
        if self.max_line_bytes == 0 || self.max_open_files == 0 || self.scan_interval_ms == 0 {
            problems.push(
                "max_line_bytes, max_open_files and scan_interval_ms must be positive".into(),
            );
        }
        problems
    }
}

#[cfg(feature = "runtime")]
impl crate::connector::SourceConnector for FileSourceConfig {
    fn problems(&self) -> Vec<String> {
        FileSourceConfig::problems(self)
    }

    fn format(&self) -> LogFormat {
        self.format
    }

    fn open(&self) -> Result<Box<dyn crate::source::Source>, crate::ConnectorError> {
        Ok(Box::new(super::FileSource::new(self.clone())?))
    }
}
