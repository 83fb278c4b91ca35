//! TxnOffsetCommit: a transactional producer commits a group's offsets inside its transaction
//! (KIP-98); they become visible with the commit marker. KIP-447: with a generation and member
//! id the group coordinator fences zombies of an older generation. From v5 (transaction version
//! 2, KIP-890 part 2) the commit adds the group's offsets partition to the transaction itself,
//! instead of an AddOffsetsToTxn before it.

use std::sync::Arc;

use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use kafka_protocol::ResponseError;

use crate::group::coordinator::OFFSET_METADATA_MAX_BYTES;
use crate::group::offsets::{CommittedOffset, OFFSETS_TOPIC};
use crate::handler::errors::error_for;
use crate::server::BrokerContext;

/// The first TxnOffsetCommit version of transaction version 2.
const IMPLICIT_ADD_OFFSETS_VERSION: i16 = 5;

pub fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    request: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let group_id = request.group_id.as_str();
    let error = check(context, version, &request);
    let now_ms = context.clock.now_ms();
    let mut commits = Vec::new();
    let mut topics = Vec::new();
    for topic in &request.topics {
        let known = context.topics.get(topic.name.as_str());
        let partitions = topic
            .partitions
            .iter()
            .map(|p| {
                let partition_error = error.or_else(|| {
                    if known
                        .as_ref()
                        .and_then(|t| t.partition(p.partition_index))
                        .is_none()
                    {
                        return Some(ResponseError::UnknownTopicOrPartition);
                    }
                    let metadata = p.committed_metadata.as_deref().unwrap_or_default();
                    if metadata.len() > OFFSET_METADATA_MAX_BYTES {
                        return Some(ResponseError::OffsetMetadataTooLarge);
                    }
                    commits.push((
                        topic.name.to_string(),
                        p.partition_index,
                        CommittedOffset {
                            offset: p.committed_offset,
                            leader_epoch: p.committed_leader_epoch,
                            metadata: metadata.to_string(),
                            commit_timestamp_ms: now_ms,
                        },
                    ));
                    None
                });
                TxnOffsetCommitResponsePartition::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(partition_error.map_or(0, |e| e.code()))
            })
            .collect();
        topics.push(
            TxnOffsetCommitResponseTopic::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions),
        );
    }
    if let Err(failure) = context.groups.txn_commit(
        &context.topics,
        group_id,
        request.producer_id.0,
        request.producer_epoch,
        commits,
    ) {
        let code = error_for(&failure).code();
        for topic in &mut topics {
            for partition in &mut topic.partitions {
                if partition.error_code == 0 {
                    partition.error_code = code;
                }
            }
        }
    }
    TxnOffsetCommitResponse::default().with_topics(topics)
}

/// The producer's transaction must have added the group's offsets partition; KIP-447 members
/// must be of the group's current generation.
fn check(
    context: &Arc<BrokerContext>,
    version: i16,
    request: &TxnOffsetCommitRequest,
) -> Option<ResponseError> {
    let group_id = request.group_id.as_str();
    if version >= IMPLICIT_ADD_OFFSETS_VERSION {
        let added = context.transactions.add_offsets(
            &context.txn_services(),
            request.transactional_id.as_str(),
            request.producer_id.0,
            request.producer_epoch,
            group_id,
        );
        if let Err(error) = added {
            return Some(error);
        }
    }
    let partition = match context.groups.offsets_partition(&context.topics, group_id) {
        Ok((_, partition)) => partition.index,
        Err(error) => return Some(error_for(&error)),
    };
    let added = context.transactions.verify(
        request.producer_id.0,
        request.producer_epoch,
        OFFSETS_TOPIC,
        partition,
    );
    if !added {
        return Some(ResponseError::InvalidTxnState);
    }
    if request.generation_id < 0 && request.member_id.is_empty() {
        return None;
    }
    context.groups.check_commit(
        group_id,
        &request.member_id,
        request.group_instance_id.as_deref(),
        request.generation_id,
    )
}
