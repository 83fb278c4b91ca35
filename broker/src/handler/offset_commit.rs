//! OffsetCommit: validated against the group's membership and generation, appended to
//! `__consumer_offsets`, answered after the append (and its fsync with `flush.on.ack`).

use std::sync::Arc;

use futures::FutureExt;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse, ResponseKind};
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::group::offsets::CommittedOffset;
use crate::handler::access::Access;
use crate::handler::commit_order::CommitOrder;
use crate::handler::errors::{error_for, log_error};
use crate::handler::HandlerOutput;
use crate::security::acl::Operation;

/// READ on the group is checked before (`request_gate`); READ on each topic here, first.
pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: OffsetCommitRequest,
) -> HandlerOutput {
    let group_id = request.group_id.to_string();
    let group_error: Option<ResponseError> = context
        .groups
        .check_commit(
            &group_id,
            &request.member_id,
            request.group_instance_id.as_deref(),
            request.generation_id_or_member_epoch,
        )
        .map(Into::into);
    let now_ms = context.clock.now_ms();
    let metadata_max_bytes = context.config().offset_metadata_max_bytes();
    let mut commits = Vec::new();
    let mut answers = CommitOrder::default();
    for topic in &request.topics {
        let topic_allowed = access.allows_topic(Operation::Read, topic.name.as_str());
        for p in &topic.partitions {
            let error = if !topic_allowed {
                Some(ResponseError::TopicAuthorizationFailed)
            } else if !context.partition_exists(topic.name.as_str(), p.partition_index) {
                Some(ResponseError::UnknownTopicOrPartition)
            } else if let Some(error) = group_error {
                Some(error)
            } else if p
                .committed_metadata
                .as_ref()
                .is_some_and(|m| m.len() > metadata_max_bytes)
            {
                Some(ResponseError::OffsetMetadataTooLarge)
            } else {
                commits.push((
                    topic.name.to_string(),
                    p.partition_index,
                    CommittedOffset {
                        offset: p.committed_offset,
                        leader_epoch: p.committed_leader_epoch,
                        metadata: p
                            .committed_metadata
                            .as_ref()
                            .map(|m| m.to_string())
                            .unwrap_or_default(),
                        commit_timestamp_ms: now_ms,
                    },
                ));
                None
            };
            let partition = OffsetCommitResponsePartition::default()
                .with_partition_index(p.partition_index)
                .with_error_code(error.map_or(0, |e| e.code()));
            let refused_by_handler = matches!(
                error,
                Some(
                    ResponseError::TopicAuthorizationFailed
                        | ResponseError::UnknownTopicOrPartition
                )
            );
            answers.push(&topic.name, partition, refused_by_handler);
        }
    }
    let mut results = answers.into_topics(|name, partitions| {
        OffsetCommitResponseTopic::default()
            .with_name(name)
            .with_partitions(partitions)
    });
    let fail_all = |results: &mut Vec<OffsetCommitResponseTopic>, error: ResponseError| {
        for topic in results.iter_mut() {
            for partition in topic.partitions.iter_mut() {
                if partition.error_code == 0 {
                    partition.error_code = error.code();
                }
            }
        }
    };
    let wait = match context.groups.commit(&context.topics, &group_id, commits) {
        Ok(wait) => wait,
        Err(error) => {
            tracing::error!(group = %group_id, %error, "offset commit failed");
            fail_all(&mut results, error_for(&error));
            None
        }
    };
    let Some(wait) = wait else {
        return HandlerOutput::Ready(Box::new(ResponseKind::OffsetCommit(
            OffsetCommitResponse::default().with_topics(results),
        )));
    };
    HandlerOutput::Deferred(
        async move {
            let mut results = results;
            if let Err(error) = wait_for_commit(&wait).await {
                fail_all(&mut results, error);
            }
            ResponseKind::OffsetCommit(OffsetCommitResponse::default().with_topics(results))
        }
        .boxed(),
    )
}

/// Kafka's `offsets.commit.timeout.ms`: how long a commit waits for the offsets partition's
/// replicas before REQUEST_TIMED_OUT.
const OFFSETS_COMMIT_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(5000);

pub async fn wait_for_commit(
    wait: &crate::group::coordinator::CommitWait,
) -> Result<(), ResponseError> {
    if wait.durable {
        wait.partition
            .wait_durable(wait.last_offset)
            .await
            .map_err(|error| log_error(&error))?;
    }
    if wait.replicated {
        let replicated = wait.partition.wait_replicated(wait.last_offset, 1);
        match tokio::time::timeout(OFFSETS_COMMIT_TIMEOUT, replicated).await {
            Ok(Ok(())) => {}
            // The coordinator moved away meanwhile: the client looks for the new one.
            Ok(Err(_)) => return Err(ResponseError::NotCoordinator),
            Err(_) => return Err(ResponseError::RequestTimedOut),
        }
    }
    Ok(())
}
