//! Cleaner tests on real files: what survives a pass, bounds, crashes at every swap step.

use std::collections::BTreeMap;
use std::path::Path;

use kafka_protocol::records::{Compression, RecordBatchDecoder};

use super::*;
use crate::log::control::MarkerKind;
use crate::log::test_support::{encode_keyed_batch, encode_keyed_producer_batch, KeyValue};

/// Far enough after the files were written that every tombstone horizon has passed.
const LATER_MS: i64 = 4_000_000_000_000;

fn compact_config() -> LogConfig {
    LogConfig {
        compact: true,
        delete: false,
        segment_bytes: 600,
        min_cleanable_dirty_ratio: 0.0,
        delete_retention_ms: 86_400_000,
        ..LogConfig::default()
    }
}

fn open(dir: &Path, config: LogConfig) -> PartitionLog {
    PartitionLog::open(dir, config, false, 0).unwrap()
}

/// offset → (key, value) of every record in the log.
fn contents(log: &PartitionLog) -> BTreeMap<i64, (Vec<u8>, Option<Vec<u8>>)> {
    let mut out = BTreeMap::new();
    for (_, bytes) in log.read_all_batches().unwrap() {
        let mut bytes = bytes;
        let batch = RecordBatchDecoder::decode(&mut bytes).unwrap();
        for record in batch.records.into_iter().filter(|r| !r.control) {
            let key = record.key.expect("compacted records have keys").to_vec();
            out.insert(record.offset, (key, record.value.map(|v| v.to_vec())));
        }
    }
    out
}

/// key → (offset, value) of the latest record of each key.
fn latest(
    records: &BTreeMap<i64, (Vec<u8>, Option<Vec<u8>>)>,
) -> BTreeMap<Vec<u8>, (i64, Option<Vec<u8>>)> {
    let mut out = BTreeMap::new();
    for (offset, (key, value)) in records {
        out.insert(key.clone(), (*offset, value.clone()));
    }
    out
}

/// 40 batches of 3 records over keys k0..k9; every 7th record a tombstone.
fn fill(log: &mut PartitionLog) {
    let codecs = [
        Compression::None,
        Compression::Zstd,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Gzip,
    ];
    let mut n = 0;
    for batch in 0..40 {
        let entries: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..3)
            .map(|_| {
                n += 1;
                let key = format!("k{}", (n * 7) % 10).into_bytes();
                let value = (n % 7 != 0).then(|| format!("value-{n}").into_bytes());
                (key, value)
            })
            .collect();
        let borrowed: Vec<KeyValue<'_>> = entries
            .iter()
            .map(|(k, v)| (Some(&k[..]), v.as_deref()))
            .collect();
        let bytes = encode_keyed_batch(&borrowed, codecs[batch % codecs.len()], 1000 + n as i64);
        log.append(bytes, 0, 0).unwrap();
    }
}

fn pass(log: &mut PartitionLog, memory_bytes: usize, now_ms: i64) -> Option<CleaningStats> {
    let high_watermark = log.log_end_offset();
    let plan = plan(log, high_watermark, now_ms).unwrap()?;
    if !plan.is_due(now_ms) {
        return None;
    }
    let outcome = clean(&plan, memory_bytes, now_ms).unwrap()?;
    let stats = outcome.stats;
    assert!(install(log, outcome, &|_| false).unwrap());
    Some(stats)
}

#[test]
fn a_pass_keeps_the_latest_record_of_every_key_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compact_config());
    fill(&mut log);
    let before = contents(&log);
    let active_base = log.active_base_offset();
    let size_before = log.size_bytes();
    let stats = pass(&mut log, 1 << 20, 0).expect("cleaned");
    let after = contents(&log);
    assert_eq!(latest(&after), latest(&before), "latest of every key kept");
    // The cleaner sees only sealed segments: superseded there means by a later sealed record.
    let sealed: BTreeMap<_, _> = before
        .range(..active_base)
        .map(|(o, r)| (*o, r.clone()))
        .collect();
    let latest_sealed = latest(&sealed);
    for (offset, record) in &after {
        assert_eq!(
            before.get(offset),
            Some(record),
            "records keep their offsets"
        );
        let (key, _) = record;
        if *offset < active_base {
            assert_eq!(
                latest_sealed[key].0, *offset,
                "offset {offset} was superseded"
            );
        }
    }
    assert!(
        after.range(active_base..).eq(before.range(active_base..)),
        "active segment untouched"
    );
    assert_eq!(log.log_end_offset(), 120);
    assert!(
        log.size_bytes() < size_before / 2,
        "{} vs {size_before}",
        log.size_bytes()
    );
    assert!(stats.records_removed > 50, "{stats:?}");
    assert_eq!(log.first_dirty_offset(), active_base);
    // A second pass has nothing dirty.
    assert!(pass(&mut log, 1 << 20, 0).is_none());
    // Fetching from a removed offset returns the next batch that remains.
    let gap = (0..active_base).find(|o| !after.contains_key(o)).unwrap();
    let read = log.read(gap, 1 << 20, i64::MAX, true).unwrap();
    let mut bytes = read.records.clone();
    let first = RecordBatchDecoder::decode(&mut bytes).unwrap();
    assert!(
        first.records[0].offset > gap,
        "the first record after the gap"
    );
    assert_eq!(
        first.records[0].offset,
        *after.range(gap..).next().unwrap().0
    );
}

