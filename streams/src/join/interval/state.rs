//! The state of an interval join on the instance that owns one repartition partition: each
//! side's rows buffered by join key, matched as the other side's rows arrive, and dropped once
//! the watermark shows no row that can still arrive could match them (then, for a left outer
//! join, an unmatched left row is emitted with nulls).
//!
//! A pair `(left, right)` matches when their keys are equal and
//! `lower_ms <= right.time - left.time <= upper_ms`. Rows arrive as the repartition topic holds
//! them; the input partitions' event times (sent after the rows they cover) give the watermark:
//! the smallest of every input partition's largest event time, minus the allowed lateness, once
//! every input partition has shown one.
//!
//! Why this is exact. A row is late — dropped before it gets here — when its time is behind its
//! own partition's watermark. A left row is dropped from state once the watermark passes
//! `time + upper_ms`, a right row once it passes `time - lower_ms`. Any right row still to come
//! has a time at or after the watermark its partition had when the watermark here moved (its
//! event times reached here before it), so it is after `left.time + upper_ms`: it could not
//! have matched. The same holds for left rows and dropped right rows. So every matching pair
//! of rows that are not late meets, whichever came first and however rows fall into
//! checkpoints, and a left row's "unmatched" is final when it is emitted.
//!
//! Every change is a changelog record (a buffered row, its matched flag, a tombstone when it is
//! dropped; the event times), so the state can be rebuilt by replaying the changelog partition.
//! Bounded: the rows held across all partitions may not exceed `max_state_entries`.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::aggregate::datum::Datum;
use crate::error::{Result, StreamsError};
use crate::state_map::StateMap;
use crate::watermark::{IdleSources, SourceClock};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Left,
    Right,
}

/// Where a row came from: its input (0 left, 1 right), partition and offset — unique.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RowId {
    pub input: u8,
    pub partition: i32,
    pub offset: i64,
}

/// One input row as the join needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JoinRow {
    pub side: Side,
    pub id: RowId,
    pub keys: Vec<Datum>,
    pub time_ms: i64,
    /// The side's columns, as the join's output holds them (shared by every output row the
    /// row is in).
    pub values: Arc<[Datum]>,
}

/// A record of the join's repartition topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JoinRecord {
    Row(JoinRow),
    /// An input partition's largest event time so far.
    Time {
        input: u8,
        partition: i32,
        max_time_ms: i64,
    },
    /// An input partition without records for the idle timeout (`crate::watermark`).
    Idle {
        input: u8,
        partition: i32,
    },
    /// A bounded run's input partition ended.
    EndOfInput {
        input: u8,
        partition: i32,
    },
}

/// A changelog record's key and value (`None`: a tombstone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JoinChangeKey {
    Row(RowId),
    SourceTimes,
    IdleSources,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JoinChange {
    Row { row: JoinRow, matched: bool },
    SourceTimes(Vec<((u8, i32), i64)>),
    IdleSources(IdleSources<(u8, i32)>),
}

/// One output row: a left row with its match, or with none (left outer join).
#[derive(Debug, Clone, PartialEq)]
pub struct Joined {
    pub left: Arc<[Datum]>,
    pub right: Option<Arc<[Datum]>>,
    /// When it happened: the later of the pair's times (a left row without a match: its own).
    pub time_ms: i64,
}

pub struct IntervalJoinConfig {
    pub lower_ms: i64,
    pub upper_ms: i64,
    pub left_outer: bool,
    /// Every input partition, of both inputs: (input, partition count).
    pub input_partitions: Vec<i32>,
    pub allowed_lateness_ms: i64,
    pub max_state_entries: usize,
}

#[derive(Debug, Clone)]
struct Held {
    row: JoinRow,
    matched: bool,
    /// Whether the changelog has a record of the row (a row added and dropped between two
    /// checkpoints needs neither its record nor a tombstone).
    logged: bool,
    /// Whether the row changed since the changelog was last written (its id is in `changed`).
    changed: bool,
    /// The watermark it waits for before it can go.
    expires: i64,
}

