//! AddPartitionsToTxn: partitions join the producer's open transaction. v0–v3 carry one
//! transaction; v4 a batch, each either adding or (`verify_only`, KIP-890) checking membership.

use std::sync::Arc;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::server::BrokerContext;
use crate::transaction::state::TopicPartition;

pub fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    if version <= 3 {
        let results = add(
            context,
            request.v3_and_below_transactional_id.as_str(),
            request.v3_and_below_producer_id.0,
            request.v3_and_below_producer_epoch,
            &request.v3_and_below_topics,
            false,
        );
        return AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results);
    }
    let results = request
        .transactions
        .iter()
        .map(|txn| {
            let topics = add(
                context,
                txn.transactional_id.as_str(),
                txn.producer_id.0,
                txn.producer_epoch,
                &txn.topics,
                txn.verify_only,
            );
            AddPartitionsToTxnResult::default()
                .with_transactional_id(txn.transactional_id.clone())
                .with_topic_results(topics)
        })
        .collect();
    AddPartitionsToTxnResponse::default().with_results_by_transaction(results)
}

fn add(
    context: &Arc<BrokerContext>,
    transactional_id: &str,
    producer_id: i64,
    epoch: i16,
    topics: &[AddPartitionsToTxnTopic],
    verify_only: bool,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let partitions: Vec<TopicPartition> = topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.name.to_string(), *p)))
        .collect();
    let outcome: Vec<(TopicPartition, Option<ResponseError>)> = if verify_only {
        let coordinator = &context.transactions;
        partitions
            .into_iter()
            .map(|(topic, index)| {
                let ok = coordinator.verify(producer_id, epoch, &topic, index);
                (
                    (topic, index),
                    (!ok).then_some(ResponseError::InvalidTxnState),
                )
            })
            .collect()
    } else {
        match context.transactions.add_partitions(
            &context.topics,
            transactional_id,
            producer_id,
            epoch,
            partitions.clone(),
        ) {
            Ok(outcome) => outcome,
            Err(error) => partitions.into_iter().map(|tp| (tp, Some(error))).collect(),
        }
    };
    let mut by_topic: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for ((topic, index), error) in outcome {
        let result = AddPartitionsToTxnPartitionResult::default()
            .with_partition_index(index)
            .with_partition_error_code(error.map_or(0, |e| e.code()));
        match by_topic.iter_mut().find(|t| t.name.as_str() == topic) {
            Some(existing) => existing.results_by_partition.push(result),
            None => by_topic.push(
                AddPartitionsToTxnTopicResult::default()
                    .with_name(TopicName(StrBytes::from_string(topic)))
                    .with_results_by_partition(vec![result]),
            ),
        }
    }
    by_topic
}
