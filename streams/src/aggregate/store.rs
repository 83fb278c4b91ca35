//! The second half of a windowed aggregation, on the instance that owns a repartition
//! partition: partial groups are merged into the window state, the input partitions' event times
//! give the watermark, and a window is emitted once when the watermark passes its end. Session
//! partials are merged into the key's open sessions (`crate::aggregate::session`) instead.
//!
//! A partition's watermark is the smallest of the input partitions' largest event times minus
//! the allowed lateness; until every input partition has shown an event time, nothing is emitted.
//! Every change is also a changelog record (written in the same transaction), so the state can be
//! rebuilt by replaying the changelog partition.
//!
//! At the end of a bounded run's input, every input partition's end is announced; once all are,
//! every input partition's time is advanced past the open windows (plus the allowed lateness), so
//! they are emitted — and records arriving for them later are too late, as they would be
//! behind any watermark — while windows after them work as before.
//!
//! Bounded: the groups and distinct values held across all partitions may not exceed
//! `max_state_entries`; past it the checkpoint fails with a clear error rather than growing.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::aggregate::accumulator::{Accumulator, AggregateKind};
use crate::aggregate::changes;
use crate::aggregate::codec::{ChangelogKey, ChangelogValue, RepartitionRecord};
use crate::aggregate::datum::Datum;
use crate::aggregate::query::WindowRow;
use crate::aggregate::session::{session_end, OpenSessions, Session};
use crate::error::{Result, StreamsError};
use crate::plan::window_spec::Windows;
use crate::state_map::{StateMap, StateSet};
use crate::watermark::SourceClock;

pub struct WindowStoreConfig {
    pub window: Windows,
    pub aggregates: Vec<AggregateKind>,
    /// An updating aggregate over a table's changes (`crate::aggregate::changes`): the last
    /// aggregate counts a group's rows, and a group without rows leaves the state.
    pub over_table_changes: bool,
    pub allowed_lateness_ms: i64,
    pub input_partitions: i32,
    pub max_state_entries: usize,
}

#[derive(Default)]
struct PartitionState {
    /// Tumbling and hopping windows: groups by window start and key.
    windows: BTreeMap<i64, StateMap<Vec<Datum>, Vec<Accumulator>>>,
    /// Session windows.
    sessions: OpenSessions,
    clock: SourceClock<i32>,
    /// Groups (window or session start, keys) changed since the changelog was last written.
    changed: BTreeSet<(i64, Vec<Datum>)>,
    /// Tumbling and hopping windows: groups created since the changelog was last written (it
    /// has no record of them, so one emitted before it is written needs no tombstone either).
    created: StateSet<(i64, Vec<Datum>)>,
    /// Groups emitted, or sessions merged into another: tombstones for the changelog.
    removed: Vec<(i64, Vec<Datum>)>,
    /// Aggregates over table changes: groups whose rows are all gone, for the output.
    deleted: Vec<Vec<Datum>>,
    times_changed: bool,
    /// Whether the changelog's last idle record names idle partitions (to be cleared).
    idle_logged: bool,
    /// Input partitions whose end a bounded run announced (not persisted: a restarted bounded
    /// run announces them again).
    ended: BTreeSet<i32>,
}

pub struct WindowStore {
    config: WindowStoreConfig,
    partitions: BTreeMap<i32, PartitionState>,
    /// The partitions this instance owns (none set: each partition on its own).
    owned: Vec<i32>,
    entries: usize,
}

/// What merging one repartition record did.
#[derive(Debug, PartialEq, Eq)]
pub enum Merged {
    Applied,
    /// A partial for a window already emitted (its records could not be counted).
    TooLate,
}

impl WindowStore {
    pub fn new(config: WindowStoreConfig) -> Self {
        WindowStore {
            config,
            partitions: BTreeMap::new(),
            owned: Vec::new(),
            entries: 0,
        }
    }