#[test]
fn tombstones_stay_until_delete_retention_has_passed() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compact_config());
    fill(&mut log);
    let tombstoned: Vec<Vec<u8>> = latest(&contents(&log))
        .into_iter()
        .filter(|(_, (offset, value))| value.is_none() && *offset < log.active_base_offset())
        .map(|(key, _)| key)
        .collect();
    assert!(!tombstoned.is_empty(), "the fill leaves some keys deleted");
    pass(&mut log, 1 << 20, 0).unwrap();
    let kept = latest(&contents(&log));
    for key in &tombstoned {
        assert_eq!(
            kept[key].1, None,
            "tombstone of {key:?} kept within delete.retention.ms"
        );
    }
    // Later: new data makes the log dirty again; the old tombstones are now past the horizon.
    let active = log.active_base_offset();
    log.roll(0).unwrap();
    assert!(log.active_base_offset() >= active);
    let entries = [(Some(&b"fresh"[..]), Some(&b"1"[..]))];
    log.append(encode_keyed_batch(&entries, Compression::None, 1), 0, 0)
        .unwrap();
    log.roll(0).unwrap();
    pass(&mut log, 1 << 20, LATER_MS).unwrap();
    let kept = latest(&contents(&log));
    for key in &tombstoned {
        assert!(
            !kept.contains_key(key),
            "tombstone of {key:?} removed after the horizon"
        );
    }
    assert!(kept.contains_key(&b"fresh"[..]));
}

#[test]
fn a_small_offset_map_cleans_in_several_passes_to_the_same_result() {
    let dir_small = tempfile::tempdir().unwrap();
    let dir_large = tempfile::tempdir().unwrap();
    let mut small = open(dir_small.path(), compact_config());
    let mut large = open(dir_large.path(), compact_config());
    fill(&mut small);
    fill(&mut large);
    // 8 buckets of 25 bytes: 7 keys — a few batches per pass.
    let memory = 8 * 25;
    let mut passes = 0;
    while pass(&mut small, memory, 0).is_some() {
        passes += 1;
        assert!(passes < 100, "cleaning must make progress");
    }
    assert!(passes > 2, "{passes} passes");
    pass(&mut large, 1 << 20, 0).unwrap();
    assert_eq!(latest(&contents(&small)), latest(&contents(&large)));
    // Whatever the map size, only superseded records went.
    let small_records = contents(&small);
    let large_records = contents(&large);
    assert!(large_records.keys().all(|o| small_records.contains_key(o)));
}

#[test]
fn a_map_too_small_for_one_batch_cleans_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compact_config());
    fill(&mut log);
    let plan = plan(&log, log.log_end_offset(), 0).unwrap().unwrap();
    assert!(clean(&plan, 100, 0).unwrap().is_none());
    assert!(!dir.path().read_dir().unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".cleaned")));
}

#[test]
fn a_crash_at_any_swap_step_leaves_the_old_or_the_new_segments() {
    for step in [
        None,
        Some(SwapStep::Committed),
        Some(SwapStep::OldSegmentsDeleted),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), compact_config());
        fill(&mut log);
        let before = contents(&log);
        let plan = plan(&log, log.log_end_offset(), 0).unwrap().unwrap();
        let outcome = clean(&plan, 1 << 20, 0).unwrap().unwrap();
        match step {
            // Crash before the commit point: the cleaned files are on disk, nothing else.
            None => drop(outcome),
            Some(step) => {
                let crashed = install(&mut log, outcome, &|at| at == step);
                assert!(crashed.is_err());
            }
        }
        drop(log);
        let reopened = PartitionLog::open(dir.path(), compact_config(), false, 0).unwrap();
        let after = contents(&reopened);
        assert_eq!(latest(&after), latest(&before), "step {step:?}");
        assert!(
            after.iter().all(|(o, r)| before.get(o) == Some(r)),
            "step {step:?}"
        );
        assert_eq!(reopened.log_end_offset(), 120);
        let names: Vec<String> = dir
            .path()
            .read_dir()
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names
                .iter()
                .all(|n| !n.ends_with(".swap") && !n.ends_with(".cleaned")),
            "{names:?}"
        );
        if step.is_some() {
            assert!(
                after.len() < before.len(),
                "a committed swap is finished on open"
            );
        } else {
            assert_eq!(after, before, "uncommitted output is discarded");
        }
    }
}

