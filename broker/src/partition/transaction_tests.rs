//! Transactions in one partition: the last stable offset, markers, the aborted-transactions
//! index, read_committed reads — and all of it after a crash, a clean restart and truncation.

use std::path::Path;
use std::sync::Arc;

use kafka_protocol::records::RecordBatchDecoder;

use super::*;
use crate::clock::ManualClock;
use crate::log::test_support::{encode_batch, encode_producer_batch};
use crate::producer::ProducerError;

fn partition(dir: &Path, clean_shutdown: bool) -> Partition {
    let log = PartitionLog::open(dir, LogConfig::default(), clean_shutdown, 0).unwrap();
    Partition::new("t".into(), 0, log, 0, Arc::new(ManualClock::new(1_000)))
}

fn txn(partition: &Partition, producer_id: i64, first_sequence: i32, records: usize) -> i64 {
    let values: Vec<&[u8]> = vec![b"v"; records];
    let batch = encode_producer_batch(&values, producer_id, 0, first_sequence, true);
    partition.append(batch).unwrap().base_offset
}

/// Offsets of the records a read_committed consumer keeps reading from `from` to the last
/// stable offset (fetch after fetch: one read returns one segment at most), and the aborted
/// transactions it was told about.
fn read_committed(partition: &Partition, from: i64) -> (Vec<i64>, Vec<(i64, i64)>) {
    let mut kept = Vec::new();
    let mut told: Vec<(i64, i64)> = Vec::new();
    let mut position = from;
    while position < partition.offsets().last_stable_offset {
        let (read, aborted) = partition.read_committed(position, 1 << 20, true).unwrap();
        for txn in aborted {
            if !told.contains(&(txn.producer_id, txn.first_offset)) {
                told.push((txn.producer_id, txn.first_offset));
            }
        }
        let mut bytes = read.records;
        while !bytes.is_empty() {
            let batch = RecordBatchDecoder::decode(&mut bytes).unwrap();
            for record in batch.records {
                let dropped = told
                    .iter()
                    .any(|(pid, first)| record.producer_id == *pid && record.offset >= *first);
                if !record.control && !dropped && record.offset >= position {
                    kept.push(record.offset);
                }
            }
        }
        assert!(
            read.next_offset > position,
            "a read below the LSO returns data"
        );
        position = read.next_offset;
    }
    (kept, told)
}

#[test]
fn read_committed_sees_committed_transactions_and_skips_aborted_ones() {
    let dir = tempfile::tempdir().unwrap();
    let p = partition(dir.path(), false);
    assert_eq!(txn(&p, 1, 0, 2), 0); // producer 1: offsets 0-1, open
    p.append(encode_batch(
        &[b"plain"],
        kafka_protocol::records::Compression::None,
    ))
    .unwrap(); // 2
    assert_eq!(txn(&p, 1, 2, 1), 3);
    assert_eq!(p.offsets().last_stable_offset, 0, "held back by producer 1");
    assert_eq!(p.offsets().high_watermark, 4);
    assert_eq!(read_committed(&p, 0), (vec![], vec![]));
    assert_eq!(
        p.append_marker(1, 0, MarkerKind::Commit, 0)
            .unwrap()
            .base_offset,
        4
    );
    assert_eq!(p.offsets().last_stable_offset, 5);
    assert_eq!(read_committed(&p, 0), (vec![0, 1, 2, 3], vec![]));

    assert_eq!(txn(&p, 3, 0, 2), 5); // producer 3: 5-6, then aborted at 7
    assert_eq!(txn(&p, 4, 0, 1), 7, "interleaved with producer 3");
    p.append_marker(3, 0, MarkerKind::Abort, 0).unwrap(); // 8
    assert_eq!(p.offsets().last_stable_offset, 7, "producer 4 still open");
    let (kept, aborted) = read_committed(&p, 0);
    assert_eq!(kept, vec![0, 1, 2, 3]);
    assert_eq!(aborted, vec![(3, 5)]);
    p.append_marker(4, 0, MarkerKind::Commit, 0).unwrap(); // 9
    assert_eq!(p.offsets().last_stable_offset, 10);
    assert_eq!(read_committed(&p, 5), (vec![7], vec![(3, 5)]));
    // read_uncommitted returns aborted records too, as Kafka does.
    let all = p.read(0, 1 << 20, true).unwrap();
    assert_eq!(all.next_offset, 10);

    // Fencing: an older producer epoch or coordinator epoch cannot write markers.
    txn(&p, 5, 0, 1); // 10
    p.append_marker(5, 0, MarkerKind::Commit, 3).unwrap(); // 11
    assert!(matches!(
        p.append_marker(5, 0, MarkerKind::Commit, 2),
        Err(LogError::Producer(ProducerError::CoordinatorFenced { .. }))
    ));
    let fenced = encode_producer_batch(&[b"x"], 5, 1, 0, true);
    p.append(fenced).unwrap(); // epoch 1: 12
    assert!(matches!(
        p.append_marker(5, 0, MarkerKind::Abort, 3),
        Err(LogError::Producer(ProducerError::InvalidEpoch { .. }))
    ));
    // Control batches never come from clients.
    let forged = crate::log::control::marker_batch(9, 0, MarkerKind::Commit, 0, 0);
    assert!(p.append(forged).is_err());
}

#[test]
fn transactions_survive_a_crash_and_a_clean_restart_and_truncation_reopens_them() {
    let dir = tempfile::tempdir().unwrap();
    {
        let p = partition(dir.path(), false);
        txn(&p, 1, 0, 2); // 0-1
        p.append_marker(1, 0, MarkerKind::Abort, 0).unwrap(); // 2
        txn(&p, 2, 0, 1); // 3, left open
        p.log().roll(0).unwrap(); // a snapshot at 4
        txn(&p, 3, 0, 1); // 4
        p.append_marker(3, 0, MarkerKind::Abort, 0).unwrap(); // 5, after the snapshot
    } // crash: no close
    let p = partition(dir.path(), false);
    assert_eq!(
        p.offsets().last_stable_offset,
        3,
        "producer 2 is still open"
    );
    p.append_marker(2, 0, MarkerKind::Commit, 0).unwrap(); // 6
    assert_eq!(read_committed(&p, 0), (vec![3], vec![(1, 0), (3, 4)]));
    p.log().close(0).unwrap();
    drop(p);
    let p = partition(dir.path(), true);
    assert_eq!(p.offsets().last_stable_offset, 7);
    assert_eq!(read_committed(&p, 0), (vec![3], vec![(1, 0), (3, 4)]));
    // Truncating below producer 3's abort marker reopens its transaction.
    p.log().truncate_to(5).unwrap();
    assert_eq!(
        p.log().first_unstable_offset(),
        Some(3),
        "producer 2's commit went too"
    );
    assert_eq!(p.log().aborted_transactions(0, 10).len(), 1);
}