    /// Forgets everything (before restoring the partitions now owned).
    pub fn clear(&mut self) {
        self.partitions.clear();
        self.entries = 0;
    }

    /// The partitions this instance owns (after a rebalance): windows are emitted only once
    /// every one of them is past them ([`Self::emit`]).
    pub fn set_owned(&mut self, partitions: Vec<i32>) {
        self.owned = partitions;
    }

    pub fn owned(&self) -> &[i32] {
        &self.owned
    }

    /// The watermark `partition`'s windows are emitted by: the smallest of every owned
    /// partition's (its own when none are set). Each partition's watermark moves when its
    /// share of the event-time records is read, and a checkpoint reads more of one partition
    /// than of another: emitting by each one's own would let partition 0 emit windows 1 and 2
    /// while partition 1 still holds window 1 — out of event-time order in the output, where a
    /// job chained on it would find partition 1's window 1 behind its watermark (late).
    fn emit_watermark(&self, partition: i32) -> Option<i64> {
        if self.owned.is_empty() {
            return self.watermark(partition);
        }
        self.owned
            .iter()
            .map(|owned| self.watermark(*owned))
            .collect::<Option<Vec<i64>>>()?
            .into_iter()
            .min()
    }

    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Windows (distinct starts; sessions each) with groups not yet emitted, across the
    /// partitions.
    pub fn open_windows(&self) -> usize {
        let starts: BTreeSet<i64> = self
            .partitions
            .values()
            .flat_map(|p| p.windows.keys().copied())
            .collect();
        let sessions: usize = self.partitions.values().map(|p| p.sessions.len()).sum();
        starts.len() + sessions
    }

    fn partition_state(&mut self, partition: i32) -> &mut PartitionState {
        let gap_ms = match self.config.window {
            Windows::Session { gap_ms } => gap_ms,
            Windows::Fixed(_) | Windows::Updating => 0,
        };
        self.partitions
            .entry(partition)
            .or_insert_with(|| PartitionState {
                sessions: OpenSessions::new(gap_ms),
                ..PartitionState::default()
            })
    }

    /// The watermark of `partition`, once every input partition has shown an event time.
    pub fn watermark(&self, partition: i32) -> Option<i64> {
        let state = self.partitions.get(&partition)?;
        let event_time = state.clock.event_time_ms()?;
        Some(event_time - self.config.allowed_lateness_ms)
    }

    pub fn merge(&mut self, partition: i32, record: RepartitionRecord) -> Result<Merged> {
        match record {
            RepartitionRecord::Time {
                source_partition,
                max_time_ms,
            } => {
                let sources = self.config.input_partitions as usize;
                let state = self.partition_state(partition);
                state.clock.advance(source_partition, max_time_ms, sources);
                state.times_changed = true;
                Ok(Merged::Applied)
            }
            RepartitionRecord::Idle { source_partition } => {
                let sources = self.config.input_partitions as usize;
                let state = self.partition_state(partition);
                state.clock.set_idle(source_partition, sources);
                state.times_changed = true;
                Ok(Merged::Applied)
            }
            RepartitionRecord::EndOfInput { source_partition } => {
                let input_partitions = self.config.input_partitions;
                let state = self.partition_state(partition);
                state.ended.insert(source_partition);
                if state.ended.len() as i32 >= input_partitions {
                    self.close_open_windows();
                }
                Ok(Merged::Applied)
            }
            RepartitionRecord::Partial {
                window_start_ms,
                session_last_ms,
                keys,
                accumulators,
            } => {
                if accumulators.len() != self.config.aggregates.len() {
                    return Err(StreamsError::Corrupt(format!(
                        "a partial group holds {} aggregates, the query {}: was the query changed \
                         while records were in flight?",
                        accumulators.len(),
                        self.config.aggregates.len()
                    )));
                }
                match (self.config.window, session_last_ms) {
                    (Windows::Fixed(window), None) => {
                        let end = window.end(window_start_ms);
                        self.merge_group(partition, end, window_start_ms, keys, accumulators)
                    }
                    (Windows::Updating, None) => {
                        self.merge_group(partition, i64::MAX, 0, keys, accumulators)
                    }
                    (Windows::Session { .. }, Some(last_ms)) => {
                        let session = Session {
                            last_ms,
                            accumulators,
                        };
                        self.merge_session(partition, window_start_ms, keys, session)
                    }
                    _ => Err(StreamsError::Corrupt(
                        "a partial group does not fit the query's windows: was the query \
                         changed while records were in flight?"
                            .into(),
                    )),
                }
            }
        }
    }

