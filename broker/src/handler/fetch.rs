//! Fetch: whole batches from each requested partition, with long polling.
//!
//! - The batch holding the fetch offset is returned whole (the client skips earlier records).
//! - The first partition with data gets at least one batch even when it exceeds `max_bytes` or
//!   `partition_max_bytes` (KIP-74); later partitions only what fits.
//! - With fewer than `min_bytes` available, the request waits up to `max_wait_ms` for any of its
//!   partitions' high watermark to move (watch channels, not sleeps), then reads again.
//! - v13+ names topics by id. Fetch sessions (KIP-227) are not offered: `session_id` is 0, so
//!   clients send full fetches.
//! - A follower's fetch (`replica_id` set) reads up to the log end, not the high watermark,
//!   tells the leader how far the follower got (which may move the high watermark and earn it
//!   a place in the ISR), and waits for the log end to move rather than the high watermark.
//! - Authorization as Kafka's: a follower's fetch needs CLUSTER_ACTION on the cluster (else
//!   every partition is TOPIC_AUTHORIZATION_FAILED and nothing moves), a consumer's READ on each
//!   topic (an unknown topic id stays UNKNOWN_TOPIC_ID; an unknown name the principal may not
//!   read is TOPIC_AUTHORIZATION_FAILED, so existence does not leak).

use std::sync::Arc;
use std::time::Duration;

use futures::future::select_all;
use futures::FutureExt;
use kafka_protocol::messages::fetch_request::FetchTopic;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ProducerId};
use kafka_protocol::ResponseError;
use tokio::sync::watch;

use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::handler::errors::log_error;
use crate::log::batch::BatchIter;
use crate::partition::Partition;
use crate::security::acl::Operation;
use crate::topic::Topic;

/// Isolation level READ_COMMITTED.
const READ_COMMITTED: i8 = 1;

struct ResolvedTopic {
    request: FetchTopic,
    /// `None`: unknown, or not readable by the principal.
    topic: Option<Arc<Topic>>,
    authorized: bool,
}

pub async fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    request: FetchRequest,
) -> FetchResponse {
    let follower_allowed =
        request.replica_id.0 >= 0 && access.allows_cluster(Operation::ClusterAction);
    let resolved: Vec<ResolvedTopic> = request
        .topics
        .iter()
        .map(|requested| {
            let topic = if version >= 13 {
                context.topics.get_by_id(requested.topic_id)
            } else {
                context.topics.get(requested.topic.as_str())
            };
            let authorized = match (request.replica_id.0 >= 0, &topic) {
                (true, _) => follower_allowed,
                (false, Some(topic)) => access.allows_topic(Operation::Read, &topic.name),
                (false, None) if version >= 13 => true,
                (false, None) => access.allows_topic(Operation::Read, requested.topic.as_str()),
            };
            ResolvedTopic {
                topic: topic.filter(|_| authorized),
                authorized,
                request: requested.clone(),
            }
        })
        .collect();
    let partitions: Vec<Arc<Partition>> = resolved
        .iter()
        .filter_map(|r| r.topic.as_ref().map(|t| (r, t)))
        .flat_map(|(r, t)| {
            r.request
                .partitions
                .iter()
                .filter_map(|p| t.partition(p.partition).cloned())
                .collect::<Vec<_>>()
        })
        .collect();
    let follower = (request.replica_id.0 >= 0).then_some(request.replica_id.0);
    let mut watchers: Vec<watch::Receiver<i64>> = partitions
        .iter()
        .map(|p| match follower {
            Some(_) => p.watch_log_end(),
            None => p.watch_high_watermark(),
        })
        .collect();
    for watcher in &mut watchers {
        watcher.borrow_and_update();
    }
    let max_wait = Duration::from_millis(request.max_wait_ms.max(0) as u64);
    let deadline = tokio::time::Instant::now() + max_wait;
    loop {
        let (response, bytes, any_error) =
            read_all(context, version, &request, &resolved, follower);
        let done = bytes >= request.min_bytes.max(0) as usize
            || any_error
            || watchers.is_empty()
            || tokio::time::Instant::now() >= deadline;
        if done {
            if follower.is_none() {
                record_metrics(context, &response);
            }
            return response;
        }
        let woke = {
            let changed = select_all(watchers.iter_mut().map(|w| w.changed().boxed()));
            tokio::time::timeout_at(deadline, changed).await.is_ok()
        };
        match woke {
            true => {
                for watcher in &mut watchers {
                    watcher.borrow_and_update();
                }
            }
            false => {
                let (response, _, _) = read_all(context, version, &request, &resolved, follower);
                if follower.is_none() {
                    record_metrics(context, &response);
                }
                return response;
            }
        }
    }
}

