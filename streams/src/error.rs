//! The streams crate's errors: each carries the facts needed to act on it.

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;
use rdkafka::error::KafkaError;
use weir_client::{ClientError, Fenced};

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
    #[error("{0}")]
    TooMuch(String),
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

    /// Whether a newer incarnation of the job took over.
    pub fn fenced(&self) -> Option<&Fenced> {
        match self {
            StreamsError::Client(ClientError::Fenced(fenced)) => Some(fenced),
            _ => None,
        }
    }
}

pub type Result<T, E = StreamsError> = std::result::Result<T, E>;