    /// Merges a tumbling or hopping window's partial group.
    fn merge_group(
        &mut self,
        partition: i32,
        end: i64,
        window_start_ms: i64,
        keys: Vec<Datum>,
        accumulators: Vec<Accumulator>,
    ) -> Result<Merged> {
        if self.watermark(partition).is_some_and(|w| end <= w) {
            return Ok(Merged::TooLate);
        }
        let fixed = matches!(self.config.window, Windows::Fixed(_));
        let state = self.partition_state(partition);
        let groups = state.windows.entry(window_start_ms).or_default();
        // One lookup for a group already there; the keys are cloned only for a new one.
        let (created, before, after) = match groups.get_mut(&keys) {
            Some(existing) => {
                let before = size(existing);
                existing
                    .iter_mut()
                    .zip(accumulators)
                    .for_each(|(a, b)| a.merge(b));
                (false, before, size(existing))
            }
            None => {
                let after = size(&accumulators);
                groups.insert(keys.clone(), accumulators);
                (true, 0, after)
            }
        };
        let group = (window_start_ms, keys);
        if fixed && created {
            state.created.insert(group);
        } else if !(fixed && state.created.contains(&group)) {
            state.changed.insert(group);
        }
        self.entries = self.entries + after - before;
        self.check_bound()
    }

    /// Merges a partial session into the key's open sessions. It cannot touch a session the
    /// watermark has passed (emitted, or about to be): such a partial is too late.
    fn merge_session(
        &mut self,
        partition: i32,
        start_ms: i64,
        keys: Vec<Datum>,
        session: Session,
    ) -> Result<Merged> {
        let watermark = self.watermark(partition);
        let closed = |end: i64| watermark.is_some_and(|w| end <= w);
        let state = self.partition_state(partition);
        let gap_ms = state.sessions.gap_ms();
        let own_end = session_end(session.last_ms, gap_ms);
        let overlapped = state
            .sessions
            .overlapped_ends(&keys, start_ms, session.last_ms);
        if closed(own_end) || overlapped.into_iter().any(closed) {
            return Ok(Merged::TooLate);
        }
        let added = state.sessions.add(&keys, start_ms, session);
        let mut removed = 0;
        for (start, merged) in &added.merged {
            removed += size(&merged.accumulators);
            state.changed.remove(&(*start, keys.clone()));
            if *start != added.start_ms {
                state.removed.push((*start, keys.clone()));
            }
        }
        let now = state
            .sessions
            .get(&keys, added.start_ms)
            .map_or(0, |s| size(&s.accumulators));
        state.changed.insert((added.start_ms, keys));
        self.entries = self.entries + now - removed;
        self.check_bound()
    }

    /// Once a partition's every input ended: advances the input times of every partition whose
    /// inputs all ended past the last open window of every partition this store holds — not
    /// only its own. A copy owning several partitions emits by the smallest of their watermarks
    /// (`Self::emit_watermark`), so an ended partition whose own windows end earlier (or that
    /// has none) must not hold the others' last windows back; nothing more comes to it, so any
    /// later time is right for it.
    fn close_open_windows(&mut self) {
        let window = self.config.window;
        let lateness = self.config.allowed_lateness_ms;
        let inputs = self.config.input_partitions;
        let last_end = self
            .partitions
            .values()
            .filter_map(|state| match window {
                Windows::Fixed(window) => state.windows.keys().next_back().map(|s| window.end(*s)),
                Windows::Session { .. } => state.sessions.last_end(),
                Windows::Updating => None,
            })
            .max();
        let Some(last_end) = last_end else {
            return;
        };
        let time = last_end.saturating_add(lateness);
        let ended = self
            .partitions
            .values_mut()
            .filter(|state| state.ended.len() as i32 >= inputs);
        for state in ended {
            for source in 0..inputs {
                state.clock.advance(source, time, inputs as usize);
            }
            state.times_changed = true;
        }
    }

