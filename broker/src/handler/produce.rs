//! Produce: validate each partition's batch, append it, and answer after the acks ask for.
//!
//! Appends happen in request order (the connection handles one request at a time). With
//! `flush.on.ack`, the answer waits for a group-commit fsync; with `acks=all` on a replicated
//! partition, for every in-sync replica to hold the batch (the high watermark passing it) —
//! both as a deferred response, so the connection can take the next request meanwhile. The wait
//! for replicas ends with REQUEST_TIMED_OUT after the request's `timeout_ms`; `acks=all` is
//! refused up front with NOT_ENOUGH_REPLICAS while the ISR is smaller than
//! `min.insync.replicas`.
//!
//! Authorization as Kafka's: a transactional request needs WRITE on its transactional id (else
//! every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED), each topic WRITE (else
//! TOPIC_AUTHORIZATION_FAILED, before the topic is looked up); nothing unauthorized is appended.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::BytesMut;
use futures::FutureExt;
use kafka_protocol::messages::produce_request::PartitionProduceData;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::config::{LogConfig, MAX_DECOMPRESSED_BATCH_BYTES};
use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::handler::access::Access;
use crate::handler::errors::{batch_error, error_for, log_error};
use crate::handler::produce_txn::{self, TxnChecks};
use crate::handler::{HandlerOutput, RequestOrigin};
use crate::log::batch::{validate_producer_batch, ValidatedBatch, ValidationLimits};
use crate::log::error::{BatchError, LogError};
use crate::log::recompress::to_topic_compression;
use crate::partition::Partition;
use crate::security::acl::Operation;
use crate::topic::Topic;

/// The transactional side of a produce request, and its acks.
struct Sender<'a> {
    transactional_id: Option<&'a str>,
    /// What the coordinators said of the transactional batches' partitions.
    txn_checks: TxnChecks,
    acks_all: bool,
}

/// What an answer waits for after a partition's append.
struct AckWait {
    partition: Arc<Partition>,
    last_offset: i64,
    /// fsynced (`flush.on.ack`).
    durable: bool,
    /// Held by the whole ISR (`acks=all`), which must still have `min.insync.replicas`.
    replicated_with_min_insync: Option<usize>,
}

pub async fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    origin: &RequestOrigin<'_>,
    request: ProduceRequest,
) -> HandlerOutput {
    // As in Kafka, only its admin tools (this client id) may append to internal topics.
    let internal_allowed = origin.client_id == ADMIN_CLIENT_ID;
    let acks = request.acks;
    let valid_acks = matches!(acks, -1..=1);
    // Kafka refuses the whole request when its transactional id may not be written.
    let transactional_id_allowed = request
        .transactional_id
        .as_deref()
        .is_none_or(|id| access.allows_transactional_id(Operation::Write, id));
    let txn_checks = match valid_acks && transactional_id_allowed {
        true => produce_txn::check_request(context, version, &request).await,
        false => TxnChecks::default(),
    };
    let sender = Sender {
        transactional_id: request.transactional_id.as_deref().map(|id| id.as_str()),
        txn_checks,
        acks_all: acks == -1,
    };
    let timeout = std::time::Duration::from_millis(request.timeout_ms.max(0) as u64);
    let mut waits: Vec<(usize, usize, AckWait)> = Vec::new();
    let mut responses = Vec::with_capacity(request.topic_data.len());
    for (topic_index, topic_data) in request.topic_data.into_iter().enumerate() {
        let name = topic_data.name.as_str();
        let topic = if !transactional_id_allowed {
            Err(ResponseError::TransactionalIdAuthorizationFailed)
        } else if !access.allows_topic(Operation::Write, name) {
            Err(ResponseError::TopicAuthorizationFailed)
        } else if crate::topic::is_internal(name) && !internal_allowed {
            Err(ResponseError::InvalidTopicException)
        } else {
            lookup_topic(context, name)
        };
        let mut partition_responses = Vec::with_capacity(topic_data.partition_data.len());
        for (partition_slot, data) in topic_data.partition_data.into_iter().enumerate() {
            let index = data.index;
            let response = if !valid_acks {
                failed(index, ResponseError::InvalidRequiredAcks, None)
            } else {
                match &topic {
                    Ok(topic) => {
                        let (response, wait) = produce_partition(context, topic, data, &sender);
                        if let Some(wait) = wait {
                            waits.push((topic_index, partition_slot, wait));
                        }
                        response
                    }
                    Err(error) => failed(index, *error, None),
                }
            };
            partition_responses.push(response);
        }
        responses.push(
            TopicProduceResponse::default()
                .with_name(topic_data.name)
                .with_partition_responses(partition_responses),
        );
    }
    if acks == 0 {
        return HandlerOutput::None;
    }
    let response = ProduceResponse::default().with_responses(responses);
    if waits.is_empty() {
        return HandlerOutput::Ready(Box::new(ResponseKind::Produce(response)));
    }
    HandlerOutput::Deferred(
        async move {
            let mut response = response;
            let deadline = tokio::time::Instant::now() + timeout;
            for (topic_slot, partition_slot, wait) in waits {
                if let Err((error, message)) = wait_for_acks(&wait, deadline).await {
                    let slot =
                        &mut response.responses[topic_slot].partition_responses[partition_slot];
                    *slot = failed(slot.index, error, Some(message));
                }
            }
            ResponseKind::Produce(response)
        }
        .boxed(),
    )
}

