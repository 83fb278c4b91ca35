//! Fetch: whole batches from each requested partition, with long polling.
//!
//! - The batch holding the fetch offset is returned whole (the client skips earlier records).
//! - The first partition with data gets at least one batch even when it exceeds `max_bytes` or
//!   `partition_max_bytes` (KIP-74); later partitions only what fits.
//! - With fewer than `min_bytes` available, the request waits up to `max_wait_ms` for any of its
//!   partitions' high watermark to move (watch channels, not sleeps), then reads again.
//! - v13+ names topics by id.
//! - Fetch sessions (KIP-227, v7+, [`crate::fetch_session`]): epoch 0 is a full fetch that
//!   creates a session, epoch -1 a sessionless one (closing the named session); later epochs
//!   name only changed and forgotten partitions and are answered with only the partitions that
//!   have news. Session errors are answered at the top level with no partitions, as Kafka does.
//! - A follower's fetch (`replica_id` set) reads up to the log end, not the high watermark,
//!   tells the leader how far the follower got (which may move the high watermark and earn it
//!   a place in the ISR), and waits for the log end to move rather than the high watermark.
//! - Authorization as Kafka's: a follower's fetch needs CLUSTER_ACTION on the cluster (else
//!   every partition is TOPIC_AUTHORIZATION_FAILED and nothing moves), a consumer's READ on each
//!   topic (an unknown topic id stays UNKNOWN_TOPIC_ID; an unknown name the principal may not
//!   read is TOPIC_AUTHORIZATION_FAILED, so existence does not leak).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::select_all;
use futures::FutureExt;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ProducerId, TopicName};
use kafka_protocol::ResponseError;
use tokio::sync::watch;

use crate::context::BrokerContext;
use crate::fetch_session::{
    FetchTarget, IncrementalRead, PartitionOutcome, Reported, SessionError, SessionRequest,
    TopicKey, FINAL_EPOCH, INITIAL_EPOCH, NO_SESSION,
};
use crate::handler::access::Access;
use crate::handler::errors::log_error;
use crate::log::batch::BatchIter;
use crate::partition::Partition;
use crate::security::acl::Operation;
use crate::topic::Topic;

/// Isolation level READ_COMMITTED.
const READ_COMMITTED: i8 = 1;

/// What a fetch reads, and what its answer does to fetch sessions.
enum Plan {
    /// Every requested partition, answered in full; no session (v6-, or epoch -1).
    Sessionless(Vec<FetchTarget>),
    /// Every requested partition, answered in full; a session is created for them.
    Full(Vec<FetchTarget>),
    /// The session's partitions; only those with news are answered.
    Incremental(IncrementalRead),
}

impl Plan {
    fn targets(&self) -> Vec<&FetchTarget> {
        match self {
            Plan::Sessionless(targets) | Plan::Full(targets) => targets.iter().collect(),
            Plan::Incremental(read) => read.targets.iter().map(|(target, _)| target).collect(),
        }
    }
}

/// A topic named by the fetch, looked up once.
struct ResolvedTopic {
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
    let follower = (request.replica_id.0 >= 0).then_some(request.replica_id.0);
    let plan = match plan(context, version, &request) {
        Ok(plan) => plan,
        Err(error) => {
            tracing::debug!(%error, "fetch session refused");
            let code = match error {
                SessionError::NotFound(_) => ResponseError::FetchSessionIdNotFound,
                SessionError::InvalidEpoch { .. } => ResponseError::InvalidFetchSessionEpoch,
                SessionError::TopicIdMismatch(_) => ResponseError::FetchSessionTopicIdError,
            };
            return FetchResponse::default()
                .with_error_code(code.code())
                .with_session_id(NO_SESSION);
        }
    };
    let targets = plan.targets();
    let resolved = resolve_topics(context, access, follower, &targets);
    let partitions: Vec<Arc<Partition>> = targets
        .iter()
        .filter_map(|target| {
            let topic = resolved.get(&target.topic)?.topic.as_ref()?;
            topic.partition(target.partition).cloned()
        })
        .collect();
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
    let reads = loop {
        let reads = read_all(context, version, &request, &targets, &resolved, follower);
        let done = reads.bytes >= request.min_bytes.max(0) as usize
            || reads.any_error
            || watchers.is_empty()
            || tokio::time::Instant::now() >= deadline;
        if done {
            break reads;
        }
        let changed = select_all(watchers.iter_mut().map(|w| w.changed().boxed()));
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            break read_all(context, version, &request, &targets, &resolved, follower);
        }
        for watcher in &mut watchers {
            watcher.borrow_and_update();
        }
    };
    let response = answer(
        context,
        &request,
        version,
        follower,
        &plan,
        reads.partitions,
    );
    if follower.is_none() {
        record_metrics(context, &response);
    }
    response
}