    fn check_bound(&self) -> Result<Merged> {
        if self.entries > self.config.max_state_entries {
            return Err(StreamsError::StateFull {
                what: "the window state's groups and distinct values",
                held: self.entries,
                limit: self.config.max_state_entries,
                hint: "raise it, shorten the windows or the allowed lateness, or group by fewer \
                       keys",
            });
        }
        Ok(Merged::Applied)
    }

    /// Takes the windows of `partition` that the watermark has passed, oldest first (groups in
    /// key order within a window; sessions in the order of their ends, then keys).
    pub fn emit(&mut self, partition: i32) -> Vec<WindowRow> {
        if self.config.window == Windows::Updating {
            // Every change goes out at once, whatever the event times.
            return self.updated_groups(partition);
        }
        let Some(watermark) = self.emit_watermark(partition) else {
            return Vec::new();
        };
        let window = match self.config.window {
            Windows::Fixed(window) => window,
            Windows::Session { .. } => return self.emit_sessions(partition, watermark),
            Windows::Updating => return self.updated_groups(partition),
        };
        let state = self
            .partitions
            .get_mut(&partition)
            .expect("has a watermark");
        let mut rows = Vec::new();
        while let Some(entry) = state.windows.first_entry() {
            if window.end(*entry.key()) > watermark {
                break;
            }
            let window_start_ms = *entry.key();
            let mut groups: Vec<_> = entry.remove().into_iter().collect();
            groups.sort_by(|a, b| a.0.cmp(&b.0));
            for (keys, accumulators) in groups {
                self.entries -= size(&accumulators);
                let group = (window_start_ms, keys);
                if !state.created.remove(&group) {
                    state.changed.remove(&group);
                    state.removed.push(group.clone());
                }
                let (window_start_ms, keys) = group;
                rows.push(WindowRow {
                    window_start_ms,
                    window_end_ms: window.end(window_start_ms),
                    keys,
                    values: accumulators.iter().map(Accumulator::evaluate).collect(),
                });
            }
        }
        rows
    }

    /// An updating aggregate's groups changed since the changelog was last written, in key
    /// order, with their current values (they stay in the state). Over table changes, the
    /// changed groups left without rows leave the state instead ([`Self::take_deleted`]).
    fn updated_groups(&mut self, partition: i32) -> Vec<WindowRow> {
        let over_table_changes = self.config.over_table_changes;
        let Some(state) = self.partitions.get_mut(&partition) else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        for (window_start_ms, keys) in std::mem::take(&mut state.changed) {
            let groups = state.windows.entry(window_start_ms).or_default();
            let accumulators = &groups[&keys];
            if over_table_changes && !changes::has_rows(accumulators) {
                self.entries -= size(accumulators);
                groups.remove(&keys);
                state.removed.push((window_start_ms, keys.clone()));
                state.deleted.push(keys);
                continue;
            }
            let visible = accumulators.len() - usize::from(over_table_changes);
            rows.push(WindowRow {
                window_start_ms,
                window_end_ms: i64::MAX,
                values: accumulators[..visible]
                    .iter()
                    .map(Accumulator::evaluate)
                    .collect(),
                keys: keys.clone(),
            });
            state.changed.insert((window_start_ms, keys));
        }
        rows
    }

