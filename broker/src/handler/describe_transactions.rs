//! DescribeTransactions and ListTransactions (KIP-664): the coordinator's view of transactional
//! ids, for tools that find and abort hanging transactions.

use std::sync::Arc;

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::list_transactions_response::TransactionState as ListedState;
use kafka_protocol::messages::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ListTransactionsRequest,
    ListTransactionsResponse, ProducerId, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::security::acl::Operation;

pub fn describe(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let known = context.transactions.snapshot();
    let states = request
        .transactional_ids
        .into_iter()
        .map(|id| {
            // DESCRIBE on the id, as Kafka, and only the partitions of describable topics.
            if !access.allows_transactional_id(Operation::Describe, id.as_str()) {
                return TransactionState::default()
                    .with_transactional_id(id)
                    .with_error_code(ResponseError::TransactionalIdAuthorizationFailed.code())
                    .with_transaction_state(StrBytes::from_static_str(""));
            }
            let elsewhere = context
                .transactions
                .coordinator_error(&context.topics, id.as_str());
            if let Some(error) = elsewhere {
                return TransactionState::default()
                    .with_transactional_id(id)
                    .with_error_code(super::errors::code(Some(error)))
                    .with_transaction_state(StrBytes::from_static_str(""));
            }
            let Some(txn) = known.get(id.as_str()) else {
                return TransactionState::default()
                    .with_transactional_id(id)
                    .with_error_code(ResponseError::TransactionalIdNotFound.code())
                    .with_transaction_state(StrBytes::from_static_str(""));
            };
            let mut topics: Vec<TopicData> = Vec::new();
            for (topic, partition) in &txn.partitions {
                if !access.allows_topic(Operation::Describe, topic) {
                    continue;
                }
                match topics.iter_mut().find(|t| t.topic.as_str() == topic) {
                    Some(entry) => entry.partitions.push(*partition),
                    None => topics.push(
                        TopicData::default()
                            .with_topic(TopicName(StrBytes::from_string(topic.clone())))
                            .with_partitions(vec![*partition]),
                    ),
                }
            }
            TransactionState::default()
                .with_transactional_id(id)
                .with_transaction_state(StrBytes::from_static_str(txn.state.name()))
                .with_transaction_timeout_ms(txn.timeout_ms)
                .with_transaction_start_time_ms(txn.start_ms)
                .with_producer_id(ProducerId(txn.producer_id))
                .with_producer_epoch(txn.producer_epoch)
                .with_topics(topics)
        })
        .collect();
    DescribeTransactionsResponse::default().with_transaction_states(states)
}

pub fn list(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: ListTransactionsRequest,
) -> ListTransactionsResponse {
    let now_ms = context.clock.now_ms();
    let states = context
        .transactions
        .snapshot()
        .into_iter()
        // Only the ids the principal may DESCRIBE, as Kafka.
        .filter(|(id, _)| access.allows_transactional_id(Operation::Describe, id))
        .filter(|(_, txn)| {
            let state_ok = request.state_filters.is_empty()
                || request
                    .state_filters
                    .iter()
                    .any(|s| s.as_str() == txn.state.name());
            let producer_ok = request.producer_id_filters.is_empty()
                || request
                    .producer_id_filters
                    .contains(&ProducerId(txn.producer_id));
            // v1: only transactions running longer than the filter (ms), when set.
            let duration_ok = request.duration_filter < 0
                || (txn.start_ms >= 0 && now_ms - txn.start_ms > request.duration_filter);
            state_ok && producer_ok && duration_ok
        })
        .map(|(id, txn)| {
            ListedState::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(id)))
                .with_producer_id(ProducerId(txn.producer_id))
                .with_transaction_state(StrBytes::from_static_str(txn.state.name()))
        })
        .collect();
    ListTransactionsResponse::default().with_transaction_states(states)
}
