//! A table topic's state as versions: per key, its values (and tombstones) by timestamp, so a
//! stream record finds the value current at its event time.
//!
//! Versions older than the history retention are kept only while they are still the current
//! one: at stream time `T` (the largest timestamp applied), a lookup for any time at or after
//! `T - history_ms` needs, per key, the versions after that cutoff and the last one before it.
//! An update older than the cutoff is not applied (it could only answer lookups nobody may make
//! any more) and is reported as such, as Kafka Streams' versioned stores drop it. Two versions
//! with the same timestamp: the later one (by arrival, i.e. offset) replaces the earlier.
//!
//! Bounded: at most `max_entries` versions over all keys; past it `apply` fails rather than
//! grow. Superseded versions of keys that are not updated again are swept whenever the versions
//! held have doubled since the last sweep (so sweeping costs O(1) per update, amortized).

use std::collections::HashMap;

/// No sweep below this many versions.
const MIN_SWEEP_ENTRIES: usize = 64;

/// Why an update was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the table holds {max_entries} versions, its bound (raise --max-state-entries)")]
    Full { max_entries: usize },
}

/// What applying one update did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Recorded as a version.
    Stored,
    /// Older than the history retention allows; not recorded.
    TooOld,
}

#[derive(Debug, Clone)]
struct Version<V> {
    timestamp_ms: i64,
    /// `None`: a tombstone (the key is absent from this time on).
    value: Option<V>,
}

pub struct VersionedTable<V> {
    keys: HashMap<Vec<u8>, Vec<Version<V>>>,
    /// Versions held over all keys.
    entries: usize,
    max_entries: usize,
    history_ms: i64,
    /// The largest timestamp applied so far.
    stream_time_ms: i64,
    /// Sweep when `entries` reaches this.
    next_sweep_entries: usize,
}

impl<V> VersionedTable<V> {
    pub fn new(history_ms: i64, max_entries: usize) -> Self {
        VersionedTable {
            keys: HashMap::new(),
            entries: 0,
            max_entries,
            history_ms: history_ms.max(0),
            stream_time_ms: i64::MIN,
            next_sweep_entries: MIN_SWEEP_ENTRIES,
        }
    }

    /// Versions held (what `max_entries` bounds).
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Keys with at least one version (present or deleted within the history).
    pub fn keys(&self) -> usize {
        self.keys.len()
    }

    /// Lookups for times before this are not answered by history (see the module tour).
    fn cutoff_ms(&self) -> i64 {
        self.stream_time_ms.saturating_sub(self.history_ms)
    }

    /// Records `value` (`None`: a tombstone) for `key` from `timestamp_ms` on.
    pub fn apply(
        &mut self,
        key: &[u8],
        timestamp_ms: i64,
        value: Option<V>,
    ) -> Result<Applied, Refused> {
        if timestamp_ms < self.cutoff_ms() {
            return Ok(Applied::TooOld);
        }
        let versions = self.keys.entry(key.to_vec()).or_default();
        let at = versions.partition_point(|v| v.timestamp_ms <= timestamp_ms);
        let version = Version {
            timestamp_ms,
            value,
        };
        if at > 0 && versions[at - 1].timestamp_ms == timestamp_ms {
            versions[at - 1] = version;
        } else {
            if self.entries >= self.max_entries {
                if versions.is_empty() {
                    self.keys.remove(key);
                }
                return Err(Refused::Full {
                    max_entries: self.max_entries,
                });
            }
            versions.insert(at, version);
            self.entries += 1;
        }
        self.stream_time_ms = self.stream_time_ms.max(timestamp_ms);
        let cutoff = self.cutoff_ms();
        let versions = self.keys.get_mut(key).expect("just inserted");
        self.entries -= prune(versions, cutoff);
        if versions.is_empty() {
            self.keys.remove(key);
        }
        if self.entries >= self.next_sweep_entries {
            self.sweep();
        }
        Ok(Applied::Stored)
    }

    /// The value of `key` at `timestamp_ms`: its latest version not after that time, unless that
    /// version is a tombstone or there is none.
    pub fn get_as_of(&self, key: &[u8], timestamp_ms: i64) -> Option<&V> {
        let versions = self.keys.get(key)?;
        let at = versions.partition_point(|v| v.timestamp_ms <= timestamp_ms);
        versions.get(at.checked_sub(1)?)?.value.as_ref()
    }

    /// Drops what no lookup within the history can need, over all keys.
    fn sweep(&mut self) {
        let cutoff = self.cutoff_ms();
        let mut dropped = 0;
        self.keys.retain(|_, versions| {
            dropped += prune(versions, cutoff);
            !versions.is_empty()
        });
        self.entries -= dropped;
        self.next_sweep_entries = (2 * self.entries).max(MIN_SWEEP_ENTRIES);
    }
}

