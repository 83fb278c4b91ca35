//! OffsetDelete: removes committed offsets of topics the group does not subscribe to
//! (GROUP_SUBSCRIBED_TO_TOPIC otherwise, as Kafka does). Authorization as Kafka's: DELETE on the
//! group (else GROUP_AUTHORIZATION_FAILED for the request), READ on each topic (else its
//! partitions answer TOPIC_AUTHORIZATION_FAILED and keep their offsets).

use std::sync::Arc;

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::security::acl::Operation;

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    if !access.allows_group(Operation::Delete, &request.group_id) {
        return OffsetDeleteResponse::default()
            .with_error_code(kafka_protocol::ResponseError::GroupAuthorizationFailed.code());
    }
    let (allowed, refused): (Vec<_>, Vec<_>) = request
        .topics
        .iter()
        .partition(|t| access.allows_topic(Operation::Read, t.name.as_str()));
    let refused: Vec<(String, i32, i16)> = refused
        .into_iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                let error = kafka_protocol::ResponseError::TopicAuthorizationFailed;
                (t.name.to_string(), p.partition_index, error.code())
            })
        })
        .collect();
    let partitions: Vec<(String, i32)> = allowed
        .into_iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.to_string(), p.partition_index))
        })
        .collect();
    match context
        .groups
        .delete_offsets(&context.topics, &request.group_id, partitions)
    {
        Err(error) => {
            OffsetDeleteResponse::default().with_error_code(super::errors::code(Some(error)))
        }
        Ok(results) => {
            let mut topics: Vec<OffsetDeleteResponseTopic> = Vec::new();
            let codes = results
                .into_iter()
                .map(|(topic, partition, error)| (topic, partition, super::errors::code(error)));
            for (topic, partition, code) in codes.chain(refused) {
                let entry = OffsetDeleteResponsePartition::default()
                    .with_partition_index(partition)
                    .with_error_code(code);
                match topics.iter_mut().find(|t| t.name.as_str() == topic) {
                    Some(existing) => existing.partitions.push(entry),
                    None => topics.push(
                        OffsetDeleteResponseTopic::default()
                            .with_name(TopicName(StrBytes::from_string(topic)))
                            .with_partitions(vec![entry]),
                    ),
                }
            }
            OffsetDeleteResponse::default().with_topics(topics)
        }
    }
}
