use super::*;
use crate::log::segment::segment_file_name;
use crate::log::test_support::encode_batch;
use kafka_protocol::records::Compression;

fn open(dir: &Path, config: LogConfig) -> PartitionLog {
    PartitionLog::open(dir, config, false, 0).unwrap()
}

#[test]
fn leader_epochs_follow_appends_truncation_and_a_lost_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    let batch = || encode_batch(&[b"a", b"b"], Compression::None);
    log.append(batch(), 0, 0).unwrap();
    log.append(batch(), 0, 0).unwrap();
    log.begin_leader_epoch(3).unwrap();
    log.append(batch(), 3, 0).unwrap();
    assert_eq!(log.end_offset_for_epoch(0), (0, 4));
    assert_eq!(log.end_offset_for_epoch(2), (0, 4));
    assert_eq!(log.end_offset_for_epoch(3), (3, 6));
    log.close(0).unwrap();
    drop(log);
    // A log written before the cache existed: rebuilt from the batches' epochs.
    fs::remove_file(
        dir.path()
            .join(crate::log::leader_epochs::LEADER_EPOCH_FILE),
    )
    .unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    assert_eq!(log.end_offset_for_epoch(0), (0, 4));
    assert_eq!(log.latest_epoch(), Some(3));
    log.truncate_to(4).unwrap();
    assert_eq!(log.latest_epoch(), Some(0));
    assert_eq!(log.end_offset_for_epoch(0), (0, 4));
    log.advance_log_start_offset(2, 0).unwrap();
    drop(log);
    let log = open(dir.path(), LogConfig::default());
    assert_eq!(log.latest_epoch(), Some(0));
    assert_eq!(log.end_offset_for_epoch(3), (-1, -1));
}

#[test]
fn reset_starts_an_empty_log_at_the_given_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    log.append(encode_batch(&[b"a", b"b"], Compression::None), 1, 0)
        .unwrap();
    log.reset_to(100, 0).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (100, 100));
    assert_eq!(log.latest_epoch(), None);
    log.append(encode_batch(&[b"c"], Compression::None), 2, 0)
        .unwrap();
    drop(log);
    let log = open(dir.path(), LogConfig::default());
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (100, 101));
    assert_eq!(log.end_offset_for_epoch(2), (2, 101));
    assert_eq!(log.read(100, 1 << 20, 101, true).unwrap().next_offset, 101);
}

#[test]
fn segment_ms_rolls_on_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_ms: 1000,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    log.append(encode_batch(&[b"a"], Compression::None), 0, 0)
        .unwrap();
    log.append(encode_batch(&[b"b"], Compression::None), 0, 999)
        .unwrap();
    assert_eq!(log.segment_count(), 1);
    log.append(encode_batch(&[b"c"], Compression::None), 0, 1000)
        .unwrap();
    assert_eq!(log.segment_count(), 2);
    assert_eq!(log.log_end_offset(), 3);
}

#[test]
fn flush_messages_and_flush_ms_make_a_flush_due() {
    let dir = tempfile::tempdir().unwrap();
    let by_count = LogConfig {
        flush_messages: 3,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), by_count);
    log.append(encode_batch(&[b"a", b"b"], Compression::None), 0, 0)
        .unwrap();
    assert!(!log.flush_due(0));
    log.append(encode_batch(&[b"c"], Compression::None), 0, 0)
        .unwrap();
    assert!(log.flush_due(0));
    let plan = log.flush_plan();
    log.mark_flushed(&plan, 0);
    assert!(!log.flush_due(0));

    let dir = tempfile::tempdir().unwrap();
    let by_time = LogConfig {
        flush_ms: 1000,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), by_time);
    log.append(encode_batch(&[b"a"], Compression::None), 0, 0)
        .unwrap();
    assert!(!log.flush_due(999));
    assert!(log.flush_due(1000));
    let plan = log.flush_plan();
    log.mark_flushed(&plan, 1000);
    assert!(!log.flush_due(5000), "nothing new to flush");
}

