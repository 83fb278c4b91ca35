//! The pipelines crate's errors.

use rdkafka::error::KafkaError;
use weir_client::{ClientError, Fenced, Remedy};
use weir_connectors::ConnectorError;
use weir_streams::StreamsError;

use crate::diagnostic::Diagnostics;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("{0}")]
    Invalid(#[from] Diagnostics),
    /// Talking to the cluster failed; [`ClientError::Fenced`] when a newer copy of the
    /// pipeline took over.
    #[error("pipeline {pipeline}: {source}")]
    Client {
        pipeline: String,
        source: ClientError,
    },
    #[error("pipeline {pipeline}: {source}")]
    Connector {
        pipeline: String,
        source: ConnectorError,
    },
    #[error("pipeline {pipeline}: {source}")]
    Streams {
        pipeline: String,
        source: StreamsError,
    },
    #[error("embedded broker: {0}")]
    Broker(#[from] weir_broker::BrokerError),
    #[error("pipeline {pipeline}: {message}")]
    Stage { pipeline: String, message: String },
}

impl PipelineError {
    pub fn kafka(
        pipeline: &str,
        operation: &'static str,
    ) -> impl FnOnce(KafkaError) -> PipelineError {
        let pipeline = pipeline.to_string();
        move |source| PipelineError::Client {
            pipeline,
            source: ClientError::Kafka { operation, source },
        }
    }

    pub fn client(pipeline: &str) -> impl FnOnce(ClientError) -> PipelineError {
        let pipeline = pipeline.to_string();
        move |source| PipelineError::Client { pipeline, source }
    }

    /// Whether a newer copy of the pipeline took over.
    pub fn fenced(&self) -> Option<&Fenced> {
        match self {
            PipelineError::Client {
                source: ClientError::Fenced(fenced),
                ..
            } => Some(fenced),
            _ => None,
        }
    }

    /// What can be done about it (the embedded broker's start-up errors are its
    /// configuration's or data directory's).
    pub fn remedy(&self) -> Remedy {
        use weir_broker::BrokerError;
        match self {
            PipelineError::Invalid(_) | PipelineError::Stage { .. } => Remedy::Fix,
            PipelineError::Client { source, .. } => source.remedy(),
            PipelineError::Connector { source, .. } => source.remedy(),
            PipelineError::Streams { source, .. } => source.remedy(),
            PipelineError::Broker(BrokerError::Config(_) | BrokerError::DataDirectory { .. }) => {
                Remedy::Fix
            }
            PipelineError::Broker(_) => Remedy::Retry,
        }
    }

    pub fn connector(pipeline: &str) -> impl FnOnce(ConnectorError) -> PipelineError {
        let pipeline = pipeline.to_string();
        move |source| PipelineError::Connector { pipeline, source }
    }

    pub fn streams(pipeline: &str) -> impl FnOnce(StreamsError) -> PipelineError {
        let pipeline = pipeline.to_string();
        move |source| PipelineError::Streams { pipeline, source }
    }
}

pub type Result<T, E = PipelineError> = std::result::Result<T, E>;
