//! The records of a windowed job's internal topics (JSON, so they can be read with any tool):
//!
//! - `<job>-repartition`: partial groups, keyed and partitioned by window and group key (by
//!   group key alone for sessions, whose windows merge), and
//!   each input partition's largest event time, sent to every partition after the partials it
//!   covers (and, in a bounded run, each input partition's end);
//! - `<job>-changelog` (compacted): the state of every open group (a tombstone once emitted) and
//!   each partition's view of the input partitions' event times; for an aggregate over a
//!   table's changes, also each table key's current row (in the table partition's own number).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::aggregate::accumulator::Accumulator;
use crate::aggregate::datum::Datum;
use crate::aggregate::pre_aggregate::PartialGroup;
use crate::error::{Result, StreamsError};
use crate::watermark::IdleSources;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepartitionRecord {
    Partial {
        window_start_ms: i64,
        /// Sessions: the partial session's last event time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session_last_ms: Option<i64>,
        keys: Vec<Datum>,
        accumulators: Vec<Accumulator>,
    },
    Time {
        source_partition: i32,
        max_time_ms: i64,
    },
    /// An input partition without records for the idle timeout (`crate::watermark`).
    Idle { source_partition: i32 },
    /// A bounded run's input partition ended: once every input partition has, the windows still
    /// open are closed and emitted (as a bounded source ends in Flink).
    EndOfInput { source_partition: i32 },
}

impl RepartitionRecord {
    pub fn partial(group: PartialGroup) -> Self {
        RepartitionRecord::Partial {
            window_start_ms: group.window_start_ms,
            session_last_ms: group.session_last_ms,
            keys: group.keys,
            accumulators: group.accumulators,
        }
    }
}

/// A changelog record's key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangelogKey {
    Group {
        window_start_ms: i64,
        keys: Vec<Datum>,
    },
    SourceTimes,
    IdleSources,
    /// An aggregate over a table's changes: the row a table key adds to its group now.
    TableRow {
        source_partition: i32,
        key: Vec<u8>,
    },
}

/// A changelog record's value (`None`: a tombstone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangelogValue {
    Group(Vec<Accumulator>),
    /// An open session (its key holds its start).
    Session {
        last_ms: i64,
        accumulators: Vec<Accumulator>,
    },
    SourceTimes(BTreeMap<i32, i64>),
    IdleSources(IdleSources<i32>),
    TableRow(TableRow),
}

/// What one table row adds to an aggregate: its group's keys and the aggregates' arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    pub keys: Vec<Datum>,
    pub arguments: Vec<Datum>,
}

pub fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("window records are plain data")
}

pub fn from_json<'a, T: Deserialize<'a>>(bytes: &'a [u8], what: &str) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| {
        StreamsError::Corrupt(format!(
            "a {what} record does not decode ({e}): was the topic written by another job?"
        ))
    })
}

/// The partition of `key` among `partitions` (FNV-1a: stable across versions and machines).
pub fn partition_of(key: &[u8], partitions: i32) -> i32 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash % partitions as u64) as i32
}
