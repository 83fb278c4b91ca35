//! The leader epoch cache (Kafka's `leader-epoch-checkpoint`, KIP-101): for every leader epoch
//! this log holds data of, the first offset written in it. A follower that starts following a
//! new leader asks it where its own latest epoch ends (OffsetForLeaderEpoch) and truncates there,
//! so replicas never keep records a later leader does not have (KIP-279).
//!
//! Invariants: epochs and start offsets both strictly increase; every entry starts below the
//! log end (entries past it are dropped when the log is cut) and the first one is moved up to
//! the log start when older data goes. The file is Kafka's text format (`0`, the entry count,
//! then `epoch start_offset` lines), rewritten whole and fsynced on each change — once per new
//! epoch, not per append.

use std::fs;
use std::path::{Path, PathBuf};

use crate::durable_file;
use crate::log::error::LogError;

pub const LEADER_EPOCH_FILE: &str = "leader-epoch-checkpoint";
const FORMAT_VERSION: &str = "0";

/// "No such epoch" in OffsetForLeaderEpoch answers.
pub const UNDEFINED_EPOCH: i32 = -1;
/// "No such offset" in OffsetForLeaderEpoch answers.
pub const UNDEFINED_OFFSET: i64 = -1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

#[derive(Debug)]
pub struct LeaderEpochCache {
    path: PathBuf,
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    /// The cache saved in `dir`, or `None` when there is none (a log from before clusters: the
    /// caller rebuilds it from the batches).
    pub fn load(dir: &Path) -> Result<Option<Self>, LogError> {
        let path = dir.join(LEADER_EPOCH_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(LogError::io(&path, error)),
        };
        let entries =
            parse(&text).ok_or_else(|| LogError::CorruptCheckpoint { path: path.clone() })?;
        Ok(Some(LeaderEpochCache { path, entries }))
    }

    pub fn empty(dir: &Path) -> Self {
        LeaderEpochCache {
            path: dir.join(LEADER_EPOCH_FILE),
            entries: Vec::new(),
        }
    }

    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|entry| entry.epoch)
    }

    /// Data of `epoch` begins at `start_offset`: recorded if it is a newer epoch than the latest.
    /// Returns whether the cache changed (the caller persists it).
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> bool {
        if epoch < 0 {
            return false;
        }
        match self.entries.last() {
            Some(last) if epoch <= last.epoch || start_offset < last.start_offset => false,
            _ => {
                self.entries.push(EpochEntry {
                    epoch,
                    start_offset,
                });
                true
            }
        }
    }

    /// Where `requested` epoch ends, as Kafka answers it: the latest epoch ends at the log end;
    /// an older one where the next epoch this log knows begins, reported with the largest epoch
    /// at or below the requested one; an unknown newer one is undefined.
    pub fn end_offset_for(&self, requested: i32, log_end_offset: i64) -> (i32, i64) {
        let Some(latest) = self.entries.last() else {
            return (UNDEFINED_EPOCH, UNDEFINED_OFFSET);
        };
        if requested < 0 || requested > latest.epoch {
            return (UNDEFINED_EPOCH, UNDEFINED_OFFSET);
        }
        if requested == latest.epoch {
            return (requested, log_end_offset);
        }
        let higher = self
            .entries
            .iter()
            .find(|entry| entry.epoch > requested)
            .expect("the latest epoch is above the requested one");
        let floor = self
            .entries
            .iter()
            .rev()
            .find(|entry| entry.epoch <= requested)
            .map_or(requested, |entry| entry.epoch);
        (floor, higher.start_offset)
    }

    /// The log was cut at `log_end_offset`: epochs that began there or later are gone.
    pub fn truncate_from_end(&mut self, log_end_offset: i64) -> bool {
        let before = self.entries.len();
        self.entries
            .retain(|entry| entry.start_offset < log_end_offset);
        self.entries.len() != before
    }

    /// Data below `log_start_offset` is gone: the epoch holding it now starts there.
    pub fn truncate_from_start(&mut self, log_start_offset: i64) -> bool {
        let holding = self
            .entries
            .iter()
            .rposition(|entry| entry.start_offset <= log_start_offset);
        let Some(holding) = holding else {
            return false;
        };
        let moved = self.entries[holding].start_offset != log_start_offset;
        self.entries[holding].start_offset = log_start_offset;
        self.entries.drain(..holding);
        moved || holding > 0
    }

    /// Writes the cache (whole, fsynced).
    pub fn persist(&self) -> Result<(), LogError> {
        let mut text = format!("{FORMAT_VERSION}\n{}\n", self.entries.len());
        for entry in &self.entries {
            text.push_str(&format!("{} {}\n", entry.epoch, entry.start_offset));
        }
        durable_file::replace(&self.path, text.as_bytes()).map_err(|e| LogError::io(&self.path, e))
    }
}

