//! Transactional data under compaction (Kafka's rules, KIP-98).
//!
//! - Nothing at or after the last stable offset is cleaned: the records of an open transaction
//!   may still be aborted, so they must neither supersede older values nor be removed.
//! - Records of aborted transactions are never mapped (an aborted update must not remove the
//!   committed value it would have replaced) and are removed when their segment is cleaned.
//! - Control batches (commit/abort markers) are kept, so that read_committed readers and a
//!   replayed producer state still see every transaction end.

use std::collections::HashMap;

use crate::log::aborted_index::AbortedTxn;
use crate::log::batch::BatchHeader;

/// The offset ranges of the aborted transactions in the cleanable part of a log, by producer.
#[derive(Debug, Default, Clone)]
pub struct AbortedRanges {
    by_producer: HashMap<i64, Vec<(i64, i64)>>,
}

impl AbortedRanges {
    pub fn new(aborted: &[AbortedTxn]) -> Self {
        let mut by_producer: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        for txn in aborted {
            by_producer
                .entry(txn.producer_id)
                .or_default()
                .push((txn.first_offset, txn.last_offset));
        }
        AbortedRanges { by_producer }
    }

    /// Whether `header` is a data batch of an aborted transaction.
    pub fn holds(&self, header: &BatchHeader) -> bool {
        if !header.is_transactional() || header.is_control() {
            return false;
        }
        self.by_producer
            .get(&header.producer_id)
            .is_some_and(|ranges| {
                ranges
                    .iter()
                    .any(|&(first, marker)| (first..marker).contains(&header.base_offset))
            })
    }
}
