//! OffsetFetch: committed offsets of one group (v1–7) or several (v8+). Partitions without a
//! commit answer offset -1. `require_stable` needs no waiting until transactions exist.

use std::sync::Arc;

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::group::offsets::CommittedOffset;
use crate::server::BrokerContext;

type Found = Vec<(String, i32, Option<CommittedOffset>)>;
/// (partition index, committed offset if any)
type PartitionOffsets = Vec<(i32, Option<CommittedOffset>)>;

fn by_topic(found: Found) -> Vec<(String, PartitionOffsets)> {
    let mut topics: Vec<(String, PartitionOffsets)> = Vec::new();
    for (topic, partition, offset) in found {
        match topics.iter_mut().find(|(name, _)| *name == topic) {
            Some((_, partitions)) => partitions.push((partition, offset)),
            None => topics.push((topic, vec![(partition, offset)])),
        }
    }
    topics
}

fn values(offset: &Option<CommittedOffset>) -> (i64, i32, String) {
    match offset {
        Some(o) => (o.offset, o.leader_epoch, o.metadata.clone()),
        None => (-1, -1, String::new()),
    }
}

pub fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    if version >= 8 {
        let groups = request
            .groups
            .into_iter()
            .map(|group| {
                let wanted = group.topics.map(|topics| {
                    topics
                        .into_iter()
                        .flat_map(|t| {
                            t.partition_indexes
                                .into_iter()
                                .map(move |p| (t.name.to_string(), p))
                        })
                        .collect()
                });
                let found = context.groups.fetch_offsets(&group.group_id, wanted);
                let topics = by_topic(found)
                    .into_iter()
                    .map(|(topic, partitions)| {
                        OffsetFetchResponseTopics::default()
                            .with_name(TopicName(StrBytes::from_string(topic)))
                            .with_partitions(
                                partitions
                                    .into_iter()
                                    .map(|(index, offset)| {
                                        let (committed, epoch, metadata) = values(&offset);
                                        OffsetFetchResponsePartitions::default()
                                            .with_partition_index(index)
                                            .with_committed_offset(committed)
                                            .with_committed_leader_epoch(epoch)
                                            .with_metadata(Some(StrBytes::from_string(metadata)))
                                    })
                                    .collect(),
                            )
                    })
                    .collect();
                OffsetFetchResponseGroup::default()
                    .with_group_id(group.group_id)
                    .with_topics(topics)
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let wanted = request.topics.map(|topics| {
        topics
            .into_iter()
            .flat_map(|t| {
                t.partition_indexes
                    .into_iter()
                    .map(move |p| (t.name.to_string(), p))
            })
            .collect()
    });
    let found = context.groups.fetch_offsets(&request.group_id, wanted);
    let topics = by_topic(found)
        .into_iter()
        .map(|(topic, partitions)| {
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic)))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|(index, offset)| {
                            let (committed, epoch, metadata) = values(&offset);
                            let partition = OffsetFetchResponsePartition::default()
                                .with_partition_index(index)
                                .with_committed_offset(committed)
                                .with_metadata(Some(StrBytes::from_string(metadata)));
                            if version >= 5 {
                                partition.with_committed_leader_epoch(epoch)
                            } else {
                                partition
                            }
                        })
                        .collect(),
                )
        })
        .collect();
    OffsetFetchResponse::default().with_topics(topics)
}
