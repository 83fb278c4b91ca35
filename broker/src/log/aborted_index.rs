//! The aborted-transactions index of a partition: one entry per aborted transaction (producer id,
//! first offset, marker offset, last stable offset when it was aborted), so that read_committed
//! fetches can tell consumers which records to drop (`AbortedTransactions` in Fetch).
//!
//! One append-only file per partition, `aborted-transactions`, entries in marker order in Kafka's
//! `.txnindex` entry format (34 bytes: version i16 = 0, producer id i64, first offset i64, last
//! offset i64, last stable offset i64). Appended when an abort marker is written, fsynced with the
//! log's flushes; entries past the log end (a cut tail) are dropped on load and re-added by the
//! producer-state replay that rebuilds them.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Buf, BufMut};

use crate::log::error::LogError;

const FILE_NAME: &str = "aborted-transactions";
const ENTRY_BYTES: usize = 34;
const ENTRY_VERSION: i16 = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The offset of the abort marker.
    pub last_offset: i64,
    /// The last stable offset when the transaction was aborted: every transaction aborted later
    /// starts at or after it (which bounds searches).
    pub last_stable_offset: i64,
}

pub struct AbortedIndex {
    path: PathBuf,
    /// `None` until opened (a log builds its index once it knows its end).
    file: Option<Arc<File>>,
    entries: Vec<AbortedTxn>,
}

impl AbortedIndex {
    /// An index not yet read from `dir`; `open` replaces it.
    pub fn unopened(dir: &Path) -> Self {
        AbortedIndex {
            path: dir.join(FILE_NAME),
            file: None,
            entries: Vec::new(),
        }
    }

    /// Loads the index of the partition in `dir`, keeping entries whose marker is below
    /// `log_end_offset`.
    pub fn open(dir: &Path, log_end_offset: i64) -> Result<Self, LogError> {
        let path = dir.join(FILE_NAME);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(LogError::io(&path, e)),
        };
        let mut entries = Vec::with_capacity(bytes.len() / ENTRY_BYTES);
        for mut chunk in bytes.chunks_exact(ENTRY_BYTES) {
            if chunk.get_i16() != ENTRY_VERSION {
                break;
            }
            let entry = AbortedTxn {
                producer_id: chunk.get_i64(),
                first_offset: chunk.get_i64(),
                last_offset: chunk.get_i64(),
                last_stable_offset: chunk.get_i64(),
            };
            if entry.last_offset >= log_end_offset
                || entries
                    .last()
                    .is_some_and(|last: &AbortedTxn| last.last_offset >= entry.last_offset)
            {
                break;
            }
            entries.push(entry);
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| LogError::io(&path, e))?;
        let mut index = AbortedIndex {
            path,
            file: Some(Arc::new(file)),
            entries,
        };
        if index.entries.len() * ENTRY_BYTES != bytes.len() {
            index.rewrite()?;
        }
        Ok(index)
    }

    pub fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// The file and its path, for flushes (none before the index is opened).
    pub fn file(&self) -> Option<(Arc<File>, PathBuf)> {
        Some((Arc::clone(self.file.as_ref()?), self.path.clone()))
    }

    /// Records an aborted transaction; a marker already indexed (replay) is skipped.
    pub fn append(&mut self, entry: AbortedTxn) -> Result<(), LogError> {
        if self
            .entries
            .last()
            .is_some_and(|last| last.last_offset >= entry.last_offset)
        {
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(ENTRY_BYTES);
        encode(&entry, &mut bytes);
        let file = self.file.as_ref().ok_or_else(|| {
            LogError::io(
                &self.path,
                std::io::Error::other("aborted index not opened"),
            )
        })?;
        (&**file)
            .write_all(&bytes)
            .map_err(|e| LogError::io(&self.path, e))?;
        self.entries.push(entry);
        Ok(())
    }

    /// Aborted transactions with records in `[from, to)`: marker at or after `from`, first
    /// offset before `to`.
    pub fn overlapping(&self, from: i64, to: i64) -> Vec<AbortedTxn> {
        let start = self.entries.partition_point(|e| e.last_offset < from);
        let mut found = Vec::new();
        for entry in &self.entries[start..] {
            if entry.first_offset < to {
                found.push(*entry);
            }
            if entry.last_stable_offset >= to {
                break;
            }
        }
        found
    }

    /// Drops entries whose marker is at or after `offset` (truncation).
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), LogError> {
        let keep = self.entries.partition_point(|e| e.last_offset < offset);
        if keep < self.entries.len() {
            self.entries.truncate(keep);
            self.rewrite()?;
        }
        Ok(())
    }

    /// Drops entries wholly below the log start (retention).
    pub fn trim_below(&mut self, log_start_offset: i64) -> Result<(), LogError> {
        let drop = self
            .entries
            .partition_point(|e| e.last_offset < log_start_offset);
        if drop > 0 {
            self.entries.drain(..drop);
            self.rewrite()?;
        }
        Ok(())
    }

    fn rewrite(&mut self) -> Result<(), LogError> {
        let mut bytes = Vec::with_capacity(self.entries.len() * ENTRY_BYTES);
        for entry in &self.entries {
            encode(entry, &mut bytes);
        }
        crate::durable_file::replace(&self.path, &bytes)
            .map_err(|e| LogError::io(&self.path, e))?;
        let file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| LogError::io(&self.path, e))?;
        self.file = Some(Arc::new(file));
        Ok(())
    }
}

