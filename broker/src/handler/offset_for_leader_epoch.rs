//! OffsetForLeaderEpoch (KIP-101/KIP-320): the end offset of a leader epoch.
//!
//! A single broker has led every partition since epoch 0 and never changes epoch, so the end
//! offset of the current epoch is the log end offset; epochs above ours are unknown.

use std::sync::Arc;

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};
use kafka_protocol::ResponseError;

use crate::handler::fetch::check_leader_epoch;
use crate::server::BrokerContext;

pub fn handle(
    context: &Arc<BrokerContext>,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let found = context.topics.get(topic.topic.as_str());
            let partitions = topic
                .partitions
                .into_iter()
                .map(|requested| {
                    let result = EpochEndOffset::default()
                        .with_partition(requested.partition)
                        .with_leader_epoch(-1)
                        .with_end_offset(-1);
                    let Some(partition) = found
                        .as_ref()
                        .and_then(|t| t.partition(requested.partition))
                    else {
                        return result
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code());
                    };
                    if let Err(error) =
                        check_leader_epoch(partition, requested.current_leader_epoch)
                    {
                        return result.with_error_code(error.code());
                    }
                    let current = partition.leader_epoch();
                    if requested.leader_epoch > current || requested.leader_epoch < 0 {
                        return result;
                    }
                    result
                        .with_leader_epoch(current)
                        .with_end_offset(partition.offsets().log_end_offset)
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(topic.topic)
                .with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}
