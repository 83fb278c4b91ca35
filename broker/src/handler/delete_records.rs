//! DeleteRecords: moves a partition's log start offset; whole segments below it are removed.
//! An offset of -1 means the high watermark.

use std::sync::Arc;

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::handler::errors::log_error;
use crate::security::acl::Operation;

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            // Authorization first, as Kafka: a refused name's existence does not show.
            let authorized = access.allows_topic(Operation::Delete, topic.name.as_str());
            let missing = match authorized {
                true => ResponseError::UnknownTopicOrPartition,
                false => ResponseError::TopicAuthorizationFailed,
            };
            let found = context
                .topics
                .get(topic.name.as_str())
                .filter(|_| authorized);
            let partitions = topic
                .partitions
                .into_iter()
                .map(|requested| {
                    let result = DeleteRecordsPartitionResult::default()
                        .with_partition_index(requested.partition_index)
                        .with_low_watermark(-1);
                    let partition =
                        match found.as_ref().ok_or(missing).and_then(|t| {
                            crate::handler::led_partition(t, requested.partition_index)
                        }) {
                            Ok(partition) => partition,
                            Err(error) => return result.with_error_code(error.code()),
                        };
                    if found.as_ref().is_some_and(|t| !t.config.delete) {
                        // Kafka: records of compact-only topics are removed by the cleaner alone.
                        return result.with_error_code(ResponseError::PolicyViolation.code());
                    }
                    match partition.delete_records_before(requested.offset) {
                        Ok(low_watermark) => result.with_low_watermark(low_watermark),
                        Err(error) => result.with_error_code(log_error(&error).code()),
                    }
                })
                .collect();
            DeleteRecordsTopicResult::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    DeleteRecordsResponse::default().with_topics(topics)
}
