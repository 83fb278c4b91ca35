//! Session windows: a key's records close together in event time form one session, which ends
//! `gap` after its last record. Sessions merge as records arrive — a record (or a partial
//! session) within `gap` of two sessions joins them into one — so, unlike tumbling and hopping
//! windows, a session's bounds are known only once no record can extend it any more.
//!
//! A session `[start, last]` covers `[start, last + gap)`; two sessions merge when those ranges
//! intersect. Merging is associative, so the input partitions' owners merge their checkpoint's
//! records into partial sessions and the group's owner merges the partials (`store`).
//!
//! Lateness is what keeps this exact: a session record is late when its event time is behind
//! its partition's watermark (the partition's largest event time minus the allowed lateness), and
//! a session is emitted once the merged watermark reaches its end. Every record that is not late
//! is then at or after the end of every emitted session of its key, so no accepted record could
//! have extended a session already emitted, whatever the checkpoints' boundaries were: the
//! sessions are those of all accepted records, each emitted once.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::aggregate::accumulator::Accumulator;
use crate::aggregate::datum::Datum;

/// One session's last event time and aggregates, by its start in [`SessionSet`].
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub last_ms: i64,
    pub accumulators: Vec<Accumulator>,
}

/// A key's sessions by start. Invariant: no two of them overlap within the gap, so their starts
/// and their last times are in the same order.
pub type SessionSet = BTreeMap<i64, Session>;

/// What adding a session to a set did.
#[derive(Debug, PartialEq)]
pub struct Added {
    /// The start of the session that now holds what was added.
    pub start_ms: i64,
    /// The sessions merged into it (removed from the set), by start, oldest first.
    pub merged: Vec<(i64, Session)>,
}

/// Where a session of `last_ms` ends: nothing at or after it belongs to it.
pub fn session_end(last_ms: i64, gap_ms: i64) -> i64 {
    last_ms.saturating_add(gap_ms)
}

/// The starts of the sessions of `set` that `[start_ms, last_ms]` overlaps within `gap_ms`,
/// oldest first.
pub fn overlapping(set: &SessionSet, gap_ms: i64, start_ms: i64, last_ms: i64) -> Vec<i64> {
    let mut starts: Vec<i64> = set
        .range(..session_end(last_ms, gap_ms))
        .rev()
        .take_while(|(_, session)| session_end(session.last_ms, gap_ms) > start_ms)
        .map(|(start, _)| *start)
        .collect();
    starts.reverse();
    starts
}

/// Adds the session `[start_ms, last_ms]` to `set`, merging every session it overlaps into it.
pub fn add(set: &mut SessionSet, gap_ms: i64, start_ms: i64, session: Session) -> Added {
    let mut merged = Vec::new();
    let (mut start, mut combined) = (start_ms, session);
    for overlapped in overlapping(set, gap_ms, start_ms, combined.last_ms) {
        let existing = set.remove(&overlapped).expect("found in the set");
        start = start.min(overlapped);
        combined.last_ms = combined.last_ms.max(existing.last_ms);
        for (into, from) in combined
            .accumulators
            .iter_mut()
            .zip(existing.accumulators.iter().cloned())
        {
            into.merge(from);
        }
        merged.push((overlapped, existing));
    }
    set.insert(start, combined);
    Added {
        start_ms: start,
        merged,
    }
}

/// The open sessions of one repartition partition: each key's set, and all of them by end, to
/// emit them in the order the watermark passes them.
#[derive(Default)]
pub struct OpenSessions {
    by_key: HashMap<Vec<Datum>, SessionSet>,
    /// (end, key, start) of every session.
    by_end: BTreeSet<(i64, Vec<Datum>, i64)>,
    gap_ms: i64,
}

impl OpenSessions {
    pub fn new(gap_ms: i64) -> Self {
        OpenSessions {
            gap_ms,
            ..OpenSessions::default()
        }
    }

    pub fn gap_ms(&self) -> i64 {
        self.gap_ms
    }

    pub fn len(&self) -> usize {
        self.by_end.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_end.is_empty()
    }

    /// The latest end of an open session.
    pub fn last_end(&self) -> Option<i64> {
        self.by_end.last().map(|(end, _, _)| *end)
    }

    pub fn get(&self, keys: &[Datum], start_ms: i64) -> Option<&Session> {
        self.by_key.get(keys)?.get(&start_ms)
    }

    /// The ends of the sessions of `keys` that `[start_ms, last_ms]` would merge with.
    pub fn overlapped_ends(&self, keys: &[Datum], start_ms: i64, last_ms: i64) -> Vec<i64> {
        let Some(set) = self.by_key.get(keys) else {
            return Vec::new();
        };
        overlapping(set, self.gap_ms, start_ms, last_ms)
            .into_iter()
            .map(|start| session_end(set[&start].last_ms, self.gap_ms))
            .collect()
    }

