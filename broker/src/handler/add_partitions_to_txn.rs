//! AddPartitionsToTxn: partitions join the producer's open transaction. v0–v3 carry one
//! transaction; v4 a batch, each either adding or (`verify_only`, KIP-890) checking membership.
//! Authorization as Kafka's: v4 (brokers') needs CLUSTER_ACTION; each transaction WRITE on its
//! id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED throughout) and on each topic (else
//! TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED, and nothing is added).

use std::sync::Arc;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::handler::errors::fenced_for_version;
use crate::security::acl::Operation;
use crate::transaction::state::TopicPartition;
use crate::transaction::verify::{self, TxnWrite};

/// The first version whose clients know PRODUCER_FENCED (KIP-588).
const PRODUCER_FENCED_VERSION: i16 = 2;

pub async fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    if version <= 3 {
        let write = TxnWrite {
            transactional_id: request.v3_and_below_transactional_id.as_str(),
            producer_id: request.v3_and_below_producer_id.0,
            producer_epoch: request.v3_and_below_producer_epoch,
            adds_partition: true,
        };
        let mut results = add(context, access, &write, &request.v3_and_below_topics).await;
        if version < PRODUCER_FENCED_VERSION {
            for partition in results.iter_mut().flat_map(|t| &mut t.results_by_partition) {
                if let Some(error) = ResponseError::try_from_code(partition.partition_error_code) {
                    partition.partition_error_code =
                        fenced_for_version(error, version, PRODUCER_FENCED_VERSION).code();
                }
            }
        }
        return AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results);
    }
    if !access.allows_cluster(Operation::ClusterAction) {
        return AddPartitionsToTxnResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let mut results = Vec::with_capacity(request.transactions.len());
    for txn in &request.transactions {
        let write = TxnWrite {
            transactional_id: txn.transactional_id.as_str(),
            producer_id: txn.producer_id.0,
            producer_epoch: txn.producer_epoch,
            adds_partition: !txn.verify_only,
        };
        let topics = add(context, access, &write, &txn.topics).await;
        results.push(
            AddPartitionsToTxnResult::default()
                .with_transactional_id(txn.transactional_id.clone())
                .with_topic_results(topics),
        );
    }
    AddPartitionsToTxnResponse::default().with_results_by_transaction(results)
}

/// Each partition's error when the principal may not write the transaction or one of its
/// topics; `None` when it may write them all.
fn refusals(
    access: &Access,
    transactional_id: &str,
    partitions: &[TopicPartition],
) -> Option<Vec<(TopicPartition, Option<ResponseError>)>> {
    let every = |error: &dyn Fn(&str) -> ResponseError| {
        partitions
            .iter()
            .map(|(topic, index)| ((topic.clone(), *index), Some(error(topic))))
            .collect()
    };
    if !access.allows_transactional_id(Operation::Write, transactional_id) {
        return Some(every(&|_| {
            ResponseError::TransactionalIdAuthorizationFailed
        }));
    }
    let writable = |topic: &str| access.allows_topic(Operation::Write, topic);
    if partitions.iter().all(|(topic, _)| writable(topic)) {
        return None;
    }
    Some(every(&|topic| match writable(topic) {
        true => ResponseError::OperationNotAttempted,
        false => ResponseError::TopicAuthorizationFailed,
    }))
}

/// Adds (or, `verify_only`, checks) the partitions of one transaction coordinated here.
async fn add(
    context: &Arc<BrokerContext>,
    access: &Access,
    write: &TxnWrite<'_>,
    topics: &[AddPartitionsToTxnTopic],
) -> Vec<AddPartitionsToTxnTopicResult> {
    let partitions: Vec<TopicPartition> = topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.name.to_string(), *p)))
        .collect();
    let outcome = match refusals(access, write.transactional_id, &partitions) {
        Some(refused) => refused,
        None => {
            let services = context.txn_services();
            verify::check_here(&context.transactions, &services, write, partitions).await
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
