//! Transactional writes checked with their transaction's coordinator (KIP-890 part 1), wherever
//! it runs: a partition leader accepts a transactional batch only if the producer's open
//! transaction holds the partition — or, with transaction version 2, after adding it there.
//!
//! The coordinator of a transactional id leads the id's `__transaction_state` partition. Here,
//! it is asked directly; on another broker, with AddPartitionsToTxn v5 (one transaction,
//! `verify_only` unless adding), as Kafka's brokers do.
//!
//! Answers are Kafka error codes per partition, since a remote coordinator answers in codes;
//! a local refusal ([`crate::transaction::TxnError`]) is put in the same terms through its one
//! mapping (`handler::errors`).

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::NO_LEADER;
use crate::group::offsets;
use crate::transaction::coordinator::{TransactionCoordinator, TxnServices};
use crate::transaction::markers::MARKER_WRITE_TIMEOUT;
use crate::transaction::records::TRANSACTION_STATE_TOPIC;
use crate::transaction::state::TopicPartition;

/// The AddPartitionsToTxn version brokers send each other.
const BROKER_ADD_PARTITIONS_VERSION: i16 = 5;

/// A transactional write to check: who writes, and where.
pub struct TxnWrite<'a> {
    pub transactional_id: &'a str,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Transaction version 2: the write adds its partition to the transaction.
    pub adds_partition: bool,
}

/// Whether the writes of `write` to `partitions` belong to its open transaction (after adding
/// them, with `adds_partition`): the error of each partition that does not.
pub async fn check(
    coordinator: &TransactionCoordinator,
    services: &TxnServices<'_>,
    write: &TxnWrite<'_>,
    partitions: Vec<TopicPartition>,
) -> Vec<(TopicPartition, Option<ResponseError>)> {
    match coordinator_of(services, write.transactional_id) {
        Ok(None) => check_here(coordinator, services, write, partitions).await,
        Ok(Some(broker_id)) => check_remotely(services, broker_id, write, partitions).await,
        Err(error) => partitions.into_iter().map(|tp| (tp, Some(error))).collect(),
    }
}

/// The broker coordinating `transactional_id` (`None`: this one).
fn coordinator_of(
    services: &TxnServices<'_>,
    transactional_id: &str,
) -> Result<Option<i32>, ResponseError> {
    let Some(image) = services.channel.image() else {
        return Ok(None);
    };
    let topic = image
        .topic_by_name(TRANSACTION_STATE_TOPIC)
        .ok_or(ResponseError::CoordinatorNotAvailable)?;
    let index = offsets::partition_for(transactional_id, topic.partitions.len() as i32);
    let leader = topic
        .partitions
        .get(index as usize)
        .map_or(NO_LEADER, |state| state.leader);
    match leader {
        NO_LEADER => Err(ResponseError::CoordinatorNotAvailable),
        leader if leader == services.channel.node_id() => Ok(None),
        leader => Ok(Some(leader)),
    }
}

/// [`check`] for a transaction coordinated here (NOT_COORDINATOR otherwise); also the
/// AddPartitionsToTxn handler's work.
pub async fn check_here(
    coordinator: &TransactionCoordinator,
    services: &TxnServices<'_>,
    write: &TxnWrite<'_>,
    partitions: Vec<TopicPartition>,
) -> Vec<(TopicPartition, Option<ResponseError>)> {
    if write.adds_partition {
        let added = coordinator
            .add_partitions(
                services,
                write.transactional_id,
                write.producer_id,
                write.producer_epoch,
                partitions.clone(),
            )
            .await;
        return match added {
            Ok(outcome) => outcome
                .into_iter()
                .map(|(tp, error)| (tp, error.map(ResponseError::from)))
                .collect(),
            Err(error) => all_refused(partitions, error.into()),
        };
    }
    if let Some(error) = coordinator.coordinator_error(services.topics, write.transactional_id) {
        return all_refused(partitions, error.into());
    }
    partitions
        .into_iter()
        .map(|tp| {
            let verified = coordinator.verify(
                write.transactional_id,
                write.producer_id,
                write.producer_epoch,
                &tp,
            );
            (tp, verified.err().map(ResponseError::from))
        })
        .collect()
}

fn all_refused(
    partitions: Vec<TopicPartition>,
    error: ResponseError,
) -> Vec<(TopicPartition, Option<ResponseError>)> {
    partitions.into_iter().map(|tp| (tp, Some(error))).collect()
}

async fn check_remotely(
    services: &TxnServices<'_>,
    broker_id: i32,
    write: &TxnWrite<'_>,
    partitions: Vec<TopicPartition>,
) -> Vec<(TopicPartition, Option<ResponseError>)> {
    let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
    for (topic, index) in &partitions {
        match topics.iter_mut().find(|t| t.name.as_str() == topic) {
            Some(existing) => existing.partitions.push(*index),
            None => topics.push(
                AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.clone())))
                    .with_partitions(vec![*index]),
            ),
        }
    }
    let transaction = AddPartitionsToTxnTransaction::default()
        .with_transactional_id(TransactionalId(StrBytes::from_string(
            write.transactional_id.to_string(),
        )))
        .with_producer_id(ProducerId(write.producer_id))
        .with_producer_epoch(write.producer_epoch)
        .with_verify_only(!write.adds_partition)
        .with_topics(topics);
    let request = AddPartitionsToTxnRequest::default().with_transactions(vec![transaction]);
    let response = services
        .channel
        .call(
            broker_id,
            BROKER_ADD_PARTITIONS_VERSION,
            &request,
            MARKER_WRITE_TIMEOUT,
        )
        .await;
    let response = match response {
        Ok(response) => response,
        Err(error) => return partitions.into_iter().map(|tp| (tp, Some(error))).collect(),
    };
    if let Some(error) = ResponseError::try_from_code(response.error_code) {
        return partitions.into_iter().map(|tp| (tp, Some(error))).collect();
    }
    let answered: Vec<(TopicPartition, i16)> = response
        .results_by_transaction
        .iter()
        .flat_map(|txn| txn.topic_results.iter())
        .flat_map(|topic| {
            topic.results_by_partition.iter().map(|p| {
                (
                    (topic.name.to_string(), p.partition_index),
                    p.partition_error_code,
                )
            })
        })
        .collect();
    partitions
        .into_iter()
        .map(|tp| {
            let error = match answered.iter().find(|(answered, _)| *answered == tp) {
                Some((_, code)) => ResponseError::try_from_code(*code),
                None => Some(ResponseError::UnknownServerError),
            };
            (tp, error)
        })
        .collect()
}
