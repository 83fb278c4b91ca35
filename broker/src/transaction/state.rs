//! One transactional id's state as a pure state machine (KIP-98): the coordinator feeds it
//! requests and clock ticks and carries out what it decides (persist, write markers).
//!
//! States: Empty → Ongoing (partitions added) → PrepareCommit | PrepareAbort (decided, markers
//! being written) → CompleteCommit | CompleteAbort → Ongoing again with the next transaction.
//! InitProducerId bumps the epoch, which fences every older incarnation of the producer.
//!
//! Transaction version 2 (KIP-890 part 2, EndTxn v5+): every EndTxn bumps the epoch too, and the
//! client continues with the epoch it is answered. Anything still sent with the old epoch — a
//! late produce, an EndTxn retried after its transaction ended — is fenced instead of landing in
//! the next transaction; a retry of the last EndTxn is recognised by `last_producer_epoch` and
//! answered as it was. An exhausted epoch moves the producer to a new id
//! (`next_producer_id`, then `previous_producer_id`).

use std::collections::BTreeSet;

use crate::transaction::TxnError;

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
    /// The epoch the last epoch-bumping EndTxn came with (-1: none).
    pub last_producer_epoch: i16,
    /// The producer id before the last rotation to a new id (-1: none).
    pub previous_producer_id: i64,
    /// While an EndTxn that exhausted the epoch completes: the id the producer moves to (-1: none).
    pub next_producer_id: i64,
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
            last_producer_epoch: -1,
            previous_producer_id: -1,
            next_producer_id: -1,
        }
    }

    /// A new incarnation (InitProducerId) forgets how the last one's transactions ended.
    pub fn forget_last_end(&mut self) {
        self.last_producer_epoch = -1;
        self.previous_producer_id = -1;
        self.next_producer_id = -1;
    }

    /// The requester must be the current incarnation of the producer.
    pub fn check_producer(&self, producer_id: i64, epoch: i16) -> Result<(), TxnError> {
        if producer_id != self.producer_id {
            return Err(TxnError::ProducerIdMismatch {
                requested: producer_id,
                current: self.producer_id,
            });
        }
        if epoch != self.producer_epoch {
            return Err(TxnError::Fenced {
                requested: epoch,
                current: self.producer_epoch,
            });
        }
        Ok(())
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: the transaction begins or grows.
    pub fn add_partitions(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
        now_ms: i64,
    ) -> Result<(), TxnError> {
        if self.state.is_preparing() {
            return Err(TxnError::Concurrent);
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

    /// Whether a transactional write to `partition` belongs to the open transaction (KIP-890
    /// part 1: no write lands outside a transaction the coordinator knows); if not, why — a
    /// fenced epoch first, as Kafka answers it, so that the zombie learns it is one.
    pub fn verify(
        &self,
        producer_id: i64,
        epoch: i16,
        partition: &TopicPartition,
    ) -> Result<(), TxnError> {
        self.check_producer(producer_id, epoch)?;
        if self.state.is_preparing() {
            return Err(TxnError::Concurrent);
        }
        if self.state == TxnState::Ongoing && self.partitions.contains(partition) {
            return Ok(());
        }
        Err(TxnError::NotInTransaction {
            topic: partition.0.clone(),
            partition: partition.1,
        })
    }

    /// EndTxn: decides the open transaction. Returns whether markers must be written (false for
    /// a retry of an EndTxn already carried out).
    pub fn end(&mut self, commit: bool, now_ms: i64) -> Result<bool, TxnError> {
        match (self.state, commit) {
            (TxnState::Ongoing, _) => {
                self.decide(commit, now_ms);
                Ok(true)
            }
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Ok(false),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                Err(TxnError::Concurrent)
            }
            // Aborting with nothing open is allowed (the client may abort after an error).
            (TxnState::Empty, false) => Ok(false),
            _ => Err(TxnError::InvalidState { state: self.state }),
        }
    }

    /// EndTxn with transaction version 2: decides the open transaction (or, for an abort, none)
    /// and bumps the epoch; `new_producer_id` is asked for when the epoch is exhausted. Returns
    /// whether the transaction must now be finished (false: a retry of the EndTxn that ended it).
    pub fn end_bumping_epoch(
        &mut self,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        now_ms: i64,
        new_producer_id: impl FnOnce() -> Result<i64, TxnError>,
    ) -> Result<bool, TxnError> {
        // A retry only while that transaction's end stands; once the next one began, the old
        // epoch is a zombie's (fenced below).
        let ended = !matches!(self.state, TxnState::Ongoing | TxnState::Empty);
        if ended && self.is_retry_of_last_end(producer_id, epoch) {
            return match (self.state, commit) {
                (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Ok(false),
                (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                    Err(TxnError::Concurrent)
                }
                _ => Err(TxnError::InvalidState { state: self.state }),
            };
        }
        self.check_producer(producer_id, epoch)?;
        match (self.state, commit) {
            (TxnState::Ongoing, _) => {}
            // An abort with nothing open still bumps the epoch: in-flight writes are fenced.
            (TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort, false) => {
                self.partitions.clear();
            }
            (TxnState::PrepareCommit | TxnState::PrepareAbort, _) => {
                return Err(TxnError::Concurrent)
            }
            _ => return Err(TxnError::InvalidState { state: self.state }),
        }
        // An epoch is at most i16::MAX - 1 between transactions (see `complete`), so this fits.
        if epoch + 1 == i16::MAX {
            self.next_producer_id = new_producer_id()?;
        }
        self.last_producer_epoch = epoch;
        self.producer_epoch = epoch + 1;
        self.decide(commit, now_ms);
        Ok(true)
    }

    /// The outcome is decided: markers are to be written.
    fn decide(&mut self, commit: bool, now_ms: i64) {
        self.state = if commit {
            TxnState::PrepareCommit
        } else {
            TxnState::PrepareAbort
        };
        self.last_update_ms = now_ms;
    }

    /// A repeat of the last epoch-bumping EndTxn: it comes with the epoch before the bump (and,
    /// after a rotation, the previous producer id).
    fn is_retry_of_last_end(&self, producer_id: i64, epoch: i16) -> bool {
        if self.last_producer_epoch < 0 || epoch != self.last_producer_epoch {
            return false;
        }
        let bumped = producer_id == self.producer_id && self.producer_epoch == epoch + 1;
        let rotated = producer_id == self.previous_producer_id && self.producer_epoch == 0;
        bumped || rotated
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
        if self.next_producer_id >= 0 {
            self.previous_producer_id = self.producer_id;
            self.producer_id = self.next_producer_id;
            self.producer_epoch = 0;
            self.next_producer_id = -1;
        }
    }

    /// The producer id and epoch the client goes on with once this transaction completes (a
    /// new id when the epoch was exhausted).
    pub fn continues_as(&self) -> (i64, i16) {
        if self.next_producer_id >= 0 {
            (self.next_producer_id, 0)
        } else {
            (self.producer_id, self.producer_epoch)
        }
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
    use kafka_protocol::ResponseError;

    /// The Kafka error a client is answered with.
    fn kafka<T>(result: Result<T, TxnError>) -> Result<T, ResponseError> {
        result.map_err(Into::into)
    }

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        (topic.to_string(), partition)
    }

    #[test]
    fn a_transaction_goes_ongoing_prepared_complete_and_again() {
        let mut txn = TxnMetadata::new(7, 60_000, 0);
        assert_eq!(
            kafka(txn.end(true, 1)),
            Err(ResponseError::InvalidTxnState),
            "nothing to commit"
        );
        assert_eq!(
            kafka(txn.end(false, 1)),
            Ok(false),
            "aborting nothing is fine"
        );
        txn.add_partitions([tp("a", 0)], 10).unwrap();
        txn.add_partitions([tp("b", 1)], 20).unwrap();
        assert_eq!(txn.start_ms, 10);
        assert_eq!(kafka(txn.verify(7, 0, &tp("b", 1))), Ok(()));
        assert_eq!(
            kafka(txn.verify(7, 0, &tp("c", 0))),
            Err(ResponseError::InvalidTxnState)
        );
        assert_eq!(
            kafka(txn.verify(7, 1, &tp("a", 0))),
            Err(ResponseError::ProducerFenced)
        );
        assert_eq!(
            kafka(txn.verify(8, 0, &tp("a", 0))),
            Err(ResponseError::InvalidProducerIdMapping)
        );
        assert_eq!(kafka(txn.end(true, 30)), Ok(true));
        assert_eq!(txn.state, TxnState::PrepareCommit);
        assert_eq!(
            kafka(txn.add_partitions([tp("a", 0)], 31)),
            Err(ResponseError::ConcurrentTransactions)
        );
        txn.complete(40);
        assert_eq!(txn.state, TxnState::CompleteCommit);
        assert_eq!(kafka(txn.end(true, 41)), Ok(false), "a retried commit");
        assert_eq!(
            kafka(txn.end(false, 41)),
            Err(ResponseError::InvalidTxnState)
        );
        txn.add_partitions([tp("c", 2)], 50).unwrap();
        assert_eq!(txn.partitions.len(), 1, "a new transaction starts empty");
        assert_eq!(txn.start_ms, 50);
    }

    #[test]
    fn with_transaction_version_2_every_end_bumps_the_epoch_and_fences_the_old_one() {
        let no_new_id = || -> Result<i64, TxnError> { panic!("not exhausted") };
        let mut txn = TxnMetadata::new(7, 60_000, 0);
        txn.add_partitions([tp("a", 0)], 10).unwrap();
        assert_eq!(
            kafka(txn.end_bumping_epoch(7, 0, true, 20, no_new_id)),
            Ok(true)
        );
        assert_eq!(
            (txn.state, txn.producer_epoch),
            (TxnState::PrepareCommit, 1)
        );
        assert_eq!(
            kafka(txn.verify(7, 0, &tp("a", 0))),
            Err(ResponseError::ProducerFenced),
            "nothing more with epoch 0"
        );
        txn.complete(30);
        // The client's retry of that EndTxn (epoch 0) is answered as before…
        assert_eq!(
            kafka(txn.end_bumping_epoch(7, 0, true, 31, no_new_id)),
            Ok(false)
        );
        assert_eq!(
            kafka(txn.end_bumping_epoch(7, 0, false, 31, no_new_id)),
            Err(ResponseError::InvalidTxnState),
            "…but cannot change the outcome"
        );
        // The next transaction runs with epoch 1; epoch 0 can no longer add to it or end it.
        assert_eq!(
            kafka(txn.check_producer(7, 0)),
            Err(ResponseError::ProducerFenced)
        );
        txn.add_partitions([tp("b", 0)], 40).unwrap();
        assert_eq!(
            kafka(txn.end_bumping_epoch(7, 0, true, 41, no_new_id)),
            Err(ResponseError::ProducerFenced),
            "a late EndTxn of the earlier transaction does not end this one"
        );
        assert_eq!(
            kafka(txn.end_bumping_epoch(7, 1, false, 42, no_new_id)),
            Ok(true)
        );
        txn.complete(43);
        assert_eq!(
            (txn.state, txn.producer_epoch),
            (TxnState::CompleteAbort, 2)
        );
        // An abort with nothing open bumps too; a commit of nothing is refused.
        assert_eq!(
            kafka(txn.end_bumping_epoch(7, 2, true, 44, no_new_id)),
            Err(ResponseError::InvalidTxnState)
        );
        assert_eq!(
            kafka(txn.end_bumping_epoch(7, 2, false, 45, no_new_id)),
            Ok(true)
        );
        txn.complete(46);
        assert_eq!(txn.producer_epoch, 3);
    }

    #[test]
    fn an_exhausted_epoch_moves_the_producer_to_a_new_id() {
        let mut txn = TxnMetadata::new(7, 60_000, 0);
        txn.producer_epoch = i16::MAX - 1;
        txn.add_partitions([tp("a", 0)], 10).unwrap();
        assert_eq!(
            kafka(txn.end_bumping_epoch(7, i16::MAX - 1, true, 20, || Ok(99))),
            Ok(true)
        );
        assert_eq!(txn.producer_epoch, i16::MAX, "markers carry the last epoch");
        txn.complete(30);
        assert_eq!((txn.producer_id, txn.producer_epoch), (99, 0));
        assert_eq!(
            kafka(txn.end_bumping_epoch(7, i16::MAX - 1, true, 31, || panic!("a retry"))),
            Ok(false),
            "a retry from the old id is recognised"
        );
        assert_eq!(
            kafka(txn.check_producer(7, i16::MAX)),
            Err(ResponseError::InvalidProducerIdMapping)
        );
    }

    #[test]
    fn timeouts_and_fencing() {
        let mut txn = TxnMetadata::new(7, 1_000, 0);
        txn.add_partitions([tp("a", 0)], 100).unwrap();
        assert!(!txn.is_expired(1_100));
        assert!(txn.is_expired(1_101));
        assert_eq!(kafka(txn.check_producer(7, 0)), Ok(()));
        assert_eq!(txn.bump_epoch(5), Some(1));
        assert_eq!(
            kafka(txn.check_producer(7, 0)),
            Err(ResponseError::ProducerFenced)
        );
        assert_eq!(
            kafka(txn.check_producer(8, 1)),
            Err(ResponseError::InvalidProducerIdMapping)
        );
        txn.producer_epoch = i16::MAX - 1;
        assert_eq!(txn.bump_epoch(6), None, "exhausted: a new producer id");
    }
}