fn parse(text: &str) -> Option<Vec<EpochEntry>> {
    let mut lines = text.lines();
    if lines.next()?.trim() != FORMAT_VERSION {
        return None;
    }
    let count: usize = lines.next()?.trim().parse().ok()?;
    let mut entries: Vec<EpochEntry> = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        let mut fields = lines.next()?.split_whitespace();
        let epoch = fields.next()?.parse().ok()?;
        let start_offset = fields.next()?.parse().ok()?;
        let ordered = entries
            .last()
            .is_none_or(|last| epoch > last.epoch && start_offset >= last.start_offset);
        if !ordered {
            return None;
        }
        entries.push(EpochEntry {
            epoch,
            start_offset,
        });
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: &[(i32, i64)]) -> LeaderEpochCache {
        let mut cache = LeaderEpochCache::empty(Path::new("/nonexistent"));
        for (epoch, start) in entries {
            assert!(cache.assign(*epoch, *start));
        }
        cache
    }

    #[test]
    fn end_offsets_follow_kafkas_rules() {
        let cache = cache(&[(1, 0), (3, 10), (4, 25)]);
        assert_eq!(
            cache.end_offset_for(4, 40),
            (4, 40),
            "latest ends at log end"
        );
        assert_eq!(cache.end_offset_for(3, 40), (3, 25));
        assert_eq!(
            cache.end_offset_for(2, 40),
            (1, 10),
            "floor epoch, next start"
        );
        assert_eq!(cache.end_offset_for(0, 40), (0, 0), "below the first epoch");
        assert_eq!(
            cache.end_offset_for(5, 40),
            (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
        );
        assert_eq!(
            cache.end_offset_for(-1, 40),
            (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
        );
        let empty = LeaderEpochCache::empty(Path::new("/nonexistent"));
        assert_eq!(
            empty.end_offset_for(0, 0),
            (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
        );
    }

    #[test]
    fn only_newer_epochs_are_assigned() {
        let mut cache = cache(&[(2, 5)]);
        assert!(!cache.assign(2, 9), "same epoch again");
        assert!(!cache.assign(1, 9), "older epoch");
        assert!(
            !cache.assign(3, 4),
            "newer epoch starting before the latest"
        );
        assert!(cache.assign(3, 9));
        assert_eq!(cache.latest_epoch(), Some(3));
    }

    #[test]
    fn truncation_drops_and_moves_entries() {
        let mut cache = cache(&[(1, 0), (3, 10), (4, 25)]);
        assert!(cache.truncate_from_end(25));
        assert_eq!(cache.latest_epoch(), Some(3));
        assert!(!cache.truncate_from_end(30));
        assert!(cache.truncate_from_start(12));
        assert_eq!(
            cache.entries(),
            &[EpochEntry {
                epoch: 3,
                start_offset: 12
            }]
        );
    }

    #[test]
    fn persists_in_kafkas_format_and_refuses_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let mut cache = LeaderEpochCache::empty(dir.path());
        cache.assign(0, 0);
        cache.assign(7, 42);
        cache.persist().unwrap();
        let text = fs::read_to_string(dir.path().join(LEADER_EPOCH_FILE)).unwrap();
        assert_eq!(text, "0\n2\n0 0\n7 42\n");
        let loaded = LeaderEpochCache::load(dir.path()).unwrap().unwrap();
        assert_eq!(loaded.entries(), cache.entries());
        fs::write(dir.path().join(LEADER_EPOCH_FILE), "0\n2\n7 42\n0 0\n").unwrap();
        assert!(matches!(
            LeaderEpochCache::load(dir.path()),
            Err(LogError::CorruptCheckpoint { .. })
        ));
        assert!(LeaderEpochCache::load(&dir.path().join("none"))
            .unwrap()
            .is_none());
    }
}
