//! Cleaner throughput: one compaction pass over a log of keyed updates.
//!
//! `cargo bench -p weir-broker --bench compaction [-- LOG_MIB KEYS CODEC]` (defaults: 512 MiB,
//! 100000 keys, none). The log lives in `WEIR_BENCH_DIR` (default: the system temp dir) — put it
//! on the disk you want to measure. Prints the pass's read/write rates and the size before/after.

use std::time::Instant;

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use weir_broker::config::LogConfig;
use weir_broker::log::compaction;
use weir_broker::log::PartitionLog;

const RECORDS_PER_BATCH: usize = 100;
const VALUE_BYTES: usize = 100;

fn batch(first: u64, keys: u64, compression: Compression) -> BytesMut {
    let records: Vec<Record> = (0..RECORDS_PER_BATCH as u64)
        .map(|i| {
            let n = first + i;
            // A multiplicative hash spreads updates over the key space.
            let key = (n.wrapping_mul(2_654_435_761)) % keys;
            Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                sequence: i as i32 - 1,
                timestamp: 1_700_000_000_000 + n as i64,
                key: Some(Bytes::from(format!("key-{key:012}"))),
                value: Some(Bytes::from(vec![b'v'; VALUE_BYTES])),
                headers: Default::default(),
            }
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options).expect("encode");
    buf
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let log_mib: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(512);
    let keys: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let (codec_name, compression) = match args.get(2).map(String::as_str) {
        Some("lz4") => ("lz4", Compression::Lz4),
        Some("zstd") => ("zstd", Compression::Zstd),
        _ => ("none", Compression::None),
    };
    let base = std::env::var("WEIR_BENCH_DIR")
        .unwrap_or_else(|_| std::env::temp_dir().display().to_string());
    let dir = tempfile::tempdir_in(base).expect("bench dir");
    let config = LogConfig {
        compact: true,
        delete: false,
        segment_bytes: 64 << 20,
        min_cleanable_dirty_ratio: 0.0,
        ..LogConfig::default()
    };
    let mut log = PartitionLog::open(dir.path(), config, false, 0).expect("open");
    let target = log_mib << 20;
    let mut written = 0u64;
    let started = Instant::now();
    while log.size_bytes() < target {
        log.append(batch(written, keys, compression), 0, 0)
            .expect("append");
        written += RECORDS_PER_BATCH as u64;
    }
    log.roll(0).expect("roll");
    let append_secs = started.elapsed().as_secs_f64();
    let before = log.size_bytes();
    let started = Instant::now();
    let plan = compaction::plan(&log, log.log_end_offset(), 0)
        .expect("plan")
        .expect("dirty");
    let outcome = compaction::clean(&plan, 128 << 20, 0)
        .expect("clean")
        .expect("cleaned");
    let stats = outcome.stats;
    assert!(compaction::install(&mut log, outcome, &|_| false).expect("install"));
    let secs = started.elapsed().as_secs_f64();
    let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    println!(
        "compaction bench: {log_mib} MiB log, {keys} keys, {written} records, codec {codec_name}"
    );
    println!("  appended in {append_secs:.2} s");
    println!(
        "  one pass: {secs:.2} s; read {:.0} MiB ({:.0} MiB/s), wrote {:.1} MiB, removed {} records ({:.0} records/s)",
        mib(stats.bytes_read),
        mib(stats.bytes_read) / secs,
        mib(stats.bytes_written),
        stats.records_removed,
        written as f64 / secs,
    );
    println!(
        "  log size {:.0} MiB → {:.1} MiB",
        mib(before),
        mib(log.size_bytes())
    );
}
