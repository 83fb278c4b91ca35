//! OffsetDelete: removes committed offsets of topics the group does not subscribe to
//! (GROUP_SUBSCRIBED_TO_TOPIC otherwise, as Kafka does).

use std::sync::Arc;

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::context::BrokerContext;

pub fn handle(context: &Arc<BrokerContext>, request: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let partitions: Vec<(String, i32)> = request
        .topics
        .iter()
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
            for (topic, partition, error) in results {
                let entry = OffsetDeleteResponsePartition::default()
                    .with_partition_index(partition)
                    .with_error_code(super::errors::code(error));
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
