//! ListOffsets: earliest, latest, by timestamp (exact to the record) and max timestamp.

use std::sync::Arc;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use kafka_protocol::ResponseError;

use crate::config::MAX_DECOMPRESSED_BATCH_BYTES;
use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::handler::errors::log_error;
use crate::partition::Partition;
use crate::security::acl::Operation;

pub const LATEST_TIMESTAMP: i64 = -1;
pub const EARLIEST_TIMESTAMP: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    request: ListOffsetsRequest,
) -> ListOffsetsResponse {
    // read_committed (isolation level 1) sees only what is below the last stable offset.
    let read_committed = request.isolation_level == 1;
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            // Authorization first, as Kafka: a refused name's existence does not show.
            let authorized = access.allows_topic(Operation::Describe, topic.name.as_str());
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
                    let response = ListOffsetsPartitionResponse::default()
                        .with_partition_index(requested.partition_index);
                    let partition = found
                        .as_ref()
                        .ok_or(missing)
                        .and_then(|t| crate::handler::led_partition(t, requested.partition_index));
                    let result = partition.and_then(|partition| {
                        partition.check_leader_epoch(requested.current_leader_epoch)?;
                        lookup(partition, requested.timestamp, version, read_committed)
                    });
                    match result {
                        Ok((offset, timestamp, leader_epoch)) => response
                            .with_offset(offset)
                            .with_timestamp(timestamp)
                            // The field exists from v4; older versions must leave it at -1.
                            .with_leader_epoch(if version >= 4 { leader_epoch } else { -1 }),
                        Err(error) => response
                            .with_error_code(error.code())
                            .with_offset(-1)
                            .with_timestamp(-1),
                    }
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

/// (offset, timestamp, leader epoch) for one partition.
fn lookup(
    partition: &Partition,
    timestamp: i64,
    version: i16,
    read_committed: bool,
) -> Result<(i64, i64, i32), ResponseError> {
    let epoch = partition.leader_epoch();
    let offsets = partition.offsets();
    let visible_end = if read_committed {
        offsets.last_stable_offset
    } else {
        offsets.high_watermark
    };
    match timestamp {
        LATEST_TIMESTAMP => Ok((visible_end, -1, epoch)),
        EARLIEST_TIMESTAMP => Ok((offsets.log_start_offset, -1, epoch)),
        MAX_TIMESTAMP if version >= 7 => {
            let found = partition
                .log()
                .max_timestamp_offset(visible_end, MAX_DECOMPRESSED_BATCH_BYTES)
                .map_err(|e| log_error(&e))?;
            Ok(found.map_or((-1, -1, -1), |(offset, ts)| (offset, ts, epoch)))
        }
        target if target >= 0 => {
            let found = partition
                .log()
                .offset_for_timestamp(target, visible_end, MAX_DECOMPRESSED_BATCH_BYTES)
                .map_err(|e| log_error(&e))?;
            Ok(found.map_or((-1, -1, -1), |(offset, ts)| (offset, ts, epoch)))
        }
        _ => Err(ResponseError::InvalidRequest),
    }
}