/// Kafka's `FetchManager.newContext`: which partitions this fetch reads, from the request or
/// from its session.
fn plan(
    context: &BrokerContext,
    version: i16,
    request: &FetchRequest,
) -> Result<Plan, SessionError> {
    let requested = requested_targets(version, request);
    if version < 7 {
        return Ok(Plan::Sessionless(requested));
    }
    let sessions = &context.fetch_sessions;
    if request.session_epoch == INITIAL_EPOCH || request.session_epoch == FINAL_EPOCH {
        // A full fetch closes the session it names, and starts a new one unless at epoch -1.
        // (librdkafka's fetches name no session: nothing to remove, no lock for the metrics.)
        if sessions.remove(request.session_id) {
            update_session_metrics(context);
        }
        return Ok(match request.session_epoch {
            FINAL_EPOCH => Plan::Sessionless(requested),
            _ => Plan::Full(requested),
        });
    }
    let forgotten: Vec<(TopicKey, i32)> = request
        .forgotten_topics_data
        .iter()
        .flat_map(|topic| {
            let key = topic_key(version, topic.topic_id, &topic.topic);
            topic.partitions.iter().map(move |p| (key.clone(), *p))
        })
        .collect();
    let session = session_request(version, request);
    let now_ms = context.clock.now_ms();
    let updated = sessions.update(session, requested.clone(), &forgotten, now_ms);
    update_session_metrics(context);
    Ok(match updated? {
        Some(read) => Plan::Incremental(read),
        None => Plan::Sessionless(requested),
    })
}

fn session_request(version: i16, request: &FetchRequest) -> SessionRequest {
    SessionRequest {
        session_id: request.session_id,
        epoch: request.session_epoch,
        uses_topic_ids: version >= 13,
        privileged: request.replica_id.0 >= 0,
    }
}

fn topic_key(version: i16, id: uuid::Uuid, name: &TopicName) -> TopicKey {
    match version >= 13 {
        true => TopicKey::Id(id),
        false => TopicKey::Name(name.0.clone()),
    }
}

/// The request's partitions, in its order.
fn requested_targets(version: i16, request: &FetchRequest) -> Vec<FetchTarget> {
    request
        .topics
        .iter()
        .flat_map(|topic| {
            let key = topic_key(version, topic.topic_id, &topic.topic);
            topic.partitions.iter().map(move |p| FetchTarget {
                topic: key.clone(),
                partition: p.partition,
                fetch_offset: p.fetch_offset,
                partition_max_bytes: p.partition_max_bytes,
                current_leader_epoch: p.current_leader_epoch,
            })
        })
        .collect()
}

/// Looks up each topic the targets name once, with the principal's right to read it.
fn resolve_topics(
    context: &BrokerContext,
    access: &Access,
    follower: Option<i32>,
    targets: &[&FetchTarget],
) -> HashMap<TopicKey, ResolvedTopic> {
    let follower_allowed = follower.is_some() && access.allows_cluster(Operation::ClusterAction);
    let mut resolved: HashMap<TopicKey, ResolvedTopic> = HashMap::new();
    for target in targets {
        if resolved.contains_key(&target.topic) {
            continue;
        }
        let topic = match &target.topic {
            TopicKey::Id(id) => context.topics.get_by_id(*id),
            TopicKey::Name(name) => context.topics.get(name.as_str()),
        };
        let authorized = match (follower.is_some(), &topic, &target.topic) {
            (true, _, _) => follower_allowed,
            (false, Some(topic), _) => access.allows_topic(Operation::Read, &topic.name),
            (false, None, TopicKey::Name(name)) => access.allows_topic(Operation::Read, name),
            (false, None, TopicKey::Id(_)) => true,
        };
        let entry = ResolvedTopic {
            topic: topic.filter(|_| authorized),
            authorized,
        };
        resolved.insert(target.topic.clone(), entry);
    }
    resolved
}

/// One pass over every target.
struct Reads {
    /// In the targets' order.
    partitions: Vec<PartitionData>,
    /// Record bytes read.
    bytes: usize,
    any_error: bool,
}

/// Reads every target once.
fn read_all(
    context: &Arc<BrokerContext>,
    version: i16,
    request: &FetchRequest,
    targets: &[&FetchTarget],
    resolved: &HashMap<TopicKey, ResolvedTopic>,
    follower: Option<i32>,
) -> Reads {
    let response_max = if version >= 3 {
        request
            .max_bytes
            .clamp(0, context.config().fetch_max_bytes()) as usize
    } else {
        usize::MAX
    };
    let read_committed = request.isolation_level == READ_COMMITTED;
    let mut reads = Reads {
        partitions: Vec::with_capacity(targets.len()),
        bytes: 0,
        any_error: false,
    };
    for target in targets {
        let entry = &resolved[&target.topic];
        let remaining = response_max.saturating_sub(reads.bytes);
        let read = ReadOne {
            context,
            version,
            follower,
            read_committed,
            limit: (target.partition_max_bytes.max(0) as usize).min(remaining),
            min_one_batch: reads.bytes == 0,
        };
        let data = read.partition(entry, target);
        match data.error_code {
            0 => reads.bytes += data.records.as_ref().map_or(0, |r| r.len()),
            _ => reads.any_error = true,
        }
        reads.partitions.push(data);
    }
    reads
}

