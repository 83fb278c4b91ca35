//! Producer state snapshots: `<offset>.snapshot` in the partition directory holds the producer
//! state as of that offset (everything before it applied). Written when a segment rolls and at a
//! clean shutdown; after a restart the newest snapshot not beyond the log end is loaded and the
//! batches after it are replayed, so deduplication survives a kill -9.
//!
//! Format (big-endian): magic "WPS2", entry count u32, then per producer: id i64, epoch i16,
//! last append ms i64, open transaction's first offset i64 (-1: none), coordinator epoch i32,
//! batch count u8, and per batch: first sequence i32, last sequence i32,
//! first offset i64, last offset i64; a CRC-32C of everything before it closes the file. A file
//! that does not check out is ignored (the state is then rebuilt from an older snapshot or the
//! whole log).

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

use bytes::{Buf, BufMut};

use crate::log::error::LogError;
use crate::log::segment::segment_file_name;
use crate::producer::state::{BatchMetadata, ProducerEntry, BATCHES_REMEMBERED};

const MAGIC: &[u8; 4] = b"WPS2";
const EXTENSION: &str = "snapshot";
/// Snapshots kept per partition; older ones are deleted after a new one is written.
const SNAPSHOTS_KEPT: usize = 2;

/// Producer id → state, as a snapshot holds it.
pub type Producers = BTreeMap<i64, ProducerEntry>;

pub fn path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(segment_file_name(offset, EXTENSION))
}

pub fn encode(producers: &BTreeMap<i64, ProducerEntry>) -> Vec<u8> {
    let mut buf = Vec::with_capacity(8 + producers.len() * 64);
    buf.put_slice(MAGIC);
    buf.put_u32(producers.len() as u32);
    for (id, entry) in producers {
        buf.put_i64(*id);
        buf.put_i16(entry.epoch);
        buf.put_i64(entry.last_append_ms);
        buf.put_i64(entry.current_txn_first_offset.unwrap_or(-1));
        buf.put_i32(entry.coordinator_epoch);
        buf.put_u8(entry.batches.len() as u8);
        for batch in &entry.batches {
            buf.put_i32(batch.first_sequence);
            buf.put_i32(batch.last_sequence);
            buf.put_i64(batch.first_offset);
            buf.put_i64(batch.last_offset);
        }
    }
    let crc = crc32c::crc32c(&buf);
    buf.put_u32(crc);
    buf
}

pub fn decode(bytes: &[u8]) -> Option<BTreeMap<i64, ProducerEntry>> {
    if bytes.len() < MAGIC.len() + 8 {
        return None;
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32c::crc32c(body) != u32::from_be_bytes(crc.try_into().ok()?) {
        return None;
    }
    let mut buf = body.strip_prefix(MAGIC.as_slice())?;
    let count = buf.get_u32();
    let mut producers = BTreeMap::new();
    for _ in 0..count {
        if buf.remaining() < 31 {
            return None;
        }
        let id = buf.get_i64();
        let epoch = buf.get_i16();
        let last_append_ms = buf.get_i64();
        let current_txn_first_offset = Some(buf.get_i64()).filter(|offset| *offset >= 0);
        let coordinator_epoch = buf.get_i32();
        let batch_count = buf.get_u8() as usize;
        if batch_count > BATCHES_REMEMBERED || buf.remaining() < batch_count * 24 {
            return None;
        }
        let batches: VecDeque<BatchMetadata> = (0..batch_count)
            .map(|_| BatchMetadata {
                first_sequence: buf.get_i32(),
                last_sequence: buf.get_i32(),
                first_offset: buf.get_i64(),
                last_offset: buf.get_i64(),
            })
            .collect();
        producers.insert(
            id,
            ProducerEntry {
                epoch,
                batches,
                last_append_ms,
                current_txn_first_offset,
                coordinator_epoch,
            },
        );
    }
    buf.is_empty().then_some(producers)
}

/// Writes the snapshot at `offset` and deletes all but the newest `SNAPSHOTS_KEPT`. Not fsynced:
/// a snapshot lost or torn in a crash (the CRC tells) only means replaying from an older one or
/// from the log start, which gives the same state.
pub fn write(
    dir: &Path,
    offset: i64,
    producers: &BTreeMap<i64, ProducerEntry>,
) -> Result<(), LogError> {
    let path = path(dir, offset);
    let temporary = path.with_extension("snapshot.tmp");
    fs::write(&temporary, encode(producers)).map_err(|e| LogError::io(&temporary, e))?;
    fs::rename(&temporary, &path).map_err(|e| LogError::io(&path, e))?;
    let offsets = list(dir)?;
    for old in offsets.iter().rev().skip(SNAPSHOTS_KEPT) {
        remove(dir, *old)?;
    }
    Ok(())
}

/// Offsets of the snapshots in `dir`, ascending.
pub fn list(dir: &Path) -> Result<Vec<i64>, LogError> {
    let mut offsets = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| LogError::io(dir, e))? {
        let entry = entry.map_err(|e| LogError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(offset) = name
            .strip_suffix(&format!(".{EXTENSION}"))
            .and_then(|stem| stem.parse::<i64>().ok())
        {
            offsets.push(offset);
        }
    }
    offsets.sort_unstable();
    Ok(offsets)
}

pub fn remove(dir: &Path, offset: i64) -> Result<(), LogError> {
    let path = path(dir, offset);
    match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LogError::io(&path, e)),
    }
}

