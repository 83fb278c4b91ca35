//! Per-partition state of idempotent producers: for each producer id its epoch and the metadata
//! of its last few batches, to accept a batch only in sequence and to answer a retried batch with
//! its original offsets instead of appending it twice (KIP-98).
//!
//! Pure: `check` decides, `record` remembers; the log calls them under its lock around the append,
//! and rebuilds the state after a restart from a snapshot plus the batches after it.

use std::collections::{BTreeMap, VecDeque};

use super::error::ProducerError;
use crate::log::batch::BatchHeader;

/// Batches remembered per producer for duplicate detection (Kafka's
/// `max.in.flight.requests.per.connection` ceiling for idempotence).
pub const BATCHES_REMEMBERED: usize = 5;

/// One appended batch of a producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_sequence: i32,
    pub last_sequence: i32,
    pub first_offset: i64,
    pub last_offset: i64,
}

/// What the partition knows of one producer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerEntry {
    pub epoch: i16,
    /// The last batches, oldest first, at most `BATCHES_REMEMBERED`.
    pub batches: VecDeque<BatchMetadata>,
    /// Broker time of the last append, for `producer.id.expiration.ms`.
    pub last_append_ms: i64,
    /// The first offset of the producer's open transaction in this partition, if any.
    pub current_txn_first_offset: Option<i64>,
    /// The epoch of the transaction coordinator that wrote the producer's last marker.
    pub coordinator_epoch: i32,
}

/// A transaction a marker ended in this partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    pub aborted: bool,
}

/// The outcome of checking a batch that may be appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// Not an idempotent batch (no producer id): nothing to check.
    NotIdempotent,
    /// In sequence: append it.
    Append,
    /// A retry of a batch already appended: answer with its offsets, append nothing.
    Duplicate(BatchMetadata),
}

/// The sequence after `sequence`; sequences wrap from `i32::MAX` to 0.
pub fn next_sequence(sequence: i32) -> i32 {
    if sequence == i32::MAX {
        0
    } else {
        sequence + 1
    }
}