fn encode(entry: &AbortedTxn, out: &mut Vec<u8>) {
    out.put_i16(ENTRY_VERSION);
    out.put_i64(entry.producer_id);
    out.put_i64(entry.first_offset);
    out.put_i64(entry.last_offset);
    out.put_i64(entry.last_stable_offset);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(producer_id: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn entries_persist_and_a_cut_log_drops_the_ones_past_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = AbortedIndex::open(dir.path(), 0).unwrap();
        index.append(entry(1, 0, 5, 0)).unwrap();
        index.append(entry(2, 3, 9, 3)).unwrap();
        index.append(entry(2, 3, 9, 3)).unwrap(); // replayed: skipped
        index.append(entry(3, 10, 20, 10)).unwrap();
        drop(index);
        let reopened = AbortedIndex::open(dir.path(), 15).unwrap();
        assert_eq!(reopened.entries(), &[entry(1, 0, 5, 0), entry(2, 3, 9, 3)]);
        drop(reopened);
        let again = AbortedIndex::open(dir.path(), 100).unwrap();
        assert_eq!(
            again.entries().len(),
            2,
            "the dropped entry is gone from the file too"
        );
    }

    #[test]
    fn overlapping_finds_transactions_with_records_in_range() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = AbortedIndex::open(dir.path(), 0).unwrap();
        // In marker order; producer 2's transaction (from 2) is open when 3's is aborted.
        index.append(entry(1, 0, 5, 0)).unwrap();
        index.append(entry(3, 12, 15, 2)).unwrap();
        index.append(entry(2, 2, 30, 31)).unwrap(); // long: started at 2, aborted at 30
        index.append(entry(4, 40, 45, 46)).unwrap();
        let producers = |from, to| -> Vec<i64> {
            index
                .overlapping(from, to)
                .iter()
                .map(|e| e.producer_id)
                .collect()
        };
        assert_eq!(producers(6, 11), vec![2]);
        assert_eq!(producers(0, 13), vec![1, 3, 2]);
        assert_eq!(producers(16, 40), vec![2]);
        assert_eq!(producers(31, 50), vec![4]);
    }

    #[test]
    fn truncation_and_retention_drop_entries() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = AbortedIndex::open(dir.path(), 0).unwrap();
        for i in 0..5 {
            index.append(entry(i, i * 10, i * 10 + 5, i * 10)).unwrap();
        }
        index.truncate_to(35).unwrap();
        index.trim_below(10).unwrap();
        let lasts: Vec<i64> = index.entries().iter().map(|e| e.last_offset).collect();
        assert_eq!(lasts, vec![15, 25]);
        index.append(entry(9, 30, 33, 30)).unwrap();
        drop(index);
        let reopened = AbortedIndex::open(dir.path(), 100).unwrap();
        let lasts: Vec<i64> = reopened.entries().iter().map(|e| e.last_offset).collect();
        assert_eq!(lasts, vec![15, 25, 33]);
    }
}
