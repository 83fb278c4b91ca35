//! Sparse indexes of a segment, kept in memory and written beside the segment when it is sealed.
//!
//! - Offset index (`.index`): entries of (offset relative to the segment base: u32, byte position:
//!   u32), one per `index.interval.bytes` of log, pointing at the *start of a batch*; offsets
//!   strictly increase.
//! - Time index (`.timeindex`): entries of (max timestamp so far: i64, relative offset: u32) of the
//!   batch that reached it; timestamps strictly increase.
//!
//! Index files are an optimisation: a missing or inconsistent one is rebuilt from the log.

use std::fs;
use std::path::Path;

const OFFSET_ENTRY_BYTES: usize = 8;
const TIME_ENTRY_BYTES: usize = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetEntry {
    pub relative_offset: u32,
    pub position: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeEntry {
    pub timestamp: i64,
    pub relative_offset: u32,
}

/// Offset → position of the batch starting at or before that offset.
#[derive(Debug, Default, Clone)]
pub struct OffsetIndex {
    entries: Vec<OffsetEntry>,
}

impl OffsetIndex {
    pub fn append(&mut self, relative_offset: u32, position: u32) {
        if let Some(last) = self.entries.last() {
            if last.relative_offset >= relative_offset {
                return;
            }
        }
        self.entries.push(OffsetEntry {
            relative_offset,
            position,
        });
    }

    /// The last entry whose offset is ≤ `relative_offset`.
    pub fn lookup(&self, relative_offset: u32) -> Option<OffsetEntry> {
        let index = self
            .entries
            .partition_point(|entry| entry.relative_offset <= relative_offset);
        index.checked_sub(1).map(|i| self.entries[i])
    }

    pub fn last(&self) -> Option<OffsetEntry> {
        self.entries.last().copied()
    }

    /// Drops entries at or beyond `position` (after a truncation).
    pub fn truncate_to_position(&mut self, position: u32) {
        self.entries.retain(|entry| entry.position < position);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn write_to(&self, path: &Path) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(self.entries.len() * OFFSET_ENTRY_BYTES);
        for entry in &self.entries {
            bytes.extend_from_slice(&entry.relative_offset.to_be_bytes());
            bytes.extend_from_slice(&entry.position.to_be_bytes());
        }
        crate::durable_file::replace(path, &bytes)
    }

    /// Loads an index file; `None` when it is missing or inconsistent with a segment of
    /// `segment_bytes` bytes (then the caller rebuilds it).
    pub fn load(path: &Path, segment_bytes: u64) -> Option<Self> {
        let bytes = fs::read(path).ok()?;
        if bytes.len() % OFFSET_ENTRY_BYTES != 0 {
            return None;
        }
        let mut index = OffsetIndex::default();
        for chunk in bytes.chunks_exact(OFFSET_ENTRY_BYTES) {
            let relative_offset = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            let position = u32::from_be_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]);
            let increasing = index.entries.last().is_none_or(|last| {
                last.relative_offset < relative_offset && last.position < position
            });
            if !increasing || position as u64 >= segment_bytes {
                return None;
            }
            index.entries.push(OffsetEntry {
                relative_offset,
                position,
            });
        }
        Some(index)
    }
}

/// Timestamp → offset of the first batch that reached it.
#[derive(Debug, Default, Clone)]
pub struct TimeIndex {
    entries: Vec<TimeEntry>,
}

impl TimeIndex {
    pub fn append(&mut self, timestamp: i64, relative_offset: u32) {
        if let Some(last) = self.entries.last() {
            if last.timestamp >= timestamp || last.relative_offset > relative_offset {
                return;
            }
        }
        self.entries.push(TimeEntry {
            timestamp,
            relative_offset,
        });
    }

    /// The last entry with a timestamp strictly below `timestamp`: every batch before its offset
    /// has a timestamp below the target, so a search can start there.
    pub fn last_below(&self, timestamp: i64) -> Option<TimeEntry> {
        let index = self
            .entries
            .partition_point(|entry| entry.timestamp < timestamp);
        index.checked_sub(1).map(|i| self.entries[i])
    }

    pub fn last(&self) -> Option<TimeEntry> {
        self.entries.last().copied()
    }

    pub fn truncate_to_offset(&mut self, relative_offset: u32) {
        self.entries
            .retain(|entry| entry.relative_offset < relative_offset);
    }

    pub fn write_to(&self, path: &Path) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(self.entries.len() * TIME_ENTRY_BYTES);
        for entry in &self.entries {
            bytes.extend_from_slice(&entry.timestamp.to_be_bytes());
            bytes.extend_from_slice(&entry.relative_offset.to_be_bytes());
        }
        crate::durable_file::replace(path, &bytes)
    }

    pub fn load(path: &Path) -> Option<Self> {
        let bytes = fs::read(path).ok()?;
        if bytes.len() % TIME_ENTRY_BYTES != 0 {
            return None;
        }
        let mut index = TimeIndex::default();
        for chunk in bytes.chunks_exact(TIME_ENTRY_BYTES) {
            let mut timestamp_bytes = [0u8; 8];
            timestamp_bytes.copy_from_slice(&chunk[..8]);
            let timestamp = i64::from_be_bytes(timestamp_bytes);
            let relative_offset = u32::from_be_bytes([chunk[8], chunk[9], chunk[10], chunk[11]]);
            let increasing = index.entries.last().is_none_or(|last| {
                last.timestamp < timestamp && last.relative_offset <= relative_offset
            });
            if !increasing {
                return None;
            }
            index.entries.push(TimeEntry {
                timestamp,
                relative_offset,
            });
        }
        Some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_lookup_finds_floor_entry() {
        let mut index = OffsetIndex::default();
        index.append(0, 0);
        index.append(10, 4100);
        index.append(20, 8200);
        assert_eq!(index.lookup(0).unwrap().position, 0);
        assert_eq!(index.lookup(15).unwrap().position, 4100);
        assert_eq!(index.lookup(99).unwrap().position, 8200);
        index.truncate_to_position(8200);
        assert_eq!(index.lookup(99).unwrap().position, 4100);
    }

    #[test]
    fn corrupt_index_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.index");
        let mut index = OffsetIndex::default();
        index.append(0, 0);
        index.append(5, 100);
        index.write_to(&path).unwrap();
        assert_eq!(OffsetIndex::load(&path, 200).unwrap().len(), 2);
        assert!(
            OffsetIndex::load(&path, 50).is_none(),
            "position beyond segment"
        );
        fs::write(&path, [0u8; 16]).unwrap();
        assert!(
            OffsetIndex::load(&path, 200).is_none(),
            "zero-filled entries"
        );
        fs::write(&path, [0u8; 7]).unwrap();
        assert!(OffsetIndex::load(&path, 200).is_none(), "partial entry");
    }

    #[test]
    fn time_index_last_below_is_strict() {
        let mut index = TimeIndex::default();
        index.append(100, 0);
        index.append(200, 5);
        assert_eq!(index.last_below(100), None);
        assert_eq!(index.last_below(150).unwrap().relative_offset, 0);
        assert_eq!(index.last_below(201).unwrap().relative_offset, 5);
    }
}
