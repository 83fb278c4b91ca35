//! A declared table's state in a job: its versions, and the reader that keeps them current.
//!
//! Every copy of a job reads all of the table topic's partitions (read_committed), from the
//! beginning when it starts, then before each checkpoint up to the end the partitions have at
//! that moment — so a table update written before a stream record was read is applied before
//! that record is joined. Records that cannot be a table row are skipped with a log line and
//! counted: no key (a table is keyed), or a value that does not decode. A record without a value
//! is a tombstone.

use std::collections::BTreeMap;

use weir_client::CLUSTER_TIMEOUT;

use crate::error::{Result, StreamsError};
use crate::io::decode::RecordDecoder;
use crate::io::topic_reader::{self, Limit, Range, Reader};
use crate::join::versioned_table::{Applied, VersionedTable};
use crate::record::InputRecord;

pub struct TableState {
    /// The table's name in SQL.
    pub name: String,
    pub decoder: RecordDecoder,
    versions: VersionedTable<InputRecord>,
    max_entries: usize,
    /// Records skipped: no key, undecodable, or older than the history kept.
    pub skipped: u64,
}

impl TableState {
    pub fn new(name: &str, decoder: RecordDecoder, history_ms: i64, max_entries: usize) -> Self {
        TableState {
            name: name.to_string(),
            decoder,
            versions: VersionedTable::new(history_ms, max_entries),
            max_entries,
            skipped: 0,
        }
    }

    /// The record current for `key` at `timestamp_ms`.
    pub fn get_as_of(&self, key: &[u8], timestamp_ms: i64) -> Option<&InputRecord> {
        self.versions.get_as_of(key, timestamp_ms)
    }

    /// Versions held.
    pub fn entries(&self) -> usize {
        self.versions.entries()
    }

    /// Applies `records` in order (the order of their partition).
    pub fn apply(&mut self, records: Vec<InputRecord>) -> Result<()> {
        let values: Vec<InputRecord> = records
            .iter()
            .filter(|r| r.key.is_some() && r.value.is_some())
            .cloned()
            .collect();
        let decoded = self.decoder.decode(&values)?;
        let mut undecodable = std::collections::HashSet::new();
        for rejected in &decoded.rejected {
            tracing::warn!(table = %self.name, partition = rejected.partition, offset = rejected.offset, reason = %rejected.reason, "table record skipped");
            undecodable.insert((rejected.partition, rejected.offset));
        }
        for record in records {
            let Some(key) = record.key.clone() else {
                tracing::warn!(table = %self.name, partition = record.partition, offset = record.offset, "table record without a key skipped");
                self.skipped += 1;
                continue;
            };
            if undecodable.contains(&(record.partition, record.offset)) {
                self.skipped += 1;
                continue;
            }
            let timestamp_ms = record.timestamp_ms;
            let value = record.value.is_some().then_some(record);
            match self.versions.apply(&key, timestamp_ms, value) {
                Ok(Applied::Stored) => {}
                Ok(Applied::TooOld) => self.skipped += 1,
                Err(full) => {
                    return Err(StreamsError::TooMuch(format!(
                        "table {}: {full} (at most {} versions)",
                        self.name, self.max_entries
                    )))
                }
            }
        }
        Ok(())
    }
}

/// Reads a table topic into its state.
pub struct TableFeed {
    pub topic: String,
    reader: Reader,
    /// Per partition, the next offset to read (`None`: from the beginning).
    next: BTreeMap<i32, Option<i64>>,
}

impl TableFeed {
    pub fn new(reader: Reader, topic: &str) -> Result<Self> {
        let partitions = topic_reader::partitions(&reader, topic, CLUSTER_TIMEOUT)?;
        Ok(TableFeed {
            topic: topic.to_string(),
            reader,
            next: partitions.into_iter().map(|p| (p, None)).collect(),
        })
    }

    /// Reads what the topic holds beyond what was read, up to its end now, into `state`.
    pub fn catch_up(&mut self, state: &mut TableState) -> Result<()> {
        let ranges: Vec<Range> = self
            .next
            .iter()
            .map(|(&partition, &start)| Range {
                partition,
                start,
                end: None,
            })
            .collect();
        let records = topic_reader::read_ranges(
            &self.reader,
            &self.topic,
            &ranges,
            Limit::FailBeyond(state.max_entries),
            CLUSTER_TIMEOUT,
        )?;
        for record in &records {
            let next = self.next.entry(record.partition).or_insert(None);
            *next = Some(next.unwrap_or(0).max(record.offset + 1));
        }
        state.apply(records)
    }
}
