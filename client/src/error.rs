//! What can go wrong talking to a cluster, carrying the operation and the client's error.

use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("Kafka {operation}: {source}")]
    Kafka {
        operation: &'static str,
        source: KafkaError,
    },
    #[error(transparent)]
    Fenced(#[from] Fenced),
    /// An idempotent (non-transactional) checkpoint whose records were not all delivered: the
    /// positions they belong to must not be committed.
    #[error("{failed} records were not delivered (last error: {last_error})")]
    Undelivered { failed: u64, last_error: String },
    /// The cluster refused to create a topic (not because it exists: that is no error).
    #[error("cannot create topic {topic}: {code}")]
    TopicRefused {
        topic: String,
        code: RDKafkaErrorCode,
    },
}

/// A newer incarnation of this writer took over (its producer fenced this one, or it moved the
/// offsets this one started from): what this one has not committed must be dropped, and it
/// must not retry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fenced by a newer incarnation: {reason}")]
pub struct Fenced {
    pub reason: String,
}

impl Fenced {
    pub fn new(reason: impl Into<String>) -> Self {
        Fenced {
            reason: reason.into(),
        }
    }
}

impl ClientError {
    /// A client error of `operation`, for `map_err`.
    pub fn kafka(operation: &'static str) -> impl FnOnce(KafkaError) -> ClientError {
        move |source| ClientError::Kafka { operation, source }
    }

    /// A client error of `operation`, a fatal transactional error being [`Fenced`]: the only
    /// fatal errors a transactional producer meets in Weir's use come from a newer producer
    /// with the same transactional id (a fenced epoch).
    pub fn classify(operation: &'static str) -> impl FnOnce(KafkaError) -> ClientError {
        move |source| match &source {
            KafkaError::Transaction(error) if error.is_fatal() => {
                ClientError::Fenced(Fenced::new(error.to_string()))
            }
            _ => ClientError::Kafka { operation, source },
        }
    }

    pub fn is_fenced(&self) -> bool {
        matches!(self, ClientError::Fenced(_))
    }
}
