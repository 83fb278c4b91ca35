//! Produce's transactional side (KIP-890): before a request's batches are appended, each
//! transactional batch's partition is checked with the coordinator of its transaction — here or
//! on another broker — or, for transaction version 2 (Produce v12+), added to the transaction.
//! A partition already holding the producer's open transaction needs no check (as in Kafka).
//!
//! The check happens before the request's appends, and the connection takes no other request
//! meanwhile, so appends keep the request order.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kafka_protocol::messages::ProduceRequest;
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::log::batch::BatchHeader;
use crate::transaction::state::TopicPartition;
use crate::transaction::verify::{self, TxnWrite};

/// Produce v12 is sent by clients of transaction version 2 (KIP-890 part 2): their transactional
/// writes add their partition to the transaction themselves.
pub const IMPLICIT_ADD_PARTITIONS_VERSION: i16 = 12;

/// What the coordinators said of a request's transactional partitions.
#[derive(Default)]
pub struct TxnChecks {
    /// Partitions whose batches belong to their open transaction.
    accepted: HashSet<TopicPartition>,
    /// Partitions whose batches do not, with why.
    refused: HashMap<TopicPartition, (ResponseError, String)>,
}

impl TxnChecks {
    /// Right before the append: checked, or still in the producer's open transaction (which
    /// made the check unnecessary — unless its marker landed meanwhile).
    pub fn verdict(
        &self,
        context: &BrokerContext,
        header: &BatchHeader,
        topic: &str,
        index: i32,
    ) -> Result<(), (ResponseError, String)> {
        let tp = (topic.to_string(), index);
        if let Some(refusal) = self.refused.get(&tp) {
            return Err(refusal.clone());
        }
        let (producer_id, epoch) = (header.producer_id, header.producer_epoch);
        if self.accepted.contains(&tp)
            || in_open_transaction(context, topic, index, producer_id, epoch)
        {
            return Ok(());
        }
        let message = format!(
            "the transaction of producer {producer_id} epoch {epoch} ended in {topic}-{index} meanwhile"
        );
        Err((ResponseError::NotEnoughReplicas, message))
    }
}

/// Checks the partitions of `request`'s transactional batches with their coordinator.
pub async fn check_request(
    context: &Arc<BrokerContext>,
    version: i16,
    request: &ProduceRequest,
) -> TxnChecks {
    let mut checks = TxnChecks::default();
    let Some(transactional_id) = request.transactional_id.as_deref() else {
        return checks; // refused batch by batch (no transactional id)
    };
    let mut unchecked: HashMap<(i64, i16), Vec<TopicPartition>> = HashMap::new();
    for topic in &request.topic_data {
        for data in &topic.partition_data {
            let Some(header) = data
                .records
                .as_deref()
                .and_then(|r| BatchHeader::parse(r).ok())
            else {
                continue;
            };
            if !header.is_transactional() || header.is_control() {
                continue;
            }
            let (producer_id, epoch) = (header.producer_id, header.producer_epoch);
            if in_open_transaction(context, topic.name.as_str(), data.index, producer_id, epoch) {
                continue;
            }
            let tp = (topic.name.to_string(), data.index);
            unchecked.entry((producer_id, epoch)).or_default().push(tp);
        }
    }
    let adds_partition = version >= IMPLICIT_ADD_PARTITIONS_VERSION;
    let services = context.txn_services();
    for ((producer_id, producer_epoch), partitions) in unchecked {
        let write = TxnWrite {
            transactional_id: transactional_id.as_str(),
            producer_id,
            producer_epoch,
            adds_partition,
        };
        let checked = verify::check(&context.transactions, &services, &write, partitions).await;
        for ((topic, index), error) in checked {
            match error {
                None => checks.accepted.insert((topic, index)),
                Some(error) => {
                    let refusal = refusal(&write, &topic, index, error);
                    checks.refused.insert((topic, index), refusal).is_none()
                }
            };
        }
    }
    checks
}

/// Whether the partition (led here) holds an open transaction of this producer and epoch.
pub fn in_open_transaction(
    context: &BrokerContext,
    topic: &str,
    index: i32,
    producer_id: i64,
    epoch: i16,
) -> bool {
    let Some(partition) = context
        .topics
        .get(topic)
        .and_then(|t| t.partition(index).cloned())
    else {
        return false;
    };
    let log = partition.log();
    log.producer_state()
        .get(producer_id)
        .is_some_and(|entry| entry.epoch == epoch && entry.current_txn_first_offset.is_some())
}

/// The produce answer for a refused check, as Kafka gives it: a fenced epoch is
/// INVALID_PRODUCER_EPOCH; a coordinator moving, loading or out of reach, or a transaction
/// still completing, is worth a retry (NOT_ENOUGH_REPLICAS, which every client retries).
fn refusal(
    write: &TxnWrite<'_>,
    topic: &str,
    index: i32,
    error: ResponseError,
) -> (ResponseError, String) {
    let (producer_id, epoch) = (write.producer_id, write.producer_epoch);
    let error = match error {
        ResponseError::ProducerFenced => ResponseError::InvalidProducerEpoch,
        ResponseError::ConcurrentTransactions
        | ResponseError::NotCoordinator
        | ResponseError::CoordinatorNotAvailable
        | ResponseError::CoordinatorLoadInProgress
        | ResponseError::BrokerNotAvailable
        | ResponseError::NetworkException
        | ResponseError::RequestTimedOut => ResponseError::NotEnoughReplicas,
        other => other,
    };
    let message = match (write.adds_partition, error) {
        (false, ResponseError::InvalidTxnState) => format!(
            "producer {producer_id} epoch {epoch} has no open transaction with {topic}-{index}"
        ),
        (true, _) => format!(
            "producer {producer_id} epoch {epoch} cannot add {topic}-{index} to its transaction: {error}"
        ),
        (false, _) => format!(
            "producer {producer_id} epoch {epoch}: the transaction of {topic}-{index} cannot be checked: {error}"
        ),
    };
    (error, message)
}
