//! The broker's own error: topic and partition management, start-up and serving requests. It
//! wraps the errors of the layers below (`log::error`, `config::ConfigError`,
//! `cluster::ControllerError`); the one mapping to Kafka error codes lives in `handler::errors`.

use crate::config::ConfigError;
use crate::log::error::{BatchError, LogError};

/// Errors of topic and partition management and of serving requests.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("unknown topic or partition {topic}-{partition}")]
    UnknownTopicOrPartition { topic: String, partition: i32 },
    #[error("unknown topic '{topic}'")]
    UnknownTopic { topic: String },
    #[error("unknown topic id {topic_id}")]
    UnknownTopicId { topic_id: uuid::Uuid },
    #[error("invalid topic name '{name}': {reason}")]
    InvalidTopic { name: String, reason: String },
    #[error("topic '{topic}' already exists")]
    TopicAlreadyExists { topic: String },
    #[error("invalid partition count {count}: {reason}")]
    InvalidPartitions { count: i32, reason: String },
    #[error("invalid replica assignment: {0}")]
    InvalidReplicaAssignment(String),
    #[error("invalid replication factor {factor}: {reason}")]
    InvalidReplicationFactor { factor: i32, reason: String },
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A refused change or description of a BROKER config resource.
    #[error(transparent)]
    BrokerConfig(ConfigError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("the broker is shutting down")]
    ShuttingDown,
    #[error("the controller refused: {0}")]
    Controller(#[from] crate::cluster::ControllerError),
    #[error("no controller answered: {0}")]
    ControllerUnavailable(String),
    #[error("data directory {}: {reason}", path.display())]
    DataDirectory {
        path: std::path::PathBuf,
        reason: String,
    },
}

impl BrokerError {
    /// A metadata file of the data directory (`path`) that could not be read.
    pub fn metadata_file(
        path: &std::path::Path,
        error: crate::durable_file::JsonFileError,
    ) -> Self {
        match error {
            crate::durable_file::JsonFileError::Io(e) => LogError::io(path, e).into(),
            other => BrokerError::DataDirectory {
                path: path.to_path_buf(),
                reason: other.to_string(),
            },
        }
    }
}

impl From<BatchError> for BrokerError {
    fn from(error: BatchError) -> Self {
        BrokerError::Log(LogError::Batch(error))
    }
}
