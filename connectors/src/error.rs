//! Errors of sources and sinks, carrying what went wrong and where.

use std::path::PathBuf;

use weir_client::Fenced;

#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    #[error("{operation} {path}: {source}")]
    Io {
        operation: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("stored position {key} is unreadable: {reason}")]
    Position { key: String, reason: String },
    #[error("{0}")]
    Sink(String),
    #[error("{0}")]
    Source(String),
    /// A newer writer took over (it moved the offsets this one started from, or its producer
    /// fenced this one's): this one lost the partitions (a newer copy of the pipeline owns
    /// them) and its uncommitted rows must be dropped.
    #[error(transparent)]
    Fenced(#[from] Fenced),
}

impl ConnectorError {
    /// An I/O error with the operation and path it happened on.
    pub fn io(
        operation: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| ConnectorError::Io {
            operation,
            path,
            source,
        }
    }
}
