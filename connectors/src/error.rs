//! Errors of sources and sinks, carrying what went wrong and where, and what can be done about
//! it ([`ConnectorError::remedy`]): retry later (the system a connector talks to was
//! unavailable), change something (configuration, query, permissions, what is stored), or
//! report a defect.

use std::path::PathBuf;

use rdkafka::error::KafkaError;
use weir_client::{remedy_of_kafka, ClientError, Fenced, Remedy};

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
    /// The system a connector reads or writes (a far Kafka cluster, PostgreSQL, an object
    /// store) failed, refused or could not be reached; `remedy` says whether trying again can
    /// help (it refused what it was given, or it was unavailable).
    #[error("{target}, {operation}: {reason}")]
    Target {
        target: String,
        operation: String,
        reason: String,
        remedy: Remedy,
    },
    /// Rows that cannot be written as configured (a column of the wrong type for
    /// `partition_by` or `key_column`, a value the format cannot hold): the query or the
    /// configuration must change.
    #[error("{operation}: {reason}")]
    Rows {
        operation: &'static str,
        reason: String,
    },
    /// A bound of the configuration was reached (`what`); `hint` says which setting to change.
    #[error("{what}: {hint}")]
    Limit { what: String, hint: String },
    /// What the connector stored earlier is not as it left it (changed by something else).
    #[error("{location} is corrupt ({reason})")]
    Corrupt { location: String, reason: String },
    /// A broken invariant of the connector itself.
    #[error("internal error: {0}")]
    Internal(String),
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

    /// A failure of `target` while doing `operation`, whose `remedy` the caller knows.
    pub fn target(
        target: impl Into<String>,
        operation: impl Into<String>,
        remedy: Remedy,
        reason: impl std::fmt::Display,
    ) -> Self {
        ConnectorError::Target {
            target: target.into(),
            operation: operation.into(),
            reason: reason.to_string(),
            remedy,
        }
    }

    /// A far Kafka cluster's error: fenced, or a failure whose remedy its error code says.
    pub fn far_cluster(operation: impl Into<String>) -> impl FnOnce(ClientError) -> Self {
        let operation = operation.into();
        move |error| match error {
            ClientError::Fenced(fenced) => ConnectorError::Fenced(fenced),
            error => {
                let remedy = error.remedy();
                ConnectorError::target("far cluster", operation, remedy, error)
            }
        }
    }

    /// A far Kafka cluster's librdkafka error while doing `operation`, for `map_err`.
    pub fn far_kafka(operation: impl Into<String>) -> impl FnOnce(KafkaError) -> Self {
        let operation = operation.into();
        move |error| {
            let remedy = remedy_of_kafka(&error);
            ConnectorError::target("far cluster", operation, remedy, error)
        }
    }

    /// Rows that cannot be written as configured, for `map_err`.
    pub fn rows<E: std::fmt::Display>(operation: &'static str) -> impl FnOnce(E) -> Self {
        move |error| ConnectorError::Rows {
            operation,
            reason: error.to_string(),
        }
    }

    /// A broken invariant, for `map_err`: `what` was being done.
    pub fn internal<E: std::fmt::Display>(what: &'static str) -> impl FnOnce(E) -> Self {
        move |error| ConnectorError::Internal(format!("{what}: {error}"))
    }

    /// What can be done about it.
    pub fn remedy(&self) -> Remedy {
        use std::io::ErrorKind;
        match self {
            ConnectorError::Io { source, .. } => match source.kind() {
                ErrorKind::PermissionDenied
                | ErrorKind::NotFound
                | ErrorKind::ReadOnlyFilesystem
                | ErrorKind::StorageFull
                | ErrorKind::QuotaExceeded
                | ErrorKind::InvalidInput
                | ErrorKind::IsADirectory
                | ErrorKind::NotADirectory
                | ErrorKind::InvalidFilename => Remedy::Fix,
                _ => Remedy::Retry,
            },
            ConnectorError::Target { remedy, .. } => *remedy,
            ConnectorError::Config(_)
            | ConnectorError::Position { .. }
            | ConnectorError::Rows { .. }
            | ConnectorError::Limit { .. }
            | ConnectorError::Corrupt { .. } => Remedy::Fix,
            ConnectorError::Internal(_) => Remedy::Report,
            ConnectorError::Fenced(_) => Remedy::Retry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_says_what_can_be_done() {
        let full = ConnectorError::io("writing", "/data/x")(std::io::Error::from(
            std::io::ErrorKind::StorageFull,
        ));
        assert_eq!(full.remedy(), Remedy::Fix);
        let reset = ConnectorError::io("reading", "/data/x")(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        ));
        assert_eq!(reset.remedy(), Remedy::Retry);
        let unavailable =
            ConnectorError::target("PostgreSQL", "writing rows", Remedy::Retry, "shutting down");
        assert_eq!(unavailable.remedy(), Remedy::Retry);
        assert_eq!(
            unavailable.to_string(),
            "PostgreSQL, writing rows: shutting down"
        );
        let refused = ConnectorError::far_cluster("creating topics")(ClientError::TopicRefused {
            topic: "t".into(),
            code: rdkafka::types::RDKafkaErrorCode::TopicAuthorizationFailed,
        });
        assert_eq!(refused.remedy(), Remedy::Fix);
        let fenced =
            ConnectorError::far_cluster("committing")(ClientError::Fenced(Fenced::new("epoch")));
        assert!(matches!(fenced, ConnectorError::Fenced(_)));
        let bug = ConnectorError::internal("splitting rows")("index out of range");
        assert_eq!(bug.remedy(), Remedy::Report);
        assert_eq!(
            bug.to_string(),
            "internal error: splitting rows: index out of range"
        );
        let corrupt = ConnectorError::Corrupt {
            location: "_manifest/3.json".into(),
            reason: "EOF".into(),
        };
        assert_eq!(corrupt.remedy(), Remedy::Fix);
    }
}