/// The newest readable snapshot at or below `max_offset`, with its offset. Snapshots above
/// `max_offset` (the log was cut below them) are deleted.
pub fn load_latest(dir: &Path, max_offset: i64) -> Result<Option<(i64, Producers)>, LogError> {
    for offset in list(dir)?.into_iter().rev() {
        if offset > max_offset {
            remove(dir, offset)?;
            continue;
        }
        let path = path(dir, offset);
        match fs::read(&path).ok().as_deref().and_then(decode) {
            Some(producers) => return Ok(Some((offset, producers))),
            None => {
                tracing::warn!(snapshot = %path.display(), "ignoring an unreadable producer snapshot")
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn producers() -> BTreeMap<i64, ProducerEntry> {
        let mut map = BTreeMap::new();
        map.insert(
            42,
            ProducerEntry {
                epoch: 3,
                batches: (0..3)
                    .map(|i| BatchMetadata {
                        first_sequence: i * 10,
                        last_sequence: i * 10 + 9,
                        first_offset: 100 + i as i64 * 10,
                        last_offset: 109 + i as i64 * 10,
                    })
                    .collect(),
                last_append_ms: 1_700_000_000_000,
                current_txn_first_offset: Some(100),
                coordinator_epoch: 2,
            },
        );
        map.insert(
            7,
            ProducerEntry {
                epoch: 0,
                batches: VecDeque::new(),
                last_append_ms: 5,
                current_txn_first_offset: None,
                coordinator_epoch: -1,
            },
        );
        map
    }

    #[test]
    fn snapshots_round_trip_and_damage_is_detected() {
        let bytes = encode(&producers());
        assert_eq!(decode(&bytes), Some(producers()));
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[10] ^= 1;
        assert_eq!(decode(&flipped), None);
    }

    #[test]
    fn the_newest_snapshot_not_beyond_the_log_end_is_loaded() {
        let dir = tempfile::tempdir().unwrap();
        for offset in [10, 20, 30] {
            write(dir.path(), offset, &producers()).unwrap();
        }
        assert_eq!(list(dir.path()).unwrap(), vec![20, 30], "two kept");
        std::fs::write(path(dir.path(), 25), b"garbage").unwrap();
        let (offset, loaded) = load_latest(dir.path(), 27).unwrap().unwrap();
        assert_eq!(
            (offset, loaded),
            (20, producers()),
            "25 is unreadable, 30 is beyond"
        );
        assert_eq!(list(dir.path()).unwrap(), vec![20, 25], "30 deleted");
    }
}