/// Drops the versions superseded before `cutoff` (keeping the last one at or before it); returns
/// how many were dropped.
/// Leading tombstones go too: a lookup before the first value finds nothing either way.
fn prune<V>(versions: &mut Vec<Version<V>>, cutoff: i64) -> usize {
    let current_at_cutoff = versions.partition_point(|v| v.timestamp_ms <= cutoff);
    let mut drop = current_at_cutoff.saturating_sub(1);
    while versions.get(drop).is_some_and(|v| v.value.is_none()) {
        drop += 1;
    }
    versions.drain(..drop);
    drop
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> VersionedTable<&'static str> {
        VersionedTable::new(1_000, 100)
    }

    #[test]
    fn a_lookup_finds_the_version_current_at_its_time() {
        let mut t = table();
        t.apply(b"c1", 100, Some("alice")).unwrap();
        t.apply(b"c1", 300, Some("alice smith")).unwrap();
        assert_eq!(t.get_as_of(b"c1", 99), None, "before its first version");
        assert_eq!(t.get_as_of(b"c1", 100), Some(&"alice"));
        assert_eq!(t.get_as_of(b"c1", 299), Some(&"alice"));
        assert_eq!(t.get_as_of(b"c1", 300), Some(&"alice smith"));
        assert_eq!(t.get_as_of(b"c1", i64::MAX), Some(&"alice smith"));
        assert_eq!(t.get_as_of(b"c2", 300), None);
    }

    #[test]
    fn a_tombstone_deletes_from_its_time_and_a_later_value_restores() {
        let mut t = table();
        t.apply(b"k", 100, Some("v1")).unwrap();
        t.apply(b"k", 200, None).unwrap();
        t.apply(b"k", 400, Some("v2")).unwrap();
        assert_eq!(t.get_as_of(b"k", 150), Some(&"v1"));
        assert_eq!(t.get_as_of(b"k", 200), None);
        assert_eq!(t.get_as_of(b"k", 399), None);
        assert_eq!(t.get_as_of(b"k", 400), Some(&"v2"));
    }

    #[test]
    fn out_of_order_updates_take_their_place_and_equal_times_replace() {
        let mut t = table();
        t.apply(b"k", 300, Some("third")).unwrap();
        t.apply(b"k", 100, Some("first")).unwrap();
        t.apply(b"k", 200, Some("second")).unwrap();
        t.apply(b"k", 200, Some("second, corrected")).unwrap();
        assert_eq!(t.get_as_of(b"k", 150), Some(&"first"));
        assert_eq!(t.get_as_of(b"k", 250), Some(&"second, corrected"));
        assert_eq!(t.get_as_of(b"k", 300), Some(&"third"));
        assert_eq!(t.entries(), 3);
    }

    #[test]
    fn history_older_than_the_retention_is_dropped_but_the_current_value_stays() {
        let mut t = table();
        t.apply(b"k", 100, Some("old")).unwrap();
        t.apply(b"k", 500, Some("newer")).unwrap();
        t.apply(b"other", 2_000, Some("x")).unwrap();
        // Stream time 2000, history 1000: lookups from 1000 on are answered; "old" is gone
        // (superseded before the cutoff) when k is next touched or swept, "newer" stays.
        t.apply(b"k", 2_000, Some("newest")).unwrap();
        assert_eq!(t.get_as_of(b"k", 1_500), Some(&"newer"));
        assert_eq!(t.get_as_of(b"k", 2_000), Some(&"newest"));
        assert_eq!(t.entries(), 3, "k: newer + newest; other: x");
        assert_eq!(t.apply(b"k", 900, Some("late")), Ok(Applied::TooOld));
        assert_eq!(t.get_as_of(b"k", 1_500), Some(&"newer"));
    }

    #[test]
    fn a_key_deleted_before_the_cutoff_is_forgotten() {
        let mut t = table();
        t.apply(b"gone", 100, Some("v")).unwrap();
        t.apply(b"gone", 200, None).unwrap();
        t.apply(b"gone", 5_000, None).unwrap();
        assert_eq!(
            t.keys(),
            0,
            "only tombstones before the cutoff: nothing to keep"
        );
        assert_eq!(t.entries(), 0);
        t.apply(b"never-seen", 5_000, None).unwrap();
        assert_eq!(t.keys(), 0, "a tombstone for an absent key changes nothing");
    }

    #[test]
    fn versions_of_keys_not_updated_again_are_swept() {
        let mut t = VersionedTable::new(10, 10_000);
        for key in 0..100u32 {
            t.apply(&key.to_be_bytes(), 1, Some(key)).unwrap();
            t.apply(&key.to_be_bytes(), 2, Some(key + 1_000)).unwrap();
        }
        assert_eq!(
            t.entries(),
            200,
            "sweeps at 64 and 128 found nothing to drop"
        );
        // Time moves on through other keys only; at 256 versions the sweep drops each first
        // version of the 100 keys (superseded long before the cutoff).
        for clock in 0..60u32 {
            t.apply(
                &(1_000_000 + clock).to_be_bytes(),
                1_000 + i64::from(clock),
                Some(0),
            )
            .unwrap();
        }
        assert_eq!(t.entries(), 160);
        assert_eq!(t.get_as_of(&7u32.to_be_bytes(), 1_100), Some(&1_007));
    }

    #[test]
    fn the_bound_refuses_a_new_version_and_keeps_what_is_held() {
        let mut t = VersionedTable::new(1_000_000, 3);
        for (key, ts) in [(b"a", 1), (b"b", 2), (b"c", 3)] {
            t.apply(key, ts, Some("v")).unwrap();
        }
        assert_eq!(
            t.apply(b"d", 4, Some("v")),
            Err(Refused::Full { max_entries: 3 })
        );
        assert_eq!(t.get_as_of(b"d", 4), None);
        assert_eq!(t.keys(), 3);
        // Replacing a version at the same time adds nothing, so it is still taken.
        assert_eq!(t.apply(b"a", 1, Some("w")), Ok(Applied::Stored));
        assert_eq!(t.get_as_of(b"a", 1), Some(&"w"));
    }
}