#[derive(Default)]
struct PartitionState {
    /// The held rows, each in a slot of its own (a released row's slot is reused).
    slots: Vec<Option<Held>>,
    free_slots: Vec<usize>,
    /// Each held row's slot, by id.
    by_id: StateMap<RowId, usize>,
    /// The held rows' slots by side (left, right), key and id (candidates match in id order).
    rows: [StateMap<Vec<Datum>, BTreeMap<RowId, usize>>; 2],
    /// `(expires, id)` of every held row, soonest first. A row released or replaced leaves its
    /// entry behind; an entry whose row no longer waits for that expiry is skipped.
    expiry: BinaryHeap<Reverse<(i64, RowId)>>,
    clock: SourceClock<(u8, i32)>,
    ended: BTreeSet<(u8, i32)>,
    /// The ids of rows changed since the changelog was last written (some repeated, or
    /// released since: the rows' `changed` flags say which are due).
    changed: Vec<RowId>,
    dropped: Vec<RowId>,
    times_changed: bool,
    /// Whether the changelog's last idle record names idle partitions (to be cleared).
    idle_logged: bool,
}

fn side_index(side: Side) -> usize {
    match side {
        Side::Left => 0,
        Side::Right => 1,
    }
}

pub struct IntervalJoinState {
    config: IntervalJoinConfig,
    partitions: BTreeMap<i32, PartitionState>,
    entries: usize,
}

impl IntervalJoinState {
    pub fn new(config: IntervalJoinConfig) -> Self {
        IntervalJoinState {
            config,
            partitions: BTreeMap::new(),
            entries: 0,
        }
    }

    pub fn clear(&mut self) {
        self.partitions.clear();
        self.entries = 0;
    }

    /// Rows held, across the partitions.
    pub fn entries(&self) -> usize {
        self.entries
    }

    fn sources(&self) -> usize {
        self.config
            .input_partitions
            .iter()
            .map(|count| *count as usize)
            .sum()
    }

    /// The watermark of `partition`, once every input partition has shown an event time.
    pub fn watermark(&self, partition: i32) -> Option<i64> {
        let state = self.partitions.get(&partition)?;
        let event_time = state.clock.event_time_ms()?;
        Some(event_time - self.config.allowed_lateness_ms)
    }

    /// When a held row can no longer match anything still to come.
    fn expires_after(&self, side: Side, time_ms: i64) -> i64 {
        match side {
            Side::Left => time_ms.saturating_add(self.config.upper_ms),
            Side::Right => time_ms.saturating_sub(self.config.lower_ms),
        }
    }

    /// Applies one repartition record of `partition`; a row comes back with its matches.
    pub fn merge(&mut self, partition: i32, record: JoinRecord) -> Result<Vec<Joined>> {
        match record {
            JoinRecord::Time {
                input,
                partition: source,
                max_time_ms,
            } => {
                let sources = self.sources();
                let state = self.partitions.entry(partition).or_default();
                state.clock.advance((input, source), max_time_ms, sources);
                state.times_changed = true;
                Ok(Vec::new())
            }
            JoinRecord::Idle {
                input,
                partition: source,
            } => {
                let sources = self.sources();
                let state = self.partitions.entry(partition).or_default();
                state.clock.set_idle((input, source), sources);
                state.times_changed = true;
                Ok(Vec::new())
            }
            JoinRecord::EndOfInput {
                input,
                partition: source,
            } => {
                let sources = self.sources();
                let state = self.partitions.entry(partition).or_default();
                state.ended.insert((input, source));
                if state.ended.len() >= sources {
                    self.close_everything(partition);
                }
                Ok(Vec::new())
            }
            JoinRecord::Row(row) => self.add_row(partition, row),
        }
    }

    fn add_row(&mut self, partition: i32, row: JoinRow) -> Result<Vec<Joined>> {
        let expires = self.expires_after(row.side, row.time_ms);
        let (lower, upper) = (self.config.lower_ms, self.config.upper_ms);
        let left_outer = self.config.left_outer;
        let state = self.partitions.entry(partition).or_default();
        let null_key = row.keys.contains(&Datum::Null);
        let mut joined = Vec::new();
        let mut matched = false;
        if !null_key {
            let other = match row.side {
                Side::Left => Side::Right,
                Side::Right => Side::Left,
            };
            let PartitionState {
                rows,
                slots,
                changed,
                ..
            } = state;
            let candidates = rows[side_index(other)].get(row.keys.as_slice());
            for (id, slot) in candidates.into_iter().flatten() {
                let held = slots[*slot].as_mut().expect("a held row's slot is filled");
                let (left_time, right_time) = match row.side {
                    Side::Left => (row.time_ms, held.row.time_ms),
                    Side::Right => (held.row.time_ms, row.time_ms),
                };
                let distance = right_time.saturating_sub(left_time);
                if distance < lower || distance > upper {
                    continue;
                }
                matched = true;
                joined.push(match row.side {
                    Side::Left => Joined {
                        left: row.values.clone(),
                        right: Some(held.row.values.clone()),
                        time_ms: row.time_ms.max(held.row.time_ms),
                    },
                    Side::Right => {
                        if !held.matched {
                            held.matched = true;
                            if !held.changed {
                                held.changed = true;
                                changed.push(*id);
                            }
                        }
                        Joined {
                            left: held.row.values.clone(),
                            right: Some(row.values.clone()),
                            time_ms: row.time_ms.max(held.row.time_ms),
                        }
                    }
                });
            }
        }
        // A row with a null key never matches: only a left outer join's left row is kept, to be
        // emitted unmatched when it expires.
        if null_key && !(row.side == Side::Left && left_outer) {
            return Ok(joined);
        }
        state.changed.push(row.id);
        let held = Held {
            row,
            matched,
            logged: false,
            changed: true,
            expires,
        };
        if state.hold(held) {
            self.entries += 1;
        }
        self.check_bound()?;
        Ok(joined)
    }

