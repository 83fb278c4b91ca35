//! One transactional id's state as a pure state machine (KIP-98): the coordinator feeds it
//! requests and clock ticks and carries out what it decides (persist, write markers).
//!
//! States: Empty → Ongoing (partitions added) → PrepareCommit | PrepareAbort (decided, markers
//! being written) → CompleteCommit | CompleteAbort → Ongoing again with the next transaction.
//! InitProducerId bumps the epoch, which fences every older incarnation of the producer.

use std::collections::BTreeSet;

use kafka_protocol::ResponseError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
}

impl TxnState {
    /// Kafka's codes in `__transaction_state` (and DescribeTransactions names).
    pub fn code(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
        }
    }

    pub fn from_code(code: i8) -> Option<Self> {
        Some(match code {
            0 => TxnState::Empty,
            1 => TxnState::Ongoing,
            2 => TxnState::PrepareCommit,
            3 => TxnState::PrepareAbort,
            4 => TxnState::CompleteCommit,
            5 => TxnState::CompleteAbort,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
        }
    }

    /// Decided but markers not all written: only the coordinator may move it on.
    pub fn is_preparing(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }
}

/// (topic, partition)
pub type TopicPartition = (String, i32);

/// What the coordinator knows of one transactional id; persisted as one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<TopicPartition>,
    pub last_update_ms: i64,
    /// When the current transaction began (its first AddPartitions), for the timeout.
    pub start_ms: i64,
}

impl TxnMetadata {
    pub fn new(producer_id: i64, timeout_ms: i32, now_ms: i64) -> Self {
        TxnMetadata {
            producer_id,
            producer_epoch: 0,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            last_update_ms: now_ms,
            start_ms: -1,
        }
    }

    /// The requester must be the current incarnation of the producer.
    pub fn check_producer(&self, producer_id: i64, epoch: i16) -> Result<(), ResponseError> {
        if producer_id != self.producer_id {
            return Err(ResponseError::InvalidProducerIdMapping);
        }
        if epoch != self.producer_epoch {
            return Err(ResponseError::ProducerFenced);
        }
        Ok(())
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: the transaction begins or grows.
    pub fn add_partitions(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
        now_ms: i64,
    ) -> Result<(), ResponseError> {
        if self.state.is_preparing() {
            return Err(ResponseError::ConcurrentTransactions);
        }
        if self.state != TxnState::Ongoing {
            self.partitions.clear();
            self.start_ms = now_ms;
        }
        self.state = TxnState::Ongoing;
        self.partitions.extend(partitions);
        self.last_update_ms = now_ms;
        Ok(())
    }

    /// Whether a transactional produce to `partition` belongs to the open transaction
    /// (KIP-890 part 1: no write lands outside a transaction the coordinator knows).
    pub fn covers(&self, producer_id: i64, epoch: i16, partition: &TopicPartition) -> bool {
        self.producer_id == producer_id
            && self.producer_epoch == epoch
            && self.state == TxnState::Ongoing
            && self.partitions.contains(partition)
    }

    /// EndTxn: decides the open transaction. Returns whether markers must be written (false for
    /// a retry of an EndTxn already carried out).
    pub fn end(&mut self, commit: bool, now_ms: i64) -> Result<bool, ResponseError> {
        match (self.state, commit) {
            (TxnState::Ongoing, _) => {
                self.state = if commit {
                    TxnState::PrepareCommit
                } else {
                    TxnState::PrepareAbort
                };
                self.last_update_ms = now_ms;
                Ok(true)
            }
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Ok(false),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                Err(ResponseError::ConcurrentTransactions)
            }
            // Aborting with nothing open is allowed (the client may abort after an error).
            (TxnState::Empty, false) => Ok(false),
            _ => Err(ResponseError::InvalidTxnState),
        }
    }

    /// The markers are written: the transaction is complete.
    pub fn complete(&mut self, now_ms: i64) {
        self.state = match self.state {
            TxnState::PrepareCommit => TxnState::CompleteCommit,
            TxnState::PrepareAbort => TxnState::CompleteAbort,
            other => other,
        };
        self.partitions.clear();
        self.start_ms = -1;
        self.last_update_ms = now_ms;
    }

    /// An open transaction past its timeout.
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.state == TxnState::Ongoing
            && self.start_ms >= 0
            && now_ms.saturating_sub(self.start_ms) > self.timeout_ms as i64
    }

    /// A new incarnation (InitProducerId, or the coordinator fencing a timed-out producer):
    /// the epoch goes up; `None` when it is exhausted and a new producer id is needed.
    pub fn bump_epoch(&mut self, now_ms: i64) -> Option<i16> {
        if self.producer_epoch >= i16::MAX - 1 {
            return None;
        }
        self.producer_epoch += 1;
        self.last_update_ms = now_ms;
        Some(self.producer_epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        (topic.to_string(), partition)
    }

    #[test]
    fn a_transaction_goes_ongoing_prepared_complete_and_again() {
        let mut txn = TxnMetadata::new(7, 60_000, 0);
        assert_eq!(
            txn.end(true, 1),
            Err(ResponseError::InvalidTxnState),
            "nothing to commit"
        );
        assert_eq!(txn.end(false, 1), Ok(false), "aborting nothing is fine");
        txn.add_partitions([tp("a", 0)], 10).unwrap();
        txn.add_partitions([tp("b", 1)], 20).unwrap();
        assert_eq!(txn.start_ms, 10);
        assert!(txn.covers(7, 0, &tp("b", 1)));
        assert!(!txn.covers(7, 0, &tp("c", 0)) && !txn.covers(7, 1, &tp("a", 0)));
        assert_eq!(txn.end(true, 30), Ok(true));
        assert_eq!(txn.state, TxnState::PrepareCommit);
        assert_eq!(
            txn.add_partitions([tp("a", 0)], 31),
            Err(ResponseError::ConcurrentTransactions)
        );
        txn.complete(40);
        assert_eq!(txn.state, TxnState::CompleteCommit);
        assert_eq!(txn.end(true, 41), Ok(false), "a retried commit");
        assert_eq!(txn.end(false, 41), Err(ResponseError::InvalidTxnState));
        txn.add_partitions([tp("c", 2)], 50).unwrap();
        assert_eq!(txn.partitions.len(), 1, "a new transaction starts empty");
        assert_eq!(txn.start_ms, 50);
    }

    #[test]
    fn timeouts_and_fencing() {
        let mut txn = TxnMetadata::new(7, 1_000, 0);
        txn.add_partitions([tp("a", 0)], 100).unwrap();
        assert!(!txn.is_expired(1_100));
        assert!(txn.is_expired(1_101));
        assert_eq!(txn.check_producer(7, 0), Ok(()));
        assert_eq!(txn.bump_epoch(5), Some(1));
        assert_eq!(txn.check_producer(7, 0), Err(ResponseError::ProducerFenced));
        assert_eq!(
            txn.check_producer(8, 1),
            Err(ResponseError::InvalidProducerIdMapping)
        );
        txn.producer_epoch = i16::MAX - 1;
        assert_eq!(txn.bump_epoch(6), None, "exhausted: a new producer id");
    }
}
