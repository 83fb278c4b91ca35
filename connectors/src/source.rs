//! What a pull source is: records polled in order, and positions that say how far they went.
//!
//! The pipeline commits a source's position updates in the same transaction as the records
//! polled before them, so after a crash the source is restored exactly where its committed
//! records end: nothing skipped, nothing repeated.

use std::collections::HashMap;
use std::time::Duration;

use crate::error::ConnectorError;

/// One record read from outside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRecord {
    pub key: Option<Vec<u8>>,
    /// For line-oriented sources, the line without its terminator.
    pub value: Vec<u8>,
    /// The record's own time when the source has one (else the producer stamps the time).
    pub timestamp_ms: Option<i64>,
    pub headers: Vec<(String, Vec<u8>)>,
    /// Why the record cannot be used as it is (e.g. a line over the length limit, cut there):
    /// it goes to the dead-letter topic with this reason.
    pub problem: Option<String>,
}

impl SourceRecord {
    pub fn value(value: Vec<u8>) -> Self {
        SourceRecord {
            key: None,
            value,
            timestamp_ms: None,
            headers: Vec::new(),
            problem: None,
        }
    }
}

/// A change to a source's stored positions: `value` None forgets the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PositionUpdate {
    pub key: String,
    pub value: Option<Vec<u8>>,
}

/// A source the pipeline polls. Implementations do blocking I/O; the pipeline runs them on a
/// thread of their own.
pub trait Source: Send {
    /// Restores the committed positions (key → value) before the first poll.
    fn restore(&mut self, positions: &HashMap<String, Vec<u8>>) -> Result<(), ConnectorError>;

    /// Appends up to `max_records` records to `out`, waiting at most `wait` when none is ready.
    fn poll(
        &mut self,
        max_records: usize,
        wait: Duration,
        out: &mut Vec<SourceRecord>,
    ) -> Result<(), ConnectorError>;

    /// The position updates that cover every record polled since the last call. An error
    /// fails the checkpoint: records must never be committed without their positions.
    fn take_positions(&mut self) -> Result<Vec<PositionUpdate>, ConnectorError>;

    /// True once a bounded source has nothing more to give.
    fn finished(&self) -> bool {
        false
    }

    /// Called once the positions last taken are committed (e.g. to tell a far cluster's
    /// consumer group how far the pipeline got, for its lag tools).
    fn committed(&mut self) {}

    /// True when the last poll found nothing new (for runs that end once the input is read).
    fn caught_up(&self) -> bool {
        self.finished()
    }
}
