//! Property test of the partition log against a simple model: random appends (every codec),
//! rolls, truncations, log-start moves, clean restarts, crashes with garbage after the tail and
//! crashes that tear the active segment. After every step the log must hold exactly the model's
//! records (for a torn tail: exactly a prefix, losing only records of the active segment).

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![allow(clippy::too_many_lines)] // a test is one scenario, read top to bottom

use std::path::Path;

use bytes::BytesMut;
use kafka_protocol::records::{Compression, RecordBatchDecoder};
use proptest::prelude::*;
use weir_broker::config::LogConfig;
use weir_broker::log::PartitionLog;

#[derive(Debug, Clone)]
enum Op {
    Append {
        values: Vec<Vec<u8>>,
        codec: u8,
        timestamp: i64,
    },
    Roll,
    Truncate {
        fraction: f64,
    },
    AdvanceStart {
        fraction: f64,
    },
    CleanRestart,
    CrashWithGarbage {
        garbage: Vec<u8>,
    },
    CrashTearingTail {
        keep_fraction: f64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..8), 0u8..5, 0i64..1_000_000)
            .prop_map(|(values, codec, timestamp)| Op::Append { values, codec, timestamp }),
        1 => Just(Op::Roll),
        1 => (0.0f64..1.0).prop_map(|fraction| Op::Truncate { fraction }),
        1 => (0.0f64..1.0).prop_map(|fraction| Op::AdvanceStart { fraction }),
        1 => Just(Op::CleanRestart),
        1 => prop::collection::vec(any::<u8>(), 1..80).prop_map(|garbage| Op::CrashWithGarbage { garbage }),
        1 => (0.0f64..1.0).prop_map(|keep_fraction| Op::CrashTearingTail { keep_fraction }),
    ]
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 400,
        index_interval_bytes: 64,
        ..LogConfig::default()
    }
}

#[path = "support/records.rs"]
mod records;

fn encode(values: &[Vec<u8>], codec: u8, timestamp: i64) -> BytesMut {
    let compression = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ][codec as usize];
    let values: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
    records::encode_batch_with_timestamps(&values, compression, timestamp)
}

/// Every record the log returns from `from` on, as (offset, value).
fn read_from(log: &PartitionLog, from: i64) -> Vec<(i64, Vec<u8>)> {
    let end = log.log_end_offset();
    let mut out = Vec::new();
    let mut offset = from;
    while offset < end {
        let read = log.read(offset, 1 << 20, end, true).expect("read");
        assert!(read.next_offset > offset, "read made progress at {offset}");
        let mut bytes = read.records.clone();
        for set in RecordBatchDecoder::decode_all(&mut bytes).expect("decode") {
            for record in set.records {
                if record.offset >= offset {
                    out.push((
                        record.offset,
                        record.value.map(|v| v.to_vec()).unwrap_or_default(),
                    ));
                }
            }
        }
        offset = read.next_offset;
    }
    out
}

fn active_segment(dir: &Path) -> std::path::PathBuf {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    logs.pop().unwrap()
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p-0");
    let now = 2_000_000_000_000i64;
    let mut log = PartitionLog::open(&path, config(), false, now).unwrap();
    let mut model: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut log_start = 0i64;
    let mut log_end = 0i64;
    for op in ops {
        match op {
            Op::Append {
                values,
                codec,
                timestamp,
            } => {
                let info = log
                    .append(encode(&values, codec, timestamp), 0, now)
                    .unwrap();
                assert_eq!(info.base_offset, log_end);
                for (i, value) in values.into_iter().enumerate() {
                    model.push((log_end + i as i64, value));
                }
                log_end = info.last_offset + 1;
            }
            Op::Roll => log.roll(now).unwrap(),
            Op::Truncate { fraction } => {
                let target = log_start + ((log_end - log_start) as f64 * fraction) as i64;
                log.truncate_to(target).unwrap();
                // Truncation cuts at batch boundaries: whole batches at or after the target go.
                log_end = log.log_end_offset();
                assert!(
                    log_end <= target.max(log_start),
                    "nothing at or after the target remains"
                );
                log_start = log_start.min(log_end);
                model.retain(|(offset, _)| *offset < log_end);
            }
            Op::AdvanceStart { fraction } => {
                let target = log_start + ((log_end - log_start) as f64 * fraction) as i64;
                log_start = log.advance_log_start_offset(target, now).unwrap();
                assert_eq!(log_start, target.max(log_start));
            }
            Op::CleanRestart => {
                log.close(now).unwrap();
                drop(log);
                log = PartitionLog::open(&path, config(), true, now).unwrap();
            }
            Op::CrashWithGarbage { garbage } => {
                drop(log);
                let active = active_segment(&path);
                let mut bytes = std::fs::read(&active).unwrap();
                bytes.extend_from_slice(&garbage);
                std::fs::write(&active, bytes).unwrap();
                log = PartitionLog::open(&path, config(), false, now).unwrap();
            }
            Op::CrashTearingTail { keep_fraction } => {
                drop(log);
                let active = active_segment(&path);
                let active_base: i64 = active
                    .file_stem()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                let length = std::fs::metadata(&active).unwrap().len();
                let keep = (length as f64 * keep_fraction) as u64;
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&active)
                    .unwrap()
                    .set_len(keep)
                    .unwrap();
                log = PartitionLog::open(&path, config(), false, now).unwrap();
                let recovered_end = log.log_end_offset();
                assert!(
                    recovered_end >= active_base.min(log_end),
                    "only the active segment loses data"
                );
                log_end = recovered_end;
                log_start = log_start.min(log_end);
                model.retain(|(offset, _)| *offset < log_end);
            }
        }
        assert_eq!(log.log_end_offset(), log_end, "log end offset");
        assert_eq!(log.log_start_offset(), log_start, "log start offset");
        let expected: Vec<_> = model
            .iter()
            .filter(|(o, _)| *o >= log_start)
            .cloned()
            .collect();
        assert_eq!(
            read_from(&log, log_start),
            expected,
            "all records from the log start"
        );
        if log_end > log_start {
            let middle = log_start + (log_end - log_start) / 2;
            let expected: Vec<_> = model
                .iter()
                .filter(|(o, _)| *o >= middle)
                .cloned()
                .collect();
            assert_eq!(read_from(&log, middle), expected, "records from the middle");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn log_matches_model(ops in prop::collection::vec(op(), 1..40)) {
        run(ops);
    }
}