#[test]
fn log_append_time_restamps_and_keeps_the_crc_valid() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        log_append_time: true,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    let info = log
        .append(encode_batch(&[b"a", b"b"], Compression::Zstd), 7, 123_456)
        .unwrap();
    assert_eq!(info.log_append_time_ms, 123_456);
    let (header, bytes) = log.read_all_batches().unwrap().remove(0);
    assert_eq!(header.max_timestamp, 123_456);
    assert_eq!(header.partition_leader_epoch, 7);
    assert!(header.is_log_append_time());
    batch::verify_crc(&bytes, &header).unwrap();
}

#[test]
fn idempotent_retries_are_answered_with_the_original_offsets_across_restarts() {
    use crate::log::test_support::encode_idempotent_batch;
    use crate::producer::ProducerError;
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_bytes: 200,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config.clone());
    let batch = |first: i32| encode_idempotent_batch(&[b"aaaaaaaaaa", b"bbbbbbbbbb"], 77, 0, first);
    let mut firsts = Vec::new();
    for i in 0..6 {
        let info = log.append(batch(i * 2), 0, 0).unwrap();
        assert!(!info.duplicate);
        firsts.push(info.base_offset);
    }
    assert!(log.segment_count() > 2, "rolled: snapshots were written");
    let retry = log.append(batch(8), 0, 0).unwrap();
    assert!(retry.duplicate);
    assert_eq!(
        (retry.base_offset, retry.last_offset),
        (firsts[4], firsts[4] + 1)
    );
    assert_eq!(log.log_end_offset(), 12, "nothing appended for the retry");
    let gap = log.append(batch(20), 0, 0).unwrap_err();
    assert!(
        matches!(
            gap,
            LogError::Producer(ProducerError::OutOfOrderSequence { expected: 12, .. })
        ),
        "{gap}"
    );

    // A crash (no close): the newest roll snapshot plus the replayed tail give the same state.
    let before = log.producer_state().clone();
    drop(log);
    let mut log = open(dir.path(), config.clone());
    assert_eq!(log.producer_state(), &before);
    assert!(log.append(batch(10), 0, 0).unwrap().duplicate);
    // A clean shutdown: the state comes from the snapshot at the log end.
    log.close(0).unwrap();
    drop(log);
    let mut log = PartitionLog::open(dir.path(), config.clone(), true, 0).unwrap();
    assert_eq!(log.producer_state(), &before);
    assert_eq!(log.append(batch(12), 0, 0).unwrap().base_offset, 12);
    // Without any snapshot the whole log is replayed.
    for offset in snapshot::list(dir.path()).unwrap() {
        snapshot::remove(dir.path(), offset).unwrap();
    }
    drop(log);
    let mut log = open(dir.path(), config);
    assert!(log.append(batch(12), 0, 0).unwrap().duplicate);
    // Truncation forgets what it removed: the producer may write those sequences again.
    log.truncate_to(12).unwrap();
    let again = log.append(batch(12), 0, 0).unwrap();
    assert!(!again.duplicate);
    assert_eq!(again.base_offset, 12);
}

/// An offset index entry that points inside a batch (a damaged or hostile file of a sealed
/// segment, trusted after a clean shutdown) must not make its offsets unreadable: the search
/// starts over from the segment's start.
#[test]
fn an_index_entry_pointing_inside_a_batch_falls_back_to_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let one = encode_batch(&[b"value-0"], Compression::None).len() as u64;
    let config = LogConfig {
        index_interval_bytes: 1,
        // Four batches to a segment: the first segment is sealed, its index read back as is.
        segment_bytes: 4 * one,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config.clone());
    for i in 0..10 {
        let value = format!("value-{i}");
        log.append(encode_batch(&[value.as_bytes()], Compression::None), 0, 0)
            .unwrap();
    }
    assert!(log.segment_count() > 1);
    log.close(0).unwrap();
    drop(log);
    // Move every entry after the first 7 bytes into its batch: still increasing, still inside.
    let index_path = dir.path().join("00000000000000000000.index");
    let mut index = std::fs::read(&index_path).unwrap();
    assert!(
        index.len() >= 16,
        "the sealed segment's index has several entries"
    );
    for entry in index.chunks_exact_mut(8).skip(1) {
        let position = u32::from_be_bytes([entry[4], entry[5], entry[6], entry[7]]) + 7;
        entry[4..8].copy_from_slice(&position.to_be_bytes());
    }
    std::fs::write(&index_path, &index).unwrap();
    let log = PartitionLog::open(dir.path(), config, true, 0).unwrap();
    for offset in 0..10 {
        let read = log.read(offset, 1, 10, true).unwrap();
        let (_, header) = BatchIter::new(&read.records)
            .next()
            .unwrap_or_else(|| panic!("offset {offset} unreadable"))
            .unwrap();
        assert_eq!(header.base_offset, offset);
    }
}

