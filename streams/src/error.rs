//! The streams crate's errors: each carries the facts needed to act on it, and says what can be
//! done about it ([`StreamsError::remedy`]): change the job (configuration, query, limits), run
//! it again (the cluster was unavailable, a newer copy took over), or report a defect.

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;
use std::time::Duration;

use rdkafka::error::KafkaError;
use weir_client::{ClientError, Fenced, Remedy};

#[derive(Debug, thiserror::Error)]
pub enum StreamsError {
    #[error("invalid job configuration: {0}")]
    Config(String),
    // Not a `source`: DataFusion's message already holds its whole chain; printing the chain
    // again would repeat it.
    #[error("SQL: {0}")]
    Sql(DataFusionError),
    #[error("Arrow: {0}")]
    Arrow(#[from] ArrowError),
    #[error("cannot infer a schema: {0}")]
    Schema(String),
    #[error("output column {column}: {reason}")]
    Encode { column: String, reason: String },
    /// Talking to the cluster failed; [`ClientError::Fenced`] when a newer incarnation of the
    /// job took over (this one stops).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// More records to read than a bound allows (the message names the setting to raise).
    #[error("{0}")]
    TooMuch(String),
    /// A query a job cannot run over a stream, or an unsupported shape of it (the message says
    /// why and what would run).
    #[error("{0}")]
    Query(String),
    /// The job's state grew past `max_state_entries`.
    #[error("{what} hold {held} entries, more than max_state_entries ({limit}): {hint}")]
    StateFull {
        what: &'static str,
        held: usize,
        limit: usize,
        hint: &'static str,
    },
    /// A record of the job's internal topics (changelog, repartition) or of a table that does
    /// not decode as this job wrote it: another job wrote the topic, or the query changed while
    /// records were in flight.
    #[error("{0}")]
    Corrupt(String),
    /// Waiting for the cluster took longer than allowed.
    #[error("{what} took longer than {timeout:?}")]
    Timeout { what: String, timeout: Duration },
    /// A broken invariant of the job itself.
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<DataFusionError> for StreamsError {
    fn from(error: DataFusionError) -> Self {
        StreamsError::Sql(error)
    }
}

impl StreamsError {
    pub fn kafka(operation: &'static str) -> impl FnOnce(KafkaError) -> StreamsError {
        move |source| StreamsError::Client(ClientError::Kafka { operation, source })
    }

    /// What can be done about it: DataFusion's planning and execution errors are the query's
    /// (or its data's) to fix, its internal and I/O errors a defect and a retry.
    pub fn remedy(&self) -> Remedy {
        use datafusion::error::DataFusionError as Df;
        match self {
            StreamsError::Client(error) => error.remedy(),
            StreamsError::Timeout { .. } => Remedy::Retry,
            StreamsError::Internal(_) | StreamsError::Arrow(_) => Remedy::Report,
            StreamsError::Sql(error) => match error.find_root() {
                Df::Internal(_) | Df::NotImplemented(_) => Remedy::Report,
                Df::IoError(_) | Df::ObjectStore(_) => Remedy::Retry,
                _ => Remedy::Fix,
            },
            StreamsError::Config(_)
            | StreamsError::Schema(_)
            | StreamsError::Encode { .. }
            | StreamsError::TooMuch(_)
            | StreamsError::Query(_)
            | StreamsError::StateFull { .. }
            | StreamsError::Corrupt(_) => Remedy::Fix,
        }
    }

    /// Whether a newer incarnation of the job took over.
    pub fn fenced(&self) -> Option<&Fenced> {
        match self {
            StreamsError::Client(ClientError::Fenced(fenced)) => Some(fenced),
            _ => None,
        }
    }
}

pub type Result<T, E = StreamsError> = std::result::Result<T, E>;