/// How one partition is read.
struct ReadOne<'a> {
    context: &'a Arc<BrokerContext>,
    version: i16,
    follower: Option<i32>,
    read_committed: bool,
    limit: usize,
    min_one_batch: bool,
}

impl ReadOne<'_> {
    fn partition(&self, entry: &ResolvedTopic, target: &FetchTarget) -> PartitionData {
        let mut data = PartitionData::default()
            .with_partition_index(target.partition)
            .with_high_watermark(-1)
            .with_last_stable_offset(-1)
            .with_log_start_offset(-1);
        let partition = match &entry.topic {
            None if !entry.authorized => Err(ResponseError::TopicAuthorizationFailed),
            None if self.version >= 13 => Err(ResponseError::UnknownTopicId),
            None => Err(ResponseError::UnknownTopicOrPartition),
            Some(topic) => crate::handler::led_partition(topic, target.partition),
        };
        let result = partition.and_then(|partition| {
            partition.check_leader_epoch(target.current_leader_epoch)?;
            if let (Some(replica_id), Some(topic)) = (self.follower, &entry.topic) {
                if let Some(proposal) =
                    partition.follower_fetched(replica_id, target.fetch_offset)?
                {
                    crate::replication::propose_isr(
                        self.context.replication.as_ref(),
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
            self.records(partition, target.fetch_offset, &mut data)
        });
        match result {
            Ok(()) => data,
            // As Kafka: an errored partition reports no offsets.
            Err(error) => PartitionData::default()
                .with_partition_index(target.partition)
                .with_error_code(error.code())
                .with_high_watermark(-1)
                .with_last_stable_offset(-1)
                .with_log_start_offset(-1)
                .with_records(Some(Default::default())),
        }
    }

    fn records(
        &self,
        partition: &Partition,
        fetch_offset: i64,
        data: &mut PartitionData,
    ) -> Result<(), ResponseError> {
        let read = if self.follower.is_some() {
            partition.read_for_follower(fetch_offset, self.limit)
        } else if !self.read_committed {
            partition.read(fetch_offset, self.limit, self.min_one_batch)
        } else {
            let (read, aborted) = partition
                .read_committed(fetch_offset, self.limit, self.min_one_batch)
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
        };
        let read = read.map_err(|error| log_error(&error))?;
        data.records = Some(read.records);
        Ok(())
    }
}

/// The response: every partition read (sessionless, full) or those with news (incremental),
/// consecutive partitions of one topic under one topic entry as Kafka groups them; a full
/// fetch's partitions become a session here.
fn answer(
    context: &BrokerContext,
    request: &FetchRequest,
    version: i16,
    follower: Option<i32>,
    plan: &Plan,
    partitions: Vec<PartitionData>,
) -> FetchResponse {
    let outcome = |data: &PartitionData| PartitionOutcome {
        has_records: data.records.as_ref().is_some_and(|r| !r.is_empty()),
        error: data.error_code != 0,
        reported: Reported {
            high_watermark: data.high_watermark,
            log_start_offset: data.log_start_offset,
        },
    };
    let (session_id, included) = match plan {
        Plan::Sessionless(_) => (NO_SESSION, vec![true; partitions.len()]),
        Plan::Full(targets) => {
            let session = SessionRequest {
                privileged: follower.is_some(),
                ..session_request(version, request)
            };
            let cached = targets
                .iter()
                .zip(&partitions)
                .map(|(target, data)| (target.clone(), outcome(data).remembered()))
                .collect();
            let now_ms = context.clock.now_ms();
            let session_id = context.fetch_sessions.create(session, cached, now_ms);
            update_session_metrics(context);
            (session_id, vec![true; partitions.len()])
        }
        Plan::Incremental(read) => {
            let outcomes: Vec<PartitionOutcome> = partitions.iter().map(outcome).collect();
            (
                read.session_id,
                context.fetch_sessions.answered(read, &outcomes),
            )
        }
    };
    let mut topics: Vec<FetchableTopicResponse> = Vec::new();
    let mut last_key: Option<&TopicKey> = None;
    for ((target, data), include) in plan.targets().into_iter().zip(partitions).zip(included) {
        if !include {
            continue;
        }
        if last_key != Some(&target.topic) {
            let topic = match &target.topic {
                TopicKey::Id(id) => FetchableTopicResponse::default().with_topic_id(*id),
                TopicKey::Name(name) => {
                    FetchableTopicResponse::default().with_topic(TopicName(name.clone()))
                }
            };
            topics.push(topic);
            last_key = Some(&target.topic);
        }
        topics
            .last_mut()
            .expect("pushed above")
            .partitions
            .push(data);
    }
    FetchResponse::default()
        .with_session_id(session_id)
        .with_responses(topics)
}

fn update_session_metrics(context: &BrokerContext) {
    let stats = context.fetch_sessions.stats();
    let metrics = &context.metrics;
    metrics.fetch_sessions.set(stats.sessions as i64);
    metrics
        .fetch_session_partitions
        .set(stats.partitions as i64);
    let evictions = metrics.fetch_session_evictions_total.get();
    metrics
        .fetch_session_evictions_total
        .inc_by(stats.evictions.saturating_sub(evictions));
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
