//! The pipelines crate's errors.

use rdkafka::error::KafkaError;
use weir_connectors::ConnectorError;
use weir_streams::StreamsError;

use crate::diagnostic::Diagnostics;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("{0}")]
    Invalid(#[from] Diagnostics),
    #[error("pipeline {pipeline}: Kafka {operation}: {source}")]
    Kafka {
        pipeline: String,
        operation: &'static str,
        source: KafkaError,
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
    #[error("pipeline {pipeline}: fenced by a newer copy of it ({reason}); this one stops")]
    Fenced { pipeline: String, reason: String },
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
        move |source| PipelineError::Kafka {
            pipeline,
            operation,
            source,
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
