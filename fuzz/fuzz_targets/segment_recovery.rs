//! A partition directory made of arbitrary bytes — a segment, its offset index and its time
//! index — opened as after a crash and as after a clean shutdown (indexes trusted), then read at
//! every offset and searched by time. Opening must recover or refuse with an error, and reads
//! must return — never panic, hang or allocate past the files.
//!
//! Input: two little-endian u16 lengths (offset index, time index), those bytes, then the
//! segment.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_broker::config::LogConfig;
use weir_broker::log::PartitionLog;

fn split(data: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let (lengths, rest) = data.split_at_checked(4)?;
    let index_len = u16::from_le_bytes([lengths[0], lengths[1]]) as usize;
    let time_len = u16::from_le_bytes([lengths[2], lengths[3]]) as usize;
    let (index, rest) = rest.split_at_checked(index_len.min(rest.len()))?;
    let (time, segment) = rest.split_at_checked(time_len.min(rest.len()))?;
    Some((index, time, segment))
}

fuzz_target!(|data: &[u8]| {
    let Some((index, time, segment)) = split(data) else {
        return;
    };
    for clean_shutdown in [false, true] {
        let dir = tempfile::tempdir().expect("temporary directory");
        let name = "00000000000000000000";
        let write = |extension: &str, bytes: &[u8]| {
            std::fs::write(dir.path().join(format!("{name}.{extension}")), bytes)
                .expect("write a test file");
        };
        write("log", segment);
        write("index", index);
        write("timeindex", time);
        let Ok(log) = PartitionLog::open(dir.path(), LogConfig::default(), clean_shutdown, 0)
        else {
            continue;
        };
        let end = log.log_end_offset();
        let start = log.log_start_offset();
        for offset in start..end.min(start + 64) {
            let _ = log.read(offset, 1 << 16, end, true);
        }
        for timestamp in [i64::MIN, -1, 0, 1_700_000_000_000, i64::MAX] {
            let _ = log.offset_for_timestamp(timestamp, end, 1 << 20);
        }
    }
});
