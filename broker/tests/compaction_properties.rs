//! Property test of compaction: random keyed appends and tombstones (every codec), rolls, cleaning
//! passes with offset maps large and tiny, before and after the tombstone horizon, interrupted
//! swaps and restarts. After every step:
//! - every record in the log is the one appended at that offset (nothing invented or moved);
//! - for every key, the latest record in the log is the latest appended — compaction never drops
//!   the latest value of a key, and never brings an older value back after a tombstone;
//! - the log end offset is the number of records appended.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

use std::collections::BTreeMap;
use std::path::Path;

use kafka_protocol::records::{Compression, RecordBatchDecoder};
use proptest::prelude::*;
use weir_broker::config::LogConfig;
use weir_broker::log::compaction::{self, SwapStep};
use weir_broker::log::PartitionLog;

#[path = "support/records.rs"]
mod records;
use records::KeyValue;

/// Far enough after the files were written that every tombstone horizon has passed.
const LATER_MS: i64 = 4_000_000_000_000;

type Entry = (u8, Option<Vec<u8>>);

#[derive(Debug, Clone)]
enum Op {
    Append {
        entries: Vec<Entry>,
        codec: u8,
    },
    Roll,
    Clean {
        memory_bytes: usize,
        past_horizon: bool,
    },
    CrashDuringSwap {
        after_commit: bool,
    },
    Restart {
        clean: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let entry = (
        0u8..8,
        prop::option::weighted(0.8, prop::collection::vec(any::<u8>(), 0..24)),
    );
    prop_oneof![
        6 => (prop::collection::vec(entry, 1..6), 0u8..5)
            .prop_map(|(entries, codec)| Op::Append { entries, codec }),
        2 => Just(Op::Roll),
        3 => (prop_oneof![Just(200usize), Just(400), Just(1 << 20)], any::<bool>())
            .prop_map(|(memory_bytes, past_horizon)| Op::Clean { memory_bytes, past_horizon }),
        1 => any::<bool>().prop_map(|after_commit| Op::CrashDuringSwap { after_commit }),
        1 => any::<bool>().prop_map(|clean| Op::Restart { clean }),
    ]
}

fn config() -> LogConfig {
    LogConfig {
        compact: true,
        delete: false,
        segment_bytes: 300,
        index_interval_bytes: 64,
        min_cleanable_dirty_ratio: 0.0,
        delete_retention_ms: 86_400_000,
        ..LogConfig::default()
    }
}

fn codec(n: u8) -> Compression {
    [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ][n as usize % 5]
}

/// offset → (key, value) of every record in the log.
fn contents(log: &PartitionLog) -> BTreeMap<i64, Entry> {
    let mut out = BTreeMap::new();
    for (_, bytes) in log.read_all_batches().unwrap() {
        let mut bytes = bytes;
        let batch = RecordBatchDecoder::decode(&mut bytes).unwrap();
        for record in batch.records {
            let key = record.key.expect("keyed")[0];
            out.insert(record.offset, (key, record.value.map(|v| v.to_vec())));
        }
    }
    out
}

fn latest_by_key(records: &BTreeMap<i64, Entry>) -> BTreeMap<u8, (i64, Option<Vec<u8>>)> {
    records
        .iter()
        .map(|(offset, (key, value))| (*key, (*offset, value.clone())))
        .collect()
}

fn check(log: &PartitionLog, appended: &BTreeMap<i64, Entry>) {
    let present = contents(log);
    for (offset, record) in &present {
        assert_eq!(appended.get(offset), Some(record), "record at {offset}");
    }
    let expected = latest_by_key(appended);
    let actual = latest_by_key(&present);
    for (key, (offset, value)) in &expected {
        match (value, actual.get(key)) {
            // A live key: its latest record is there.
            (Some(_), found) => assert_eq!(found, Some(&(*offset, value.clone())), "key {key}"),
            // A deleted key: its tombstone, or nothing at all.
            (None, Some(found)) => assert_eq!(found, &(*offset, None), "key {key}"),
            (None, None) => {}
        }
    }
    assert_eq!(log.log_end_offset(), appended.len() as i64);
}

fn reopen(dir: &Path, clean_shutdown: bool) -> PartitionLog {
    PartitionLog::open(dir, config(), clean_shutdown, 0).unwrap()
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let mut log = reopen(dir.path(), false);
    let mut appended: BTreeMap<i64, Entry> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Append { entries, codec: c } => {
                let keys: Vec<[u8; 1]> = entries.iter().map(|(k, _)| [*k]).collect();
                let borrowed: Vec<KeyValue<'_>> = entries
                    .iter()
                    .zip(&keys)
                    .map(|((_, value), key)| (Some(&key[..]), value.as_deref()))
                    .collect();
                let batch = records::encode_keyed_batch(&borrowed, codec(c), 1000);
                let info = log.append(batch, 0, 0).unwrap();
                for (i, entry) in entries.into_iter().enumerate() {
                    appended.insert(info.base_offset + i as i64, entry);
                }
            }
            Op::Roll => log.roll(0).unwrap(),
            Op::Clean {
                memory_bytes,
                past_horizon,
            } => {
                let now_ms = if past_horizon { LATER_MS } else { 0 };
                let high_watermark = log.log_end_offset();
                if let Some(plan) = compaction::plan(&log, high_watermark, now_ms).unwrap() {
                    if let Some(outcome) = compaction::clean(&plan, memory_bytes, now_ms).unwrap() {
                        assert!(compaction::install(&mut log, outcome, &|_| false).unwrap());
                    }
                }
            }
            Op::CrashDuringSwap { after_commit } => {
                let high_watermark = log.log_end_offset();
                let step = if after_commit {
                    SwapStep::Committed
                } else {
                    SwapStep::OldSegmentsDeleted
                };
                if let Some(plan) = compaction::plan(&log, high_watermark, 0).unwrap() {
                    if let Some(outcome) = compaction::clean(&plan, 1 << 20, 0).unwrap() {
                        if !outcome.groups.is_empty() {
                            assert!(
                                compaction::install(&mut log, outcome, &|at| at == step).is_err()
                            );
                        }
                    }
                }
                drop(log);
                log = reopen(dir.path(), false);
            }
            Op::Restart { clean } => {
                if clean {
                    log.close(0).unwrap();
                }
                drop(log);
                log = reopen(dir.path(), clean);
            }
        }
        check(&log, &appended);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn compaction_never_drops_the_latest_value_of_a_key(ops in prop::collection::vec(op(), 1..50)) {
        run(ops);
    }
}