    /// Advances every input partition's time of `partition` past every held row's expiry.
    fn close_everything(&mut self, partition: i32) {
        let lateness = self.config.allowed_lateness_ms;
        let sources: Vec<(u8, i32)> = self
            .config
            .input_partitions
            .iter()
            .enumerate()
            .flat_map(|(input, count)| (0..*count).map(move |p| (input as u8, p)))
            .collect();
        let Some(state) = self.partitions.get_mut(&partition) else {
            return;
        };
        let Some(last) = state.slots.iter().flatten().map(|held| held.expires).max() else {
            return;
        };
        let time = last.saturating_add(1).saturating_add(lateness);
        let count = sources.len();
        for source in sources {
            state.clock.advance(source, time, count);
        }
        state.times_changed = true;
    }

    fn check_bound(&self) -> Result<()> {
        if self.entries > self.config.max_state_entries {
            return Err(StreamsError::StateFull {
                what: "the interval join's rows",
                held: self.entries,
                limit: self.config.max_state_entries,
                hint: "raise it, narrow the join's interval or the allowed lateness",
            });
        }
        Ok(())
    }

    /// Drops the rows of `partition` the watermark has passed; returns the left rows that go
    /// unmatched (left outer join), in the order of their expiry.
    pub fn expire(&mut self, partition: i32) -> Vec<Joined> {
        let Some(watermark) = self.watermark(partition) else {
            return Vec::new();
        };
        let left_outer = self.config.left_outer;
        let Some(state) = self.partitions.get_mut(&partition) else {
            return Vec::new();
        };
        let mut unmatched = Vec::new();
        while let Some(&Reverse((expires, id))) = state.expiry.peek() {
            if expires >= watermark {
                break;
            }
            state.expiry.pop();
            // None: released or replaced since this entry was made.
            let Some(held) = state.release_expired(id, expires) else {
                continue;
            };
            self.entries -= 1;
            if held.logged {
                state.dropped.push(id);
            }
            if held.row.side == Side::Left && left_outer && !held.matched {
                unmatched.push(Joined {
                    left: held.row.values,
                    right: None,
                    time_ms: held.row.time_ms,
                });
            }
        }
        unmatched
    }

    /// The changelog records for what changed in `partition` since the last call.
    pub fn take_changes(&mut self, partition: i32) -> Vec<(JoinChangeKey, Option<JoinChange>)> {
        let Some(state) = self.partitions.get_mut(&partition) else {
            return Vec::new();
        };
        let mut changes: Vec<(JoinChangeKey, Option<JoinChange>)> =
            std::mem::take(&mut state.dropped)
                .into_iter()
                .map(|id| (JoinChangeKey::Row(id), None))
                .collect();
        // In id order, as the rows of a key are.
        let mut changed = std::mem::take(&mut state.changed);
        changed.sort_unstable();
        changed.dedup();
        for id in changed {
            let Some(held) = state.held_mut(id).filter(|held| held.changed) else {
                continue;
            };
            held.changed = false;
            held.logged = true;
            changes.push((
                JoinChangeKey::Row(id),
                Some(JoinChange::Row {
                    row: held.row.clone(),
                    matched: held.matched,
                }),
            ));
        }
        if std::mem::take(&mut state.times_changed) {
            let times = state.clock.times().iter().map(|(s, t)| (*s, *t)).collect();
            changes.push((
                JoinChangeKey::SourceTimes,
                Some(JoinChange::SourceTimes(times)),
            ));
            if state.clock.has_idle() || std::mem::take(&mut state.idle_logged) {
                state.idle_logged = state.clock.has_idle();
                changes.push((
                    JoinChangeKey::IdleSources,
                    Some(JoinChange::IdleSources(state.clock.idle_sources())),
                ));
            }
        }
        changes
    }