/// The names of the files in `dir`, sorted.
fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A log of three segments (offsets 0, 1, 2), each rolled by `segment.ms`.
fn three_segments(dir: &Path, file_delete_delay_ms: u64) -> PartitionLog {
    let config = LogConfig {
        segment_ms: 1000,
        file_delete_delay_ms,
        ..LogConfig::default()
    };
    let mut log = open(dir, config);
    for (index, value) in [b"a", b"b", b"c"].iter().enumerate() {
        let now_ms = index as i64 * 1000;
        log.append(encode_batch(&[*value], Compression::None), 0, now_ms)
            .unwrap();
    }
    assert_eq!(log.segment_count(), 3);
    log
}

#[test]
fn removed_segments_keep_their_files_renamed_for_the_delete_delay() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = three_segments(dir.path(), 60_000);
    let first = segment_file_name(0, "log");
    log.advance_log_start_offset(1, 5_000).unwrap();
    let names = file_names(dir.path());
    assert!(!names.contains(&first), "{names:?}");
    for extension in ["log", "index", "timeindex"] {
        let retired = format!("{}.deleted", segment_file_name(0, extension));
        assert!(names.contains(&retired), "{retired} in {names:?}");
    }
    assert_eq!(log.retired_segments_waiting(), 1);
    // The delay counts from the first check after the removal.
    assert_eq!(log.delete_retired_files(10_000).unwrap(), 0);
    assert_eq!(log.delete_retired_files(69_999).unwrap(), 0);
    assert!(file_names(dir.path())
        .iter()
        .any(|n| n.ends_with(".deleted")));
    assert_eq!(log.delete_retired_files(70_000).unwrap(), 1);
    assert_eq!(log.retired_segments_waiting(), 0);
    let names = file_names(dir.path());
    assert!(!names.iter().any(|n| n.ends_with(".deleted")), "{names:?}");
    // The log reads on from its new start (a read covers one segment).
    assert_eq!(log.read(1, 1 << 20, 3, true).unwrap().next_offset, 2);
}

#[test]
fn a_zero_delete_delay_deletes_at_once_and_a_restart_deletes_what_waited() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = three_segments(dir.path(), 0);
    log.advance_log_start_offset(1, 5_000).unwrap();
    assert_eq!(log.retired_segments_waiting(), 0);
    let names = file_names(dir.path());
    for extension in ["log", "index", "timeindex"] {
        let file = segment_file_name(0, extension);
        assert!(
            !names.iter().any(|n| n.starts_with(&file)),
            "{file}: {names:?}"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let mut log = three_segments(dir.path(), 60_000);
    log.truncate_to(1).unwrap();
    assert_eq!(log.retired_segments_waiting(), 1, "the segment at 2 went");
    log.close(5_000).unwrap();
    drop(log);
    assert!(file_names(dir.path())
        .iter()
        .any(|n| n.ends_with(".deleted")));
    let log = open(dir.path(), LogConfig::default());
    let names = file_names(dir.path());
    assert!(!names.iter().any(|n| n.ends_with(".deleted")), "{names:?}");
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, 1));
}