    /// Aggregates over table changes: the groups of `partition` that lost their last row since
    /// the last call (the output's tombstones).
    pub fn take_deleted(&mut self, partition: i32) -> Vec<Vec<Datum>> {
        self.partitions
            .get_mut(&partition)
            .map(|state| std::mem::take(&mut state.deleted))
            .unwrap_or_default()
    }

    fn emit_sessions(&mut self, partition: i32, watermark: i64) -> Vec<WindowRow> {
        let state = self
            .partitions
            .get_mut(&partition)
            .expect("has a watermark");
        let mut rows = Vec::new();
        let gap_ms = state.sessions.gap_ms();
        for (window_start_ms, keys, session) in state.sessions.take_ended(watermark) {
            self.entries -= size(&session.accumulators);
            state.changed.remove(&(window_start_ms, keys.clone()));
            state.removed.push((window_start_ms, keys.clone()));
            rows.push(WindowRow {
                window_start_ms,
                window_end_ms: session_end(session.last_ms, gap_ms),
                keys,
                values: session
                    .accumulators
                    .iter()
                    .map(Accumulator::evaluate)
                    .collect(),
            });
        }
        rows
    }

    /// The changelog records for what changed in `partition` since the last call.
    pub fn take_changes(&mut self, partition: i32) -> Vec<(ChangelogKey, Option<ChangelogValue>)> {
        let Some(state) = self.partitions.get_mut(&partition) else {
            return Vec::new();
        };
        let mut changes = Vec::new();
        for (window_start_ms, keys) in std::mem::take(&mut state.removed) {
            changes.push((
                ChangelogKey::Group {
                    window_start_ms,
                    keys,
                },
                None,
            ));
        }
        // (In group order, as the changed ones: the changelog's records do not depend on the
        // set's hashing.)
        let mut created: Vec<_> = std::mem::take(&mut state.created).into_iter().collect();
        created.sort_unstable();
        for (window_start_ms, keys) in std::mem::take(&mut state.changed)
            .into_iter()
            .chain(created)
        {
            let value = match self.config.window {
                Windows::Fixed(_) | Windows::Updating => {
                    ChangelogValue::Group(state.windows[&window_start_ms][&keys].clone())
                }
                Windows::Session { .. } => {
                    let session = state
                        .sessions
                        .get(&keys, window_start_ms)
                        .expect("a changed session is open");
                    ChangelogValue::Session {
                        last_ms: session.last_ms,
                        accumulators: session.accumulators.clone(),
                    }
                }
            };
            changes.push((
                ChangelogKey::Group {
                    window_start_ms,
                    keys,
                },
                Some(value),
            ));
        }
        if std::mem::take(&mut state.times_changed) {
            changes.push((
                ChangelogKey::SourceTimes,
                Some(ChangelogValue::SourceTimes(state.clock.times().clone())),
            ));
            if state.clock.has_idle() || std::mem::take(&mut state.idle_logged) {
                state.idle_logged = state.clock.has_idle();
                changes.push((
                    ChangelogKey::IdleSources,
                    Some(ChangelogValue::IdleSources(state.clock.idle_sources())),
                ));
            }
        }
        changes
    }