async fn wait_for_acks(
    wait: &AckWait,
    deadline: tokio::time::Instant,
) -> Result<(), (ResponseError, String)> {
    let partition = &wait.partition;
    if wait.durable {
        if let Err(error) = partition.wait_durable(wait.last_offset).await {
            tracing::error!(%error, topic = %partition.topic, partition = partition.index, "fsync failed");
            return Err((log_error(&error), error.to_string()));
        }
    }
    let Some(min_insync_replicas) = wait.replicated_with_min_insync else {
        return Ok(());
    };
    let replicated = partition.wait_replicated(wait.last_offset, min_insync_replicas);
    match tokio::time::timeout_at(deadline, replicated).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err((
            error.into(),
            format!(
                "{}-{}: offset {} was not replicated: {error}",
                partition.topic, partition.index, wait.last_offset,
            ),
        )),
        Err(_) => Err((
            ResponseError::RequestTimedOut,
            format!(
                "{}-{}: the in-sync replicas did not copy offset {} in time",
                partition.topic, partition.index, wait.last_offset
            ),
        )),
    }
}

/// The client id Kafka's own admin tools send; the only one allowed to append to internal topics.
const ADMIN_CLIENT_ID: &str = "__admin_client";

fn lookup_topic(context: &Arc<BrokerContext>, name: &str) -> Result<Arc<Topic>, ResponseError> {
    if let Some(topic) = context.topics.get(name) {
        return Ok(topic);
    }
    // In a cluster topics are created by the controller (Metadata asks for auto-creation).
    if !context.config().auto_create_topics_enable() || context.cluster.is_some() {
        return Err(ResponseError::UnknownTopicOrPartition);
    }
    match context.topics.create(name, -1, -1, BTreeMap::new()) {
        Ok(topic) => Ok(topic),
        Err(BrokerError::TopicAlreadyExists { .. }) => context
            .topics
            .get(name)
            .ok_or(ResponseError::UnknownTopicOrPartition),
        Err(error) => Err(error_for(&error)),
    }
}

/// KIP-890: a transactional write lands only in an open transaction that holds its partition —
/// added before (AddPartitionsToTxn), or now by the write itself (transaction version 2) — so
/// no stray or late write can leave a transaction hanging or slip into the next one. The
/// coordinator was asked before the appends (`produce_txn::check_request`).
fn check_transaction(
    context: &BrokerContext,
    sender: &Sender<'_>,
    header: &crate::log::batch::BatchHeader,
    topic: &Topic,
    index: i32,
) -> Result<(), (ResponseError, String)> {
    // As Kafka: transactional records come with the request's transactional id.
    if sender.transactional_id.is_none() {
        let message = "transactional records need the request's transactional id";
        return Err((
            ResponseError::TransactionalIdAuthorizationFailed,
            message.into(),
        ));
    }
    sender
        .txn_checks
        .verdict(context, header, &topic.name, index)
}