    /// Adds a (partial) session of `keys`, merging the sessions it overlaps.
    pub fn add(&mut self, keys: &[Datum], start_ms: i64, session: Session) -> Added {
        let set = self.by_key.entry(keys.to_vec()).or_default();
        let added = add(set, self.gap_ms, start_ms, session);
        for (start, merged) in &added.merged {
            let end = session_end(merged.last_ms, self.gap_ms);
            self.by_end.remove(&(end, keys.to_vec(), *start));
        }
        let end = session_end(set[&added.start_ms].last_ms, self.gap_ms);
        self.by_end.insert((end, keys.to_vec(), added.start_ms));
        added
    }

    /// Puts a session back as it was (restoring), replacing one with the same start.
    pub fn restore(&mut self, keys: &[Datum], start_ms: i64, session: Session) -> Option<Session> {
        let old = self.remove(keys, start_ms);
        let end = session_end(session.last_ms, self.gap_ms);
        self.by_end.insert((end, keys.to_vec(), start_ms));
        self.by_key
            .entry(keys.to_vec())
            .or_default()
            .insert(start_ms, session);
        old
    }

    pub fn remove(&mut self, keys: &[Datum], start_ms: i64) -> Option<Session> {
        let set = self.by_key.get_mut(keys)?;
        let session = set.remove(&start_ms)?;
        if set.is_empty() {
            self.by_key.remove(keys);
        }
        let end = session_end(session.last_ms, self.gap_ms);
        self.by_end.remove(&(end, keys.to_vec(), start_ms));
        Some(session)
    }

    /// Takes the sessions that end at or before `watermark`, in the order of their ends (then
    /// keys): (start, keys, session).
    pub fn take_ended(&mut self, watermark: i64) -> Vec<(i64, Vec<Datum>, Session)> {
        let mut ended = Vec::new();
        while let Some((end, keys, start)) = self.by_end.first().cloned() {
            if end > watermark {
                break;
            }
            let session = self.remove(&keys, start).expect("indexed by end");
            ended.push((start, keys, session));
        }
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::accumulator::AggregateKind;
    use crate::aggregate::datum::Datum;

    const GAP: i64 = 10;

    fn count_of(set: &SessionSet, start: i64) -> Datum {
        set[&start].accumulators[0].evaluate()
    }

    fn one(time: i64) -> Session {
        let mut accumulators = vec![AggregateKind::from_name("count", false).unwrap().start()];
        accumulators[0].update(&Datum::Int(time));
        Session {
            last_ms: time,
            accumulators,
        }
    }

    fn add_at(set: &mut SessionSet, time: i64) -> Added {
        add(set, GAP, time, one(time))
    }

    #[test]
    fn records_within_the_gap_form_one_session_and_a_gap_splits_them() {
        let mut set = SessionSet::new();
        for time in [100, 105, 114] {
            add_at(&mut set, time);
        }
        // 124 is exactly the gap after 114: the session [100, 114] ends at 124, so a new one.
        add_at(&mut set, 124);
        assert_eq!(set.keys().copied().collect::<Vec<_>>(), [100, 124]);
        assert_eq!(set[&100].last_ms, 114);
        assert_eq!(count_of(&set, 100), Datum::Int(3));
        assert_eq!(count_of(&set, 124), Datum::Int(1));
    }

    #[test]
    fn a_record_between_two_sessions_merges_them_and_says_which() {
        let mut set = SessionSet::new();
        add_at(&mut set, 100);
        add_at(&mut set, 118);
        add_at(&mut set, 140);
        let added = add_at(&mut set, 109);
        assert_eq!(added.start_ms, 100);
        assert_eq!(
            added.merged.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            [100, 118]
        );
        assert_eq!(set.keys().copied().collect::<Vec<_>>(), [100, 140]);
        assert_eq!(set[&100].last_ms, 118);
        assert_eq!(count_of(&set, 100), Datum::Int(3));
        // An out-of-order record before a session becomes its new start.
        let added = add_at(&mut set, 131);
        assert_eq!(added.start_ms, 131);
        assert_eq!(set.keys().copied().collect::<Vec<_>>(), [100, 131]);
        assert_eq!(set[&131].last_ms, 140);
    }

    #[test]
    fn partial_sessions_merge_to_what_the_records_make_in_any_grouping() {
        let times = [5, 40, 12, 31, 22, 60, 71, 3, 49, 90];
        let mut whole = SessionSet::new();
        for time in times {
            add_at(&mut whole, time);
        }
        // The same records merged first in two halves, then the halves' sessions together.
        let (mut left, mut right) = (SessionSet::new(), SessionSet::new());
        for (index, time) in times.into_iter().enumerate() {
            add_at(
                if index % 2 == 0 {
                    &mut left
                } else {
                    &mut right
                },
                time,
            );
        }
        for (start, session) in right {
            add(&mut left, GAP, start, session);
        }
        assert_eq!(left, whole);
        // 3 5 12 | 22 31 40 49 | 60 | 71 | 90: a gap of exactly 10 splits.
        let starts: Vec<i64> = whole.keys().copied().collect();
        assert_eq!(starts, [3, 22, 60, 71, 90]);
    }
}