/// Reads every requested partition once. Returns the response, the record bytes in it, and
/// whether any partition had an error.
fn read_all(
    context: &Arc<BrokerContext>,
    version: i16,
    request: &FetchRequest,
    resolved: &[ResolvedTopic],
    follower: Option<i32>,
) -> (FetchResponse, usize, bool) {
    let response_max = if version >= 3 {
        request
            .max_bytes
            .clamp(0, context.config().fetch_max_bytes()) as usize
    } else {
        usize::MAX
    };
    let read_committed = request.isolation_level == READ_COMMITTED;
    let mut total_bytes = 0usize;
    let mut any_error = false;
    let mut topics = Vec::with_capacity(resolved.len());
    for entry in resolved {
        let mut partitions = Vec::with_capacity(entry.request.partitions.len());
        for requested in &entry.request.partitions {
            let mut data = PartitionData::default()
                .with_partition_index(requested.partition)
                .with_high_watermark(-1)
                .with_last_stable_offset(-1)
                .with_log_start_offset(-1);
            let partition = match &entry.topic {
                None if !entry.authorized => Err(ResponseError::TopicAuthorizationFailed),
                None if version >= 13 => Err(ResponseError::UnknownTopicId),
                None => Err(ResponseError::UnknownTopicOrPartition),
                Some(topic) => crate::handler::led_partition(topic, requested.partition),
            };
            let result = partition.and_then(|partition| {
                partition.check_leader_epoch(requested.current_leader_epoch)?;
                if let (Some(replica_id), Some(topic)) = (follower, &entry.topic) {
                    let fetch_offset = requested.fetch_offset;
                    if let Some(proposal) = partition.follower_fetched(replica_id, fetch_offset)? {
                        crate::replication::propose_isr(
                            context.replication.as_ref(),
                            topic,
                            partition,
                            proposal,
                        );
                    }
                }
                let offsets = partition.offsets();
                data = std::mem::take(&mut data)
                    .with_high_watermark(offsets.high_watermark)
                    .with_last_stable_offset(offsets.last_stable_offset)
                    .with_log_start_offset(offsets.log_start_offset);
                let remaining = response_max.saturating_sub(total_bytes);
                let limit = (requested.partition_max_bytes.max(0) as usize).min(remaining);
                let min_one_batch = total_bytes == 0;
                if follower.is_some() {
                    return partition
                        .read_for_follower(requested.fetch_offset, limit)
                        .map_err(|error| log_error(&error));
                }
                if !read_committed {
                    return partition
                        .read(requested.fetch_offset, limit, min_one_batch)
                        .map_err(|error| log_error(&error));
                }
                let (read, aborted) = partition
                    .read_committed(requested.fetch_offset, limit, min_one_batch)
                    .map_err(|error| log_error(&error))?;
                let aborted = aborted
                    .iter()
                    .map(|txn| {
                        AbortedTransaction::default()
                            .with_producer_id(ProducerId(txn.producer_id))
                            .with_first_offset(txn.first_offset)
                    })
                    .collect();
                data.aborted_transactions = Some(aborted);
                Ok(read)
            });
            match result {
                Ok(read) => {
                    total_bytes += read.records.len();
                    data.records = Some(read.records);
                }
                Err(error) => {
                    // As Kafka: an errored partition reports no offsets.
                    any_error = true;
                    data = PartitionData::default()
                        .with_partition_index(requested.partition)
                        .with_error_code(error.code())
                        .with_high_watermark(-1)
                        .with_last_stable_offset(-1)
                        .with_log_start_offset(-1)
                        .with_records(Some(Default::default()));
                }
            }
            partitions.push(data);
        }
        let mut topic_response = FetchableTopicResponse::default().with_partitions(partitions);
        if version >= 13 {
            topic_response.topic_id = entry.request.topic_id;
        } else {
            topic_response.topic = entry.request.topic.clone();
        }
        topics.push(topic_response);
    }
    (
        FetchResponse::default().with_responses(topics),
        total_bytes,
        any_error,
    )
}

fn record_metrics(context: &Arc<BrokerContext>, response: &FetchResponse) {
    for topic in &response.responses {
        let name = if topic.topic.is_empty() {
            context
                .topics
                .get_by_id(topic.topic_id)
                .map(|t| t.name.to_string())
                .unwrap_or_default()
        } else {
            topic.topic.to_string()
        };
        let mut bytes = 0u64;
        let mut records = 0u64;
        for partition in &topic.partitions {
            if let Some(data) = &partition.records {
                bytes += data.len() as u64;
                records += BatchIter::new(data)
                    .filter_map(Result::ok)
                    .map(|(_, h)| h.records_count.max(0) as u64)
                    .sum::<u64>();
            }
        }
        if bytes > 0 {
            context
                .metrics
                .bytes_out_total
                .with_label_values(&[&name])
                .inc_by(bytes);
            context
                .metrics
                .records_out_total
                .with_label_values(&[&name])
                .inc_by(records);
        }
    }
}