    /// Applies one changelog record of `partition` (replayed in order when restoring).
    pub fn restore(
        &mut self,
        partition: i32,
        key: ChangelogKey,
        value: Option<ChangelogValue>,
    ) -> Result<()> {
        let sources = self.config.input_partitions as usize;
        let state = self.partition_state(partition);
        match (key, value) {
            (ChangelogKey::SourceTimes, Some(ChangelogValue::SourceTimes(times))) => {
                state.clock.restore_times(times, sources);
            }
            (ChangelogKey::IdleSources, Some(ChangelogValue::IdleSources(idle))) => {
                state.idle_logged = !idle.sources.is_empty();
                state.clock.restore_idle(idle, sources);
            }
            (
                ChangelogKey::Group {
                    window_start_ms,
                    keys,
                },
                value,
            ) => {
                // What the key held before goes, then what the record says it holds now.
                let mut held = 0;
                let groups = state.windows.entry(window_start_ms).or_default();
                if let Some(old) = groups.remove(&keys) {
                    held += size(&old);
                }
                if let Some(old) = state.sessions.remove(&keys, window_start_ms) {
                    held += size(&old.accumulators);
                }
                let mut holds = 0;
                match value {
                    Some(ChangelogValue::Group(accumulators)) => {
                        holds = size(&accumulators);
                        groups.insert(keys, accumulators);
                    }
                    Some(ChangelogValue::Session {
                        last_ms,
                        accumulators,
                    }) => {
                        holds = size(&accumulators);
                        let session = Session {
                            last_ms,
                            accumulators,
                        };
                        state.sessions.restore(&keys, window_start_ms, session);
                    }
                    Some(
                        ChangelogValue::SourceTimes(_)
                        | ChangelogValue::IdleSources(_)
                        | ChangelogValue::TableRow(_),
                    ) => {
                        return Err(StreamsError::Corrupt(
                            "a changelog group record holds something else than a group".into(),
                        ))
                    }
                    None => {}
                }
                if state
                    .windows
                    .get(&window_start_ms)
                    .is_some_and(HashMap::is_empty)
                {
                    state.windows.remove(&window_start_ms);
                }
                self.entries = self.entries + holds - held;
            }
            (key, value) => {
                return Err(StreamsError::Corrupt(format!(
                    "a changelog record does not fit its key: {key:?} = {value:?}"
                )))
            }
        }
        self.check_bound().map(|_| ())
    }
}

/// What one group counts against the state bound: itself and the distinct values it holds.
fn size(accumulators: &[Accumulator]) -> usize {
    1 + accumulators
        .iter()
        .map(Accumulator::held_values)
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::window_spec::WindowSpec;

    fn partial(window_start_ms: i64) -> RepartitionRecord {
        RepartitionRecord::Partial {
            window_start_ms,
            session_last_ms: None,
            keys: vec![Datum::Str("k".into())],
            accumulators: vec![Accumulator::Count(1)],
        }
    }

    fn time(source_partition: i32, max_time_ms: i64) -> RepartitionRecord {
        RepartitionRecord::Time {
            source_partition,
            max_time_ms,
        }
    }

    /// Partition 0 has read the event times up to 35 s, partition 1 only up to 12 s (a
    /// checkpoint read more of one than of the other): owning both, the store emits by the
    /// smaller, so the windows leave in event-time order across partitions — partition 0's
    /// [10 s, 20 s) and [20 s, 30 s) wait for partition 1's [10 s, 20 s).
    #[test]
    fn owned_partitions_emit_by_the_smallest_watermark() {
        let mut store = WindowStore::new(WindowStoreConfig {
            window: Windows::Fixed(WindowSpec::tumble(10_000).unwrap()),
            aggregates: vec![AggregateKind::Count],
            over_table_changes: false,
            allowed_lateness_ms: 0,
            input_partitions: 1,
            max_state_entries: 100,
        });
        store.set_owned(vec![0, 1]);
        for start in [0, 10_000, 20_000] {
            store.merge(0, partial(start)).unwrap();
            store.merge(1, partial(start)).unwrap();
        }
        store.merge(0, time(0, 35_000)).unwrap();
        store.merge(1, time(0, 12_000)).unwrap();
        let starts = |rows: Vec<WindowRow>| rows.iter().map(|r| r.window_start_ms).collect();
        let emitted: Vec<i64> = starts(store.emit(0));
        assert_eq!(emitted, [0]);
        assert_eq!(starts(store.emit(1)), [0]);
        store.merge(1, time(0, 25_000)).unwrap();
        assert_eq!(starts(store.emit(0)), [10_000]);
        assert_eq!(starts(store.emit(1)), [10_000]);
        // Without owned partitions (each on its own), partition 0 would have emitted them all.
        store.set_owned(Vec::new());
        assert_eq!(starts(store.emit(0)), [20_000]);
    }
}
