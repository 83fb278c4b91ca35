//! Creating the topics a part of Weir owns (a job's internal topics, a pipeline's topics, a
//! Kafka sink's output and offsets topics, Nexmark's inputs), where one that exists already is
//! the usual case after a restart, not an error.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic};
use rdkafka::client::ClientContext;
use rdkafka::types::RDKafkaErrorCode;

use crate::error::ClientError;

/// What became of one topic asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicCreation {
    Created(String),
    /// It was there already (its settings are whatever it was created with).
    Existed(String),
}

/// Creates `topics`, waiting up to `timeout` for the controller; a topic that exists already is
/// [`TopicCreation::Existed`]. The first topic the cluster refuses otherwise is the error.
pub async fn create_topics<C: ClientContext + 'static>(
    admin: &AdminClient<C>,
    topics: &[NewTopic<'_>],
    timeout: Duration,
) -> Result<Vec<TopicCreation>, ClientError> {
    let options = AdminOptions::new().operation_timeout(Some(timeout));
    let results = admin
        .create_topics(topics, &options)
        .await
        .map_err(ClientError::kafka("creating topics"))?;
    results
        .into_iter()
        .map(|result| match result {
            Ok(topic) => Ok(TopicCreation::Created(topic)),
            Err((topic, RDKafkaErrorCode::TopicAlreadyExists)) => Ok(TopicCreation::Existed(topic)),
            Err((topic, code)) => Err(ClientError::TopicRefused { topic, code }),
        })
        .collect()
}
