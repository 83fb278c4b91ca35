//! DescribeProducers (KIP-664): the idempotent and transactional producers a partition knows,
//! with their epoch, last sequence and open transaction's first offset — how hanging
//! transactions are found.

use std::sync::Arc;

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::security::acl::Operation;

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|requested| {
            // READ on the topic, as Kafka; a refused name's existence does not show.
            let authorized = access.allows_topic(Operation::Read, requested.name.as_str());
            let missing = match authorized {
                true => ResponseError::UnknownTopicOrPartition,
                false => ResponseError::TopicAuthorizationFailed,
            };
            let topic = context
                .topics
                .get(requested.name.as_str())
                .filter(|_| authorized);
            let partitions = requested
                .partition_indexes
                .iter()
                .map(|&index| {
                    let response = PartitionResponse::default().with_partition_index(index);
                    let Some(partition) = topic.as_ref().and_then(|t| t.partition(index)) else {
                        return response.with_error_code(missing.code());
                    };
                    let log = partition.log();
                    let producers = log
                        .producer_state()
                        .producers()
                        .iter()
                        .map(|(id, entry)| {
                            let last_sequence =
                                entry.batches.back().map_or(-1, |b| b.last_sequence);
                            ProducerState::default()
                                .with_producer_id(ProducerId(*id))
                                .with_producer_epoch(entry.epoch as i32)
                                .with_last_sequence(last_sequence)
                                .with_last_timestamp(entry.last_append_ms)
                                .with_coordinator_epoch(entry.coordinator_epoch)
                                .with_current_txn_start_offset(
                                    entry.current_txn_first_offset.unwrap_or(-1),
                                )
                        })
                        .collect();
                    response.with_active_producers(producers)
                })
                .collect();
            TopicResponse::default()
                .with_name(requested.name)
                .with_partitions(partitions)
        })
        .collect();
    DescribeProducersResponse::default().with_topics(topics)
}
