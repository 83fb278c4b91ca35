//! DeleteTopics: by name (v0–5) or by id (v6+).

use std::sync::Arc;

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::handler::errors::error_for;
use crate::server::BrokerContext;

pub fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    request: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let targets: Vec<(Option<TopicName>, uuid::Uuid)> = if version >= 6 {
        request
            .topics
            .into_iter()
            .map(|t| (t.name, t.topic_id))
            .collect()
    } else {
        request
            .topic_names
            .into_iter()
            .map(|n| (Some(n), uuid::Uuid::nil()))
            .collect()
    };
    let responses = targets
        .into_iter()
        .map(|(name, topic_id)| {
            let resolved = match &name {
                Some(name) => Some(name.to_string()),
                None => context
                    .topics
                    .get_by_id(topic_id)
                    .map(|t| t.name.to_string()),
            };
            let result = DeletableTopicResult::default()
                .with_name(name.clone())
                .with_topic_id(topic_id);
            let Some(topic) = resolved else {
                return result.with_error_code(ResponseError::UnknownTopicId.code());
            };
            if !context.config.delete_topic_enable() {
                return result.with_error_code(ResponseError::TopicDeletionDisabled.code());
            }
            if context.cluster.is_some() {
                return result
                    .with_error_code(ResponseError::InvalidRequest.code())
                    .with_error_message(Some(StrBytes::from_static_str(
                        "deleting topics in cluster mode is not supported yet",
                    )));
            }
            match context.topics.delete(&topic) {
                Ok(id) => result
                    .with_name(Some(TopicName(StrBytes::from_string(topic))))
                    .with_topic_id(id),
                Err(error) => result
                    .with_error_code(error_for(&error).code())
                    .with_error_message(Some(StrBytes::from_string(error.to_string()))),
            }
        })
        .collect();
    DeleteTopicsResponse::default().with_responses(responses)
}
