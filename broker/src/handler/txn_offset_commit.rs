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

use crate::context::BrokerContext;
use crate::group::offsets::{CommittedOffset, OFFSETS_TOPIC};
use crate::group::{CommitMember, TxnCommitError};
use crate::handler::access::Access;
use crate::handler::commit_order::CommitOrder;
use crate::handler::errors::error_for;
use crate::handler::offset_commit::wait_for_commit;
use crate::security::acl::Operation;
use crate::transaction::verify::{self, TxnWrite};

/// The first TxnOffsetCommit version of transaction version 2.
const IMPLICIT_ADD_OFFSETS_VERSION: i16 = 5;

pub async fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    request: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    // WRITE on the id and READ on the group are checked before (`request_gate`).
    let group_id = request.group_id.as_str();
    let error = check(context, version, &request).await;
    let now_ms = context.clock.now_ms();
    let metadata_max_bytes = context.config().offset_metadata_max_bytes();
    let mut commits = Vec::new();
    let mut answers = CommitOrder::default();
    for topic in &request.topics {
        let topic_allowed = access.allows_topic(Operation::Read, topic.name.as_str());
        for p in &topic.partitions {
            let handler_refusal = if !topic_allowed {
                Some(ResponseError::TopicAuthorizationFailed)
            } else if !context.partition_exists(topic.name.as_str(), p.partition_index) {
                Some(ResponseError::UnknownTopicOrPartition)
            } else {
                None
            };
            let partition_error = handler_refusal.or(error).or_else(|| {
                let metadata = p.committed_metadata.as_deref().unwrap_or_default();
                if metadata.len() > metadata_max_bytes {
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
            let partition = TxnOffsetCommitResponsePartition::default()
                .with_partition_index(p.partition_index)
                .with_error_code(partition_error.map_or(0, |e| e.code()));
            answers.push(&topic.name, partition, handler_refusal.is_some());
        }
    }
    let mut topics = answers.into_topics(|name, partitions| {
        TxnOffsetCommitResponseTopic::default()
            .with_name(name)
            .with_partitions(partitions)
    });
    // KIP-447: a member of the group's current generation (checked as the offsets are
    // registered, atomically with any rebalance).
    let member =
        (request.generation_id >= 0 || !request.member_id.is_empty()).then(|| CommitMember {
            member_id: &request.member_id,
            group_instance_id: request.group_instance_id.as_deref(),
            generation_id: request.generation_id,
        });
    let producer = (request.producer_id.0, request.producer_epoch);
    let committed = context
        .groups
        .txn_commit(
            &context.topics,
            group_id,
            producer,
            member.as_ref(),
            commits,
        )
        .map_err(|failure| match failure {
            TxnCommitError::Group(refused) => refused.into(),
            TxnCommitError::Broker(failure) => error_for(&failure),
        });
    let waited = match committed {
        Ok(Some(wait)) => wait_for_commit(&wait).await,
        Ok(None) => Ok(()),
        Err(error) => Err(error),
    };
    if let Err(error) = waited {
        let code = error.code();
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

/// The producer's transaction must have added the group's offsets partition (asked of its
/// coordinator, wherever it runs). The member's generation is checked as the offsets are
/// registered (`txn_commit`).
async fn check(
    context: &Arc<BrokerContext>,
    version: i16,
    request: &TxnOffsetCommitRequest,
) -> Option<ResponseError> {
    let group_id = request.group_id.as_str();
    let partition = match context.groups.offsets_partition(&context.topics, group_id) {
        Ok((_, partition)) => partition.index,
        Err(error) => return Some(error_for(&error)),
    };
    let write = TxnWrite {
        transactional_id: request.transactional_id.as_str(),
        producer_id: request.producer_id.0,
        producer_epoch: request.producer_epoch,
        adds_partition: version >= IMPLICIT_ADD_OFFSETS_VERSION,
    };
    let offsets_partition = vec![(OFFSETS_TOPIC.to_string(), partition)];
    let services = context.txn_services();
    let checked = verify::check(&context.transactions, &services, &write, offsets_partition).await;
    if let Some(error) = checked.into_iter().find_map(|(_, error)| error) {
        // As Kafka's group coordinator answers a fenced epoch, at every version.
        return Some(match error {
            ResponseError::ProducerFenced => ResponseError::InvalidProducerEpoch,
            other => other,
        });
    }
    None
}
