//! The event time of one state partition (a window store's or an interval join's), from the
//! times its input partitions announce through the repartition topic.
//!
//! Each input partition's owner sends, after the rows it covers, the largest event time the
//! partition has shown; the state partition's event time is the smallest of them once every
//! input partition has shown one (callers subtract the allowed lateness to get the watermark).
//! One input partition that gets no more records would hold it back for ever — a chained job's
//! input whose quiet partition got its last record early, or an empty partition — and with it
//! every window and every buffered join row. With an idle timeout (`--idle-timeout-ms`, Flink's
//! `table.exec.source.idle-timeout`), the owner announces a partition without records for that
//! long as idle: it is left out of the smallest until it shows a time again. The event time never
//! moves back: a partition coming back from idleness with older records finds windows already
//! emitted (its partials are too late) and join rows already dropped. Without idle partitions
//! this is exactly the smallest of the times, as before.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The input partitions' times and idleness, and the event time they give.
#[derive(Debug, Clone, Default)]
pub struct SourceClock<S: Ord> {
    times: BTreeMap<S, i64>,
    idle: BTreeSet<S>,
    /// The event time so far (None until every input partition has shown a time or idleness).
    event_time_ms: Option<i64>,
}

/// The idle input partitions and the event time reached, as the changelog holds them (next to
/// the times themselves, whose record predates idleness).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdleSources<S> {
    pub sources: Vec<S>,
    pub event_time_ms: Option<i64>,
}

impl<S: Ord + Copy> SourceClock<S> {
    /// `source` showed records up to `time_ms`: it is no longer idle.
    pub fn advance(&mut self, source: S, time_ms: i64, sources: usize) {
        let time = self.times.entry(source).or_insert(time_ms);
        *time = (*time).max(time_ms);
        self.idle.remove(&source);
        self.update(sources);
    }

    /// `source` had no records for the idle timeout.
    pub fn set_idle(&mut self, source: S, sources: usize) {
        self.idle.insert(source);
        self.update(sources);
    }

    /// The event time: None until each of the `sources` input partitions has shown a time or
    /// been announced idle.
    pub fn event_time_ms(&self) -> Option<i64> {
        self.event_time_ms
    }

    pub fn times(&self) -> &BTreeMap<S, i64> {
        &self.times
    }

    pub fn idle_sources(&self) -> IdleSources<S> {
        IdleSources {
            sources: self.idle.iter().copied().collect(),
            event_time_ms: self.event_time_ms,
        }
    }

    /// Whether any input partition is idle (or was: its changelog record must be rewritten).
    pub fn has_idle(&self) -> bool {
        !self.idle.is_empty()
    }

    /// Restoring: the times as the changelog holds them.
    pub fn restore_times(&mut self, times: impl IntoIterator<Item = (S, i64)>, sources: usize) {
        self.times = times.into_iter().collect();
        self.update(sources);
    }

    /// Restoring: the idle partitions and the event time reached.
    pub fn restore_idle(&mut self, idle: IdleSources<S>, sources: usize) {
        self.idle = idle.sources.into_iter().collect();
        self.event_time_ms = self.event_time_ms.max(idle.event_time_ms);
        self.update(sources);
    }

    fn update(&mut self, sources: usize) {
        let idle_without_time = self
            .idle
            .iter()
            .filter(|source| !self.times.contains_key(source))
            .count();
        let seen = self.times.len() + idle_without_time;
        if seen < sources {
            return;
        }
        let active = self
            .times
            .iter()
            .filter(|(source, _)| !self.idle.contains(source))
            .map(|(_, time)| *time)
            .min();
        // Every partition idle: the event time stays where it is.
        if let Some(active) = active {
            self.event_time_ms = Some(self.event_time_ms.map_or(active, |t| t.max(active)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_time_once_every_partition_showed_one() {
        let mut clock = SourceClock::default();
        clock.advance(0, 100, 2);
        assert_eq!(clock.event_time_ms(), None);
        clock.advance(1, 50, 2);
        assert_eq!(clock.event_time_ms(), Some(50));
        clock.advance(1, 200, 2);
        assert_eq!(clock.event_time_ms(), Some(100));
        clock.advance(0, 90, 2);
        assert_eq!(
            clock.event_time_ms(),
            Some(100),
            "a partition's time never goes back"
        );
    }

    #[test]
    fn an_idle_partition_does_not_hold_the_event_time_back_until_it_shows_records() {
        let mut clock = SourceClock::default();
        clock.advance(0, 100, 3);
        clock.advance(1, 10, 3);
        // Partition 2 never had a record: only its idleness lets the time start.
        assert_eq!(clock.event_time_ms(), None);
        clock.set_idle(2, 3);
        assert_eq!(clock.event_time_ms(), Some(10));
        clock.set_idle(1, 3);
        assert_eq!(clock.event_time_ms(), Some(100));
        // Partition 1 comes back behind: the event time does not move back.
        clock.advance(1, 20, 3);
        assert_eq!(clock.event_time_ms(), Some(100));
        clock.advance(0, 300, 3);
        assert_eq!(clock.event_time_ms(), Some(100));
        clock.advance(1, 250, 3);
        assert_eq!(clock.event_time_ms(), Some(250));
        // Everything idle: it stays.
        clock.set_idle(0, 3);
        clock.set_idle(1, 3);
        assert_eq!(clock.event_time_ms(), Some(250));
    }

    #[test]
    fn restored_from_its_changelog_records_in_either_order() {
        let mut clock = SourceClock::default();
        clock.advance(0, 100, 2);
        clock.advance(1, 10, 2);
        clock.set_idle(1, 2);
        let (times, idle) = (clock.times().clone(), clock.idle_sources());
        assert_eq!(idle.event_time_ms, Some(100));
        let mut restored = SourceClock::default();
        restored.restore_idle(idle.clone(), 2);
        restored.restore_times(times.clone(), 2);
        assert_eq!(restored.event_time_ms(), Some(100));
        let mut restored = SourceClock::default();
        restored.restore_times(times, 2);
        restored.restore_idle(idle, 2);
        assert_eq!(restored.event_time_ms(), Some(100));
        restored.advance(1, 20, 2);
        assert_eq!(restored.event_time_ms(), Some(100));
    }
}