#[test]
fn cleaned_segments_survive_clean_and_unclean_restarts() {
    for clean_shutdown in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), compact_config());
        fill(&mut log);
        pass(&mut log, 1 << 20, 0).unwrap();
        let cleaned = contents(&log);
        let first_dirty = log.first_dirty_offset();
        if clean_shutdown {
            log.close(0).unwrap();
        }
        drop(log);
        let reopened = PartitionLog::open(dir.path(), compact_config(), clean_shutdown, 0).unwrap();
        assert_eq!(contents(&reopened), cleaned);
        assert_eq!(reopened.log_end_offset(), 120);
        assert_eq!(reopened.first_dirty_offset(), first_dirty);
    }
}

#[test]
fn a_log_changed_during_cleaning_discards_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compact_config());
    fill(&mut log);
    let plan = plan(&log, log.log_end_offset(), 0).unwrap().unwrap();
    let outcome = clean(&plan, 1 << 20, 0).unwrap().unwrap();
    let second = log.sealed_segments().nth(1).unwrap().base_offset;
    log.advance_log_start_offset(second, 0).unwrap();
    let before = contents(&log);
    assert!(!install(&mut log, outcome, &|_| false).unwrap());
    assert_eq!(contents(&log), before);
    assert!(!dir.path().read_dir().unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".cleaned")));
}

#[test]
fn young_segments_wait_for_min_compaction_lag() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        min_compaction_lag_ms: 10_000,
        ..compact_config()
    };
    let mut log = open(dir.path(), config);
    fill(&mut log); // record timestamps 1001..1120
    assert!(
        pass(&mut log, 1 << 20, 5_000).is_none(),
        "younger than the lag"
    );
    assert!(pass(&mut log, 1 << 20, 20_000).is_some());
}

#[test]
fn the_dirty_ratio_decides_when_a_log_is_due() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        min_cleanable_dirty_ratio: 0.5,
        ..compact_config()
    };
    let mut log = open(dir.path(), config);
    fill(&mut log);
    pass(&mut log, 1 << 20, 0).unwrap();
    // A little new data next to the cleaned tail: below the ratio.
    log.roll(0).unwrap();
    let entries = [(Some(&b"k1"[..]), Some(&b"x"[..]))];
    log.append(encode_keyed_batch(&entries, Compression::None, 1), 0, 0)
        .unwrap();
    log.roll(0).unwrap();
    let plan = plan(&log, log.log_end_offset(), 0).unwrap().unwrap();
    assert!(plan.dirty_ratio() < 0.5, "{}", plan.dirty_ratio());
    assert!(!plan.is_due(0));
    let overdue = LogConfig {
        max_compaction_lag_ms: 1,
        ..plan.config.clone()
    };
    log.set_config(overdue);
    let plan = super::plan(&log, log.log_end_offset(), 10_000)
        .unwrap()
        .unwrap();
    assert!(plan.is_due(10_000), "max.compaction.lag.ms forces a pass");
}

/// A keyed batch stamped as coming from an idempotent producer.
fn producer_batch(key: &[u8], producer_id: i64, sequence: i32) -> bytes::BytesMut {
    let entries = [(Some(key), Some(&b"value"[..]))];
    let mut batch = encode_keyed_batch(&entries, Compression::None, 1000);
    batch[43..51].copy_from_slice(&producer_id.to_be_bytes());
    batch[51..53].copy_from_slice(&0i16.to_be_bytes());
    batch[53..57].copy_from_slice(&sequence.to_be_bytes());
    let crc = crate::log::batch::compute_crc(&batch);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    batch
}