/// The batch as the topic stores it: recompressed to the topic's `compression.type` (and then
/// within `max.message.bytes` again, as Kafka checks), or as it came.
fn stored_batch(
    topic: &Topic,
    records: &[u8],
    validated: &ValidatedBatch,
) -> Result<BytesMut, (ResponseError, String)> {
    match to_topic_compression(records, validated, topic.config.compression) {
        Ok(None) => Ok(BytesMut::from(records)),
        Ok(Some(stored)) if stored.len() > topic.config.max_message_bytes => {
            let error = BatchError::TooLarge {
                size: stored.len(),
                max: topic.config.max_message_bytes,
            };
            let message = format!("recompressed to the topic's compression.type: {error}");
            Err((batch_error(&error), message))
        }
        Ok(Some(stored)) => Ok(stored),
        Err(error) => Err((batch_error(&error), error.to_string())),
    }
}

fn produce_partition(
    context: &Arc<BrokerContext>,
    topic: &Arc<Topic>,
    data: PartitionProduceData,
    sender: &Sender<'_>,
) -> (PartitionProduceResponse, Option<AckWait>) {
    match accept(context, topic, data, sender) {
        Ok(accepted) => append(context, topic, sender, accepted),
        Err(refused) => (*refused, None),
    }
}

/// A batch that passed a partition's checks, ready to append.
struct Accepted<'a> {
    partition: &'a Arc<Partition>,
    /// As stored: recompressed to the topic's compression.type if that differs.
    stored: BytesMut,
    /// As produced.
    bytes: usize,
    records: u64,
}

/// One partition's checks in Kafka's order: led here, a valid batch (keys on a compacted
/// topic), no control batch, the transaction's partition, min.insync.replicas for acks=all.
fn accept<'a>(
    context: &Arc<BrokerContext>,
    topic: &'a Arc<Topic>,
    data: PartitionProduceData,
    sender: &Sender<'_>,
) -> Result<Accepted<'a>, Box<PartitionProduceResponse>> {
    let index = data.index;
    let partition = crate::handler::led_partition(topic, index)
        .map_err(|error| Box::new(failed(index, error, None)))?;
    let Some(records) = data.records else {
        let error = BatchError::InvalidRecords("no records".into());
        return Err(Box::new(failed(
            index,
            batch_error(&error),
            Some(error.to_string()),
        )));
    };
    let limits = ValidationLimits {
        max_batch_bytes: topic.config.max_message_bytes,
        max_decompressed_bytes: MAX_DECOMPRESSED_BATCH_BYTES,
        require_keys: topic.config.compact,
        timestamp_bounds_ms: timestamp_bounds_ms(&topic.config, context.clock.now_ms()),
    };
    let validated = match validate_producer_batch(&records, &limits) {
        Ok(validated) => validated,
        Err(BatchError::MissingKey { record_indexes }) => {
            return Err(Box::new(missing_keys(topic, partition, &record_indexes)));
        }
        Err(BatchError::TimestampsOutOfRange { record_errors }) => {
            return Err(Box::new(timestamps_out_of_range(partition, record_errors)));
        }
        Err(error) => {
            tracing::debug!(topic = %topic.name, partition = index, %error, "rejected batch");
            return Err(Box::new(failed(
                index,
                batch_error(&error),
                Some(error.to_string()),
            )));
        }
    };
    if validated.header.is_control() {
        let message = "control batches (transaction markers) are not accepted from clients";
        return Err(Box::new(failed(
            index,
            ResponseError::InvalidRecord,
            Some(message.into()),
        )));
    }
    if validated.header.is_transactional() {
        let header = &validated.header;
        check_transaction(context, sender, header, topic, index)
            .map_err(|(error, message)| Box::new(failed(index, error, Some(message))))?;
    }
    if sender.acks_all {
        if let Err(error) = partition.check_min_insync(topic.config.min_insync_replicas) {
            let message = format!("{}-{index}: {error}", topic.name);
            return Err(Box::new(failed(
                index,
                ResponseError::NotEnoughReplicas,
                Some(message),
            )));
        }
    }
    let stored = stored_batch(topic, &records, &validated)
        .map_err(|(error, message)| Box::new(failed(index, error, Some(message))))?;
    Ok(Accepted {
        partition,
        stored,
        bytes: records.len(),
        records: validated.records_count as u64,
    })
}

