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

pub fn handle(
    context: &Arc<BrokerContext>,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|requested| {
            let topic = context.topics.get(requested.name.as_str());
            let partitions = requested
                .partition_indexes
                .iter()
                .map(|&index| {
                    let response = PartitionResponse::default().with_partition_index(index);
                    let Some(partition) = topic.as_ref().and_then(|t| t.partition(index)) else {
                        return response
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code());
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
