//! A produced record batch as the broker validates it: header, CRC, bounded decompression of
//! every codec, record framing and counts. Validation must return — never panic, abort or
//! decompress past its bound. (The CRC is recomputed when the first byte is odd, so that the
//! fuzzer gets past the checksum into decompression and record parsing.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_broker::log::batch::{compute_crc, validate_producer_batch, ValidationLimits};

const LIMITS: ValidationLimits = ValidationLimits {
    max_batch_bytes: 1 << 20,
    max_decompressed_bytes: 4 << 20,
    require_keys: false,
    timestamp_bounds_ms: None,
};

fuzz_target!(|data: &[u8]| {
    let [fix_crc, batch @ ..] = data else {
        return;
    };
    let mut batch = batch.to_vec();
    if fix_crc % 2 == 1 && batch.len() >= 21 {
        let crc = compute_crc(&batch);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
    }
    let _ = validate_producer_batch(&batch, &LIMITS);
    // Compacted, and bounded timestamps (every record's timestamp is read and checked).
    let limits = ValidationLimits {
        require_keys: true,
        timestamp_bounds_ms: Some((1_000_000, 2_000_000)),
        ..LIMITS
    };
    let _ = validate_producer_batch(&batch, &limits);
});