/// Appends an accepted batch: the answer, and what it waits for (an fsync with
/// `flush.on.ack`, the in-sync replicas for acks=all).
fn append(
    context: &Arc<BrokerContext>,
    topic: &Arc<Topic>,
    sender: &Sender<'_>,
    accepted: Accepted<'_>,
) -> (PartitionProduceResponse, Option<AckWait>) {
    let partition = accepted.partition;
    let index = partition.index;
    match partition.append(accepted.stored) {
        Ok(info) => {
            if info.duplicate {
                tracing::debug!(topic = %topic.name, partition = index, base_offset = info.base_offset, "duplicate batch from an idempotent producer");
            } else {
                let labels = [&*topic.name];
                let metrics = &context.metrics;
                metrics
                    .bytes_in_total
                    .with_label_values(&labels)
                    .inc_by(accepted.bytes as u64);
                metrics
                    .records_in_total
                    .with_label_values(&labels)
                    .inc_by(accepted.records);
            }
            let response = PartitionProduceResponse::default()
                .with_index(index)
                .with_base_offset(info.base_offset)
                .with_log_append_time_ms(info.log_append_time_ms)
                .with_log_start_offset(info.log_start_offset);
            let durable = topic.config.flush_on_ack;
            let replicate = sender.acks_all && partition.high_watermark() <= info.last_offset;
            let wait = (durable || replicate).then(|| AckWait {
                partition: Arc::clone(partition),
                last_offset: info.last_offset,
                durable,
                replicated_with_min_insync: replicate.then_some(topic.config.min_insync_replicas),
            });
            (response, wait)
        }
        Err(LogError::Producer(error)) => {
            // Kafka reports the log start offset with producer-state errors.
            tracing::debug!(topic = %topic.name, partition = index, %error, "refused producer batch");
            let code = log_error(&LogError::Producer(error.clone()));
            let response = failed(index, code, Some(error.to_string()))
                .with_log_start_offset(partition.offsets().log_start_offset);
            (response, None)
        }
        Err(error) => {
            tracing::error!(topic = %topic.name, partition = index, %error, "append failed");
            (
                failed(index, log_error(&error), Some(error.to_string())),
                None,
            )
        }
    }
}

/// Kafka answers record-level validation errors with one entry per bad record (v8+) and the
/// partition's log start offset.
fn missing_keys(
    topic: &Topic,
    partition: &Partition,
    record_indexes: &[i32],
) -> PartitionProduceResponse {
    let message = format!(
        "Compacted topic cannot accept message without key in topic partition {}-{}.",
        topic.name, partition.index
    );
    let summary = format!(
        "One or more records have been rejected due to {} record errors in total, and only \
         showing the first error in the error message: {message}",
        record_indexes.len()
    );
    let errors = record_indexes.iter().map(|&index| (index, message.clone()));
    rejected_records(partition, ResponseError::InvalidRecord, summary, errors)
}

/// The record timestamps a producer batch may carry at `now_ms` (KIP-937's
/// `message.timestamp.before.max.ms` and `after.max.ms`), `None` on a LogAppendTime topic (the
/// broker stamps those).
fn timestamp_bounds_ms(config: &LogConfig, now_ms: i64) -> Option<(i64, i64)> {
    (!config.log_append_time).then(|| {
        (
            now_ms.saturating_sub(config.timestamp_before_max_ms),
            now_ms.saturating_add(config.timestamp_after_max_ms),
        )
    })
}

/// Kafka's answer when CreateTime records are out of `message.timestamp.*.max.ms`.
fn timestamps_out_of_range(
    partition: &Partition,
    record_errors: Vec<(i32, String)>,
) -> PartitionProduceResponse {
    let summary = "One or more records have been rejected due to invalid timestamp".to_string();
    let error = ResponseError::InvalidTimestamp;
    rejected_records(partition, error, summary, record_errors.into_iter())
}

fn rejected_records(
    partition: &Partition,
    error: ResponseError,
    summary: String,
    errors: impl Iterator<Item = (i32, String)>,
) -> PartitionProduceResponse {
    let record_errors = errors
        .map(|(batch_index, message)| {
            BatchIndexAndErrorMessage::default()
                .with_batch_index(batch_index)
                .with_batch_index_error_message(Some(StrBytes::from_string(message)))
        })
        .collect();
    failed(partition.index, error, Some(summary))
        .with_log_start_offset(partition.offsets().log_start_offset)
        .with_record_errors(record_errors)
}

fn failed(index: i32, error: ResponseError, message: Option<String>) -> PartitionProduceResponse {
    PartitionProduceResponse::default()
        .with_index(index)
        .with_error_code(error.code())
        .with_base_offset(-1)
        .with_log_append_time_ms(-1)
        .with_log_start_offset(-1)
        .with_error_message(message.map(StrBytes::from_string))
}
