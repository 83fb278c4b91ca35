//! The streams crate's errors: each carries the facts needed to act on it.

use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;
use rdkafka::error::KafkaError;

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
    #[error("Kafka {operation}: {source}")]
    Kafka {
        operation: &'static str,
        source: KafkaError,
    },
    #[error("{0}")]
    TooMuch(String),
    #[error("this instance was fenced by a newer one ({0}); it stops")]
    Fenced(String),
}

impl From<DataFusionError> for StreamsError {
    fn from(error: DataFusionError) -> Self {
        StreamsError::Sql(error)
    }
}

impl StreamsError {
    pub fn kafka(operation: &'static str) -> impl FnOnce(KafkaError) -> StreamsError {
        move |source| StreamsError::Kafka { operation, source }
    }
}

pub type Result<T, E = StreamsError> = std::result::Result<T, E>;