#[test]
fn the_last_batch_of_a_producer_survives_cleaning_without_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compact_config());
    for sequence in 0..3 {
        log.append(producer_batch(b"k", 9, sequence), 0, 0).unwrap();
    }
    // Another writer supersedes the key: every record of producer 9 is now obsolete.
    let entries = [(Some(&b"k"[..]), Some(&b"newer"[..]))];
    log.append(encode_keyed_batch(&entries, Compression::None, 2000), 0, 0)
        .unwrap();
    log.roll(0).unwrap();
    pass(&mut log, 1 << 20, 0).unwrap();
    let batches = log.read_all_batches().unwrap();
    let headers: Vec<(i64, i64, i32, i32)> = batches
        .iter()
        .map(|(h, _)| {
            (
                h.base_offset,
                h.producer_id,
                h.base_sequence,
                h.records_count,
            )
        })
        .collect();
    assert_eq!(
        headers,
        vec![(2, 9, 2, 0), (3, -1, -1, 1)],
        "only the last batch, emptied"
    );
    // A producer state rebuilt from the log alone (no snapshot) still knows sequence 2.
    for offset in crate::producer::snapshot::list(dir.path()).unwrap() {
        crate::producer::snapshot::remove(dir.path(), offset).unwrap();
    }
    drop(log);
    let mut log = open(dir.path(), compact_config());
    let retry = log.append(producer_batch(b"k", 9, 2), 0, 0).unwrap();
    assert!(retry.duplicate && retry.base_offset == 2);
    assert!(
        !log.append(producer_batch(b"k", 9, 3), 0, 0)
            .unwrap()
            .duplicate
    );
}

/// Appends `key=value` outside any transaction.
fn put(log: &mut PartitionLog, key: &str, value: &str) {
    let entry: KeyValue<'_> = (Some(key.as_bytes()), Some(value.as_bytes()));
    log.append(encode_keyed_batch(&[entry], Compression::None, 1000), 0, 0)
        .unwrap();
}

/// Appends `key=value` in the open transaction of `producer_id` (sequence `sequence`).
fn put_in_txn(log: &mut PartitionLog, producer_id: i64, sequence: i32, key: &str, value: &str) {
    let entry: KeyValue<'_> = (Some(key.as_bytes()), Some(value.as_bytes()));
    let batch = encode_keyed_producer_batch(&[entry], producer_id, 0, sequence, true);
    log.append(batch, 0, 0).unwrap();
}

/// Enough other keys to seal the segments written so far.
fn seal(log: &mut PartitionLog, round: usize) {
    for i in 0..12 {
        put(log, &format!("filler-{round}-{i}"), "x");
    }
}

fn value_of(log: &PartitionLog, key: &str) -> Vec<String> {
    contents(log)
        .values()
        .filter(|(k, _)| k == key.as_bytes())
        .map(|(_, v)| String::from_utf8(v.clone().unwrap()).unwrap())
        .collect()
}

#[test]
fn an_aborted_update_neither_removes_the_committed_value_nor_survives_cleaning() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compact_config());
    put(&mut log, "k", "committed");
    put_in_txn(&mut log, 7, 0, "k", "aborted");
    log.append_marker(7, 0, MarkerKind::Abort, 0, 0, 0).unwrap();
    put_in_txn(&mut log, 8, 0, "j", "kept");
    log.append_marker(8, 0, MarkerKind::Commit, 0, 0, 0)
        .unwrap();
    seal(&mut log, 0);
    let stats = pass(&mut log, 1 << 20, LATER_MS).expect("cleaned");
    assert!(stats.records_removed >= 1);
    assert_eq!(value_of(&log, "k"), ["committed"]);
    assert_eq!(value_of(&log, "j"), ["kept"]);
    // Both markers stay: readers and a rebuilt producer state still see each transaction end.
    let markers = log
        .read_all_batches()
        .unwrap()
        .iter()
        .filter(|(_, bytes)| {
            crate::log::batch::BatchHeader::parse(bytes)
                .unwrap()
                .is_control()
        })
        .count();
    assert_eq!(markers, 2);
    drop(log);
    let log = open(dir.path(), compact_config());
    assert_eq!(log.first_unstable_offset(), None, "no transaction reopens");
}

#[test]
fn nothing_of_an_open_transaction_is_cleaned_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compact_config());
    put(&mut log, "k", "committed");
    put(&mut log, "j", "old");
    put_in_txn(&mut log, 7, 0, "k", "pending");
    put(&mut log, "j", "new");
    seal(&mut log, 0);
    assert_eq!(log.first_unstable_offset(), Some(2));
    pass(&mut log, 1 << 20, LATER_MS);
    assert_eq!(value_of(&log, "k"), ["committed", "pending"]);
    assert_eq!(
        value_of(&log, "j"),
        ["old", "new"],
        "past the LSO: not cleaned"
    );
    log.append_marker(7, 0, MarkerKind::Abort, 0, 0, 0).unwrap();
    seal(&mut log, 1);
    pass(&mut log, 1 << 20, LATER_MS).expect("cleaned");
    assert_eq!(value_of(&log, "k"), ["committed"]);
    assert_eq!(value_of(&log, "j"), ["new"]);
}
