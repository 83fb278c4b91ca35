//! DeleteTopics: by name (v0–5) or by id (v6+). In a cluster the controller deletes the topic
//! and every broker removes its replicas as it applies the record.

use std::sync::Arc;

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::quorum::rpc::ControllerRequest;
use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::handler::errors::error_for;
use crate::security::acl::Operation;

pub async fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
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
    let mut responses = Vec::with_capacity(targets.len());
    for (name, topic_id) in targets {
        let result = DeletableTopicResult::default()
            .with_name(name.clone())
            .with_topic_id(topic_id);
        // DELETE on the topic, as Kafka: a named one before its existence is looked at; one
        // by id once resolved, its name hidden unless the principal may DESCRIBE it.
        let refused = ResponseError::TopicAuthorizationFailed.code();
        if let Some(name) = &name {
            if !access.allows_topic(Operation::Delete, name.as_str()) {
                responses.push(result.with_error_code(refused));
                continue;
            }
        }
        let Some(topic) = resolve(context, name.as_ref(), topic_id) else {
            responses.push(result.with_error_code(ResponseError::UnknownTopicId.code()));
            continue;
        };
        if name.is_none() && !access.allows_topic(Operation::Delete, &topic) {
            let shown = access
                .allows_topic(Operation::Describe, &topic)
                .then(|| TopicName(StrBytes::from_string(topic.clone())));
            responses.push(result.with_name(shown).with_error_code(refused));
            continue;
        }
        if !context.config().delete_topic_enable() {
            responses.push(result.with_error_code(ResponseError::TopicDeletionDisabled.code()));
            continue;
        }
        let deleted = match &context.cluster {
            // Every broker drops its replicas as it applies the controller's record.
            Some(cluster) => {
                let id = cluster
                    .image()
                    .image
                    .topic_by_name(&topic)
                    .map(|t| t.topic_id);
                let request = ControllerRequest::DeleteTopic {
                    name: topic.clone(),
                };
                cluster
                    .request(request)
                    .await
                    .map(|_| id.unwrap_or(topic_id))
            }
            None => {
                let deleted = context.topics.delete(&topic);
                if deleted.is_ok() && topic == crate::group::offsets::OFFSETS_TOPIC {
                    context.groups.offsets_topic_deleted();
                }
                deleted
            }
        };
        responses.push(match deleted {
            Ok(id) => result
                .with_name(Some(TopicName(StrBytes::from_string(topic))))
                .with_topic_id(id),
            Err(error) => result
                .with_error_code(error_for(&error).code())
                .with_error_message(Some(StrBytes::from_string(error.to_string()))),
        });
    }
    DeleteTopicsResponse::default().with_responses(responses)
}

/// The name of the topic to delete: given, or found by id (in the cluster's metadata when
/// there is a cluster).
fn resolve(
    context: &BrokerContext,
    name: Option<&TopicName>,
    topic_id: uuid::Uuid,
) -> Option<String> {
    if let Some(name) = name {
        return Some(name.to_string());
    }
    match &context.cluster {
        Some(cluster) => cluster
            .image()
            .image
            .topics
            .get(&topic_id)
            .map(|t| t.name.clone()),
        None => context
            .topics
            .get_by_id(topic_id)
            .map(|t| t.name.to_string()),
    }
}