/// The sequence of a batch's last record.
pub fn last_sequence(header: &BatchHeader) -> i32 {
    let last = header.base_sequence as i64 + header.last_offset_delta as i64;
    (last % (i32::MAX as i64 + 1)) as i32
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerStateManager {
    producers: BTreeMap<i64, ProducerEntry>,
}

impl ProducerStateManager {
    pub fn new(producers: BTreeMap<i64, ProducerEntry>) -> Self {
        ProducerStateManager { producers }
    }

    pub fn producers(&self) -> &BTreeMap<i64, ProducerEntry> {
        &self.producers
    }

    pub fn get(&self, producer_id: i64) -> Option<&ProducerEntry> {
        self.producers.get(&producer_id)
    }

    /// Decides whether a producer batch may be appended (KIP-98 rules).
    pub fn check(&self, header: &BatchHeader) -> Result<SequenceCheck, ProducerError> {
        if header.producer_id < 0 {
            return Ok(SequenceCheck::NotIdempotent);
        }
        let producer_id = header.producer_id;
        let epoch = header.producer_epoch;
        let first_sequence = header.base_sequence;
        let Some(entry) = self.producers.get(&producer_id) else {
            if first_sequence != 0 {
                return Err(ProducerError::UnknownProducerId {
                    producer_id,
                    first_sequence,
                });
            }
            return Ok(SequenceCheck::Append);
        };
        if epoch < entry.epoch {
            return Err(ProducerError::InvalidEpoch {
                producer_id,
                epoch,
                current_epoch: entry.epoch,
            });
        }
        if epoch > entry.epoch {
            // A new epoch starts its sequences again.
            if first_sequence != 0 {
                return Err(ProducerError::OutOfOrderSequence {
                    producer_id,
                    epoch,
                    first_sequence,
                    expected: 0,
                });
            }
            return Ok(SequenceCheck::Append);
        }
        let last = last_sequence(header);
        if let Some(duplicate) = entry
            .batches
            .iter()
            .find(|b| b.first_sequence == first_sequence && b.last_sequence == last)
        {
            return Ok(SequenceCheck::Duplicate(*duplicate));
        }
        let expected = entry
            .batches
            .back()
            .map_or(0, |b| next_sequence(b.last_sequence));
        if first_sequence != expected {
            return Err(ProducerError::OutOfOrderSequence {
                producer_id,
                epoch,
                first_sequence,
                expected,
            });
        }
        Ok(SequenceCheck::Append)
    }

    /// Remembers a batch that was appended (or replayed from the log) at its offsets.
    pub fn record(&mut self, header: &BatchHeader, now_ms: i64) {
        if header.producer_id < 0 {
            return;
        }
        let entry = self
            .producers
            .entry(header.producer_id)
            .or_insert_with(|| ProducerEntry {
                epoch: header.producer_epoch,
                batches: VecDeque::new(),
                last_append_ms: now_ms,
                current_txn_first_offset: None,
                coordinator_epoch: -1,
            });
        if header.producer_epoch != entry.epoch {
            entry.epoch = header.producer_epoch;
            // A marker with a bumped epoch (fencing) keeps nothing of the old epoch's batches.
            entry.batches.clear();
        }
        entry.last_append_ms = entry.last_append_ms.max(now_ms);
        if header.is_control() {
            return;
        }
        if header.is_transactional() && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(header.base_offset);
        }
        entry.batches.push_back(BatchMetadata {
            first_sequence: header.base_sequence,
            last_sequence: last_sequence(header),
            first_offset: header.base_offset,
            last_offset: header.last_offset(),
        });
        while entry.batches.len() > BATCHES_REMEMBERED {
            entry.batches.pop_front();
        }
    }

    /// Checks a transaction marker: the producer's epoch and the coordinator's must not go back.
    pub fn check_marker(
        &self,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
    ) -> Result<(), ProducerError> {
        let Some(entry) = self.producers.get(&producer_id) else {
            return Ok(());
        };
        if epoch < entry.epoch {
            return Err(ProducerError::InvalidEpoch {
                producer_id,
                epoch,
                current_epoch: entry.epoch,
            });
        }
        if coordinator_epoch < entry.coordinator_epoch {
            return Err(ProducerError::CoordinatorFenced {
                producer_id,
                coordinator_epoch,
                current_coordinator_epoch: entry.coordinator_epoch,
            });
        }
        Ok(())
    }

    /// Applies a marker appended at `header.base_offset`: the producer's open transaction (if
    /// any) ends. Returns it, so that an aborted one can be indexed.
    pub fn complete_txn(
        &mut self,
        header: &BatchHeader,
        aborted: bool,
        coordinator_epoch: i32,
        now_ms: i64,
    ) -> Option<CompletedTxn> {
        self.record(header, now_ms);
        let entry = self.producers.get_mut(&header.producer_id)?;
        entry.coordinator_epoch = entry.coordinator_epoch.max(coordinator_epoch);
        let first_offset = entry.current_txn_first_offset.take()?;
        Some(CompletedTxn {
            producer_id: header.producer_id,
            first_offset,
            last_offset: header.base_offset,
            aborted,
        })
    }

    /// The first offset of the earliest open transaction: the last stable offset is below it.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.producers
            .values()
            .filter_map(|entry| entry.current_txn_first_offset)
            .min()
    }

    /// Open transactions as (producer id, first offset), earliest first.
    pub fn open_transactions(&self) -> Vec<(i64, i64)> {
        let mut open: Vec<(i64, i64)> = self
            .producers
            .iter()
            .filter_map(|(id, e)| Some((*id, e.current_txn_first_offset?)))
            .collect();
        open.sort_by_key(|(_, first)| *first);
        open
    }

    /// Forgets producers that appended nothing for `expiration_ms` (`producer.id.expiration.ms`).
    /// Returns how many were removed.
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        // A producer with an open transaction stays: its transaction holds the LSO back until
        // the coordinator ends it.
        self.producers.retain(|_, entry| {
            entry.current_txn_first_offset.is_some()
                || now_ms.saturating_sub(entry.last_append_ms) <= expiration_ms
        });
        before - self.producers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(
        producer_id: i64,
        epoch: i16,
        first_sequence: i32,
        records: i32,
        base_offset: i64,
    ) -> BatchHeader {
        BatchHeader {
            base_offset,
            batch_length: 100,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: records - 1,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id,
            producer_epoch: epoch,
            base_sequence: first_sequence,
            records_count: records,
        }
    }

    fn appended(state: &mut ProducerStateManager, batch: BatchHeader) {
        assert_eq!(state.check(&batch), Ok(SequenceCheck::Append));
        state.record(&batch, 0);
    }

    #[test]
    fn batches_must_come_in_sequence() {
        let mut state = ProducerStateManager::default();
        appended(&mut state, header(7, 0, 0, 3, 0));
        appended(&mut state, header(7, 0, 3, 2, 3));
        assert_eq!(
            state.check(&header(7, 0, 6, 1, 5)),
            Err(ProducerError::OutOfOrderSequence {
                producer_id: 7,
                epoch: 0,
                first_sequence: 6,
                expected: 5
            })
        );
        appended(&mut state, header(7, 0, 5, 1, 5));
        assert_eq!(
            state.check(&header(-1, -1, -1, 1, 6)),
            Ok(SequenceCheck::NotIdempotent)
        );
    }

    #[test]
    fn a_retry_of_one_of_the_last_five_batches_is_a_duplicate_with_its_offsets() {
        let mut state = ProducerStateManager::default();
        for i in 0..7 {
            appended(&mut state, header(1, 0, i * 2, 2, 100 + i as i64 * 2));
        }
        // Batches 2..=6 are remembered; 0 and 1 are not.
        assert_eq!(
            state.check(&header(1, 0, 4, 2, -1)),
            Ok(SequenceCheck::Duplicate(BatchMetadata {
                first_sequence: 4,
                last_sequence: 5,
                first_offset: 104,
                last_offset: 105
            }))
        );
        assert!(matches!(
            state.check(&header(1, 0, 2, 2, -1)),
            Err(ProducerError::OutOfOrderSequence { .. })
        ));
        // Same first sequence, other length: not the same batch.
        assert!(matches!(
            state.check(&header(1, 0, 12, 1, -1)),
            Err(ProducerError::OutOfOrderSequence { .. })
        ));
    }

    #[test]
    fn epochs_fence_and_reset_sequences() {
        let mut state = ProducerStateManager::default();
        appended(&mut state, header(1, 3, 0, 5, 0));
        assert_eq!(
            state.check(&header(1, 2, 5, 1, -1)),
            Err(ProducerError::InvalidEpoch {
                producer_id: 1,
                epoch: 2,
                current_epoch: 3
            })
        );
        assert!(matches!(
            state.check(&header(1, 4, 5, 1, -1)),
            Err(ProducerError::OutOfOrderSequence { expected: 0, .. })
        ));
        appended(&mut state, header(1, 4, 0, 1, 5));
        assert_eq!(state.get(1).unwrap().epoch, 4);
        assert_eq!(state.get(1).unwrap().batches.len(), 1);
    }

    #[test]
    fn unknown_producers_must_start_at_sequence_zero() {
        let mut state = ProducerStateManager::default();
        assert_eq!(
            state.check(&header(9, 0, 10, 1, -1)),
            Err(ProducerError::UnknownProducerId {
                producer_id: 9,
                first_sequence: 10
            })
        );
        appended(&mut state, header(9, 0, 0, 1, 0));
    }

    #[test]
    fn sequences_wrap_after_i32_max() {
        let mut state = ProducerStateManager::default();
        appended(&mut state, header(1, 0, 0, 1, 0));
        // Pretend the producer reached the top of the range.
        state
            .producers
            .get_mut(&1)
            .unwrap()
            .batches
            .back_mut()
            .unwrap()
            .last_sequence = i32::MAX - 1;
        let top = header(1, 0, i32::MAX, 3, 1); // sequences MAX, 0, 1
        assert_eq!(last_sequence(&top), 1);
        appended(&mut state, top);
        appended(&mut state, header(1, 0, 2, 1, 4));
    }

    #[test]
    fn idle_producers_expire() {
        let mut state = ProducerStateManager::default();
        state.record(&header(1, 0, 0, 1, 0), 1_000);
        state.record(&header(2, 0, 0, 1, 1), 5_000);
        assert_eq!(state.expire(7_000, 3_000), 1);
        assert!(state.get(1).is_none() && state.get(2).is_some());
    }
}