    /// Applies one changelog record of `partition` (replayed in order when restoring).
    pub fn restore(
        &mut self,
        partition: i32,
        key: JoinChangeKey,
        value: Option<JoinChange>,
    ) -> Result<()> {
        match (key, value) {
            (JoinChangeKey::SourceTimes, Some(JoinChange::SourceTimes(times))) => {
                let sources = self.sources();
                let state = self.partitions.entry(partition).or_default();
                state.clock.restore_times(times, sources);
            }
            (JoinChangeKey::IdleSources, Some(JoinChange::IdleSources(idle))) => {
                let sources = self.sources();
                let state = self.partitions.entry(partition).or_default();
                state.idle_logged = !idle.sources.is_empty();
                state.clock.restore_idle(idle, sources);
            }
            (JoinChangeKey::Row(id), None) => self.forget(partition, id),
            (JoinChangeKey::Row(id), Some(JoinChange::Row { row, matched })) if row.id == id => {
                self.forget(partition, id);
                let expires = self.expires_after(row.side, row.time_ms);
                let state = self.partitions.entry(partition).or_default();
                let held = Held {
                    row,
                    matched,
                    logged: true,
                    changed: false,
                    expires,
                };
                if state.hold(held) {
                    self.entries += 1;
                }
            }
            (key, value) => {
                return Err(StreamsError::Corrupt(format!(
                    "a join changelog record does not fit its key: {key:?} = {value:?}"
                )))
            }
        }
        self.check_bound()
    }

    /// Removes a row wherever it is held (restoring: rows are found by id alone).
    fn forget(&mut self, partition: i32, id: RowId) {
        let released = self
            .partitions
            .get_mut(&partition)
            .and_then(|state| state.release(id));
        if released.is_some() {
            self.entries -= 1;
        }
    }
}

impl PartitionState {
    /// Holds `held` until the watermark passes its expiry; false when it replaced a row with
    /// the same id.
    fn hold(&mut self, mut held: Held) -> bool {
        let replaced = self.release(held.row.id);
        held.logged |= replaced.as_ref().is_some_and(|old| old.logged);
        let (id, expires) = (held.row.id, held.expires);
        let slot = match self.free_slots.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        let rows = &mut self.rows[side_index(held.row.side)];
        match rows.get_mut(held.row.keys.as_slice()) {
            Some(group) => {
                group.insert(id, slot);
            }
            None => {
                rows.insert(held.row.keys.clone(), BTreeMap::from([(id, slot)]));
            }
        }
        self.by_id.insert(id, slot);
        self.expiry.push(Reverse((expires, id)));
        self.slots[slot] = Some(held);
        replaced.is_none()
    }

    fn held_mut(&mut self, id: RowId) -> Option<&mut Held> {
        let slot = *self.by_id.get(&id)?;
        self.slots[slot].as_mut()
    }

    /// Takes the row `id` out of every index (its expiry entry is skipped when it comes up).
    fn release(&mut self, id: RowId) -> Option<Held> {
        let slot = self.by_id.remove(&id)?;
        self.release_slot(slot)
    }

    /// [`Self::release`] for an expiry entry: only if the row still waits for `expires`.
    fn release_expired(&mut self, id: RowId, expires: i64) -> Option<Held> {
        let Entry::Occupied(entry) = self.by_id.entry(id) else {
            return None;
        };
        let slot = *entry.get();
        if self.slots[slot].as_ref().map(|held| held.expires) != Some(expires) {
            return None;
        }
        entry.remove();
        self.release_slot(slot)
    }

    /// Empties `slot` (its id already out of `by_id`) and takes its row out of `rows`.
    fn release_slot(&mut self, slot: usize) -> Option<Held> {
        let held = self.slots[slot].take()?;
        self.free_slots.push(slot);
        let rows = &mut self.rows[side_index(held.row.side)];
        if let Some(group) = rows.get_mut(held.row.keys.as_slice()) {
            group.remove(&held.row.id);
            if group.is_empty() {
                rows.remove(held.row.keys.as_slice());
            }
        }
        Some(held)
    }
}
