//! Record batches (magic v2) as they travel on the wire and sit in segments.
//!
//! The log stores batches exactly as producers sent them. The broker only ever rewrites the
//! fields that are not covered by the CRC (base offset, partition leader epoch) and, for topics
//! with `message.timestamp.type=LogAppendTime`, the timestamp fields (then the CRC is recomputed).
//!
//! Layout of the 61-byte header (all big-endian):
//! ```text
//! 0  base_offset i64        | 8  batch_length i32 | 12 partition_leader_epoch i32 | 16 magic i8
//! 17 crc u32 (CRC-32C of bytes 21..end)           | 21 attributes i16 | 23 last_offset_delta i32
//! 27 base_timestamp i64     | 35 max_timestamp i64 | 43 producer_id i64 | 51 producer_epoch i16
//! 53 base_sequence i32      | 57 records_count i32 | 61 records…
//! ```

use bytes::{Buf, BytesMut};

use crate::log::compression::{decompress_bounded, CompressionCodec};
use crate::log::error::BatchError;
use crate::log::record::RecordIter;

/// Size of the fixed v2 batch header.
pub const BATCH_HEADER_BYTES: usize = 61;
/// Bytes before (and including) the `batch_length` field.
pub const LOG_OVERHEAD_BYTES: usize = 12;
const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;
const BASE_TIMESTAMP_OFFSET: usize = 27;
const MAX_TIMESTAMP_OFFSET: usize = 35;

/// Bits 0–2 of the attributes: the compression codec.
const CODEC_BITS: i16 = 0x07;
const TIMESTAMP_TYPE_LOG_APPEND_TIME_BIT: i16 = 1 << 3;
const TRANSACTIONAL_BIT: i16 = 1 << 4;
const CONTROL_BIT: i16 = 1 << 5;

/// The decoded fixed header of one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    /// Bytes following the `batch_length` field; the whole batch is `batch_length + 12` bytes.
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl BatchHeader {
    /// Parses the header at the start of `bytes`, which must hold at least the 61 header bytes.
    pub fn parse(bytes: &[u8]) -> Result<Self, BatchError> {
        if bytes.len() < BATCH_HEADER_BYTES {
            return Err(BatchError::Truncated {
                needed: BATCH_HEADER_BYTES,
                available: bytes.len(),
            });
        }
        let mut buf = bytes;
        let header = BatchHeader {
            base_offset: buf.get_i64(),
            batch_length: buf.get_i32(),
            partition_leader_epoch: buf.get_i32(),
            magic: buf.get_i8(),
            crc: buf.get_u32(),
            attributes: buf.get_i16(),
            last_offset_delta: buf.get_i32(),
            base_timestamp: buf.get_i64(),
            max_timestamp: buf.get_i64(),
            producer_id: buf.get_i64(),
            producer_epoch: buf.get_i16(),
            base_sequence: buf.get_i32(),
            records_count: buf.get_i32(),
        };
        if header.magic != 2 {
            return Err(BatchError::UnsupportedMagic(header.magic));
        }
        if (header.batch_length as i64) < (BATCH_HEADER_BYTES - LOG_OVERHEAD_BYTES) as i64 {
            return Err(BatchError::InvalidLength(header.batch_length));
        }
        Ok(header)
    }

    /// Total bytes of the batch including the offset and length fields.
    pub fn total_bytes(&self) -> usize {
        self.batch_length as usize + LOG_OVERHEAD_BYTES
    }

    pub fn last_offset(&self) -> i64 {
        self.base_offset + self.last_offset_delta as i64
    }

    /// The offset after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset() + 1
    }

    pub fn compression(&self) -> Result<CompressionCodec, BatchError> {
        CompressionCodec::from_attributes(self.attributes)
    }

    pub fn is_log_append_time(&self) -> bool {
        self.attributes & TIMESTAMP_TYPE_LOG_APPEND_TIME_BIT != 0
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }
}

/// Reads just `base_offset` and `batch_length` (the first 12 bytes) without validating anything.
pub fn peek_offset_and_length(bytes: &[u8]) -> Option<(i64, usize)> {
    if bytes.len() < LOG_OVERHEAD_BYTES {
        return None;
    }
    let mut buf = bytes;
    let base_offset = buf.get_i64();
    let batch_length = buf.get_i32();
    if batch_length < (BATCH_HEADER_BYTES - LOG_OVERHEAD_BYTES) as i32 {
        return None;
    }
    Some((base_offset, batch_length as usize + LOG_OVERHEAD_BYTES))
}

/// CRC-32C over the bytes the batch CRC covers (attributes to the end).
pub fn compute_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..])
}

/// `batch` with `records` (encoded with `codec`) as its records section: the header is kept
/// (offsets, producer id, epoch and sequence, timestamps, transactional bit); the length, the
/// codec bits and the CRC are rewritten.
pub fn with_records_section(batch: &[u8], codec: CompressionCodec, records: &[u8]) -> BytesMut {
    let mut rebuilt = BytesMut::with_capacity(BATCH_HEADER_BYTES + records.len());
    rebuilt.extend_from_slice(&batch[..BATCH_HEADER_BYTES]);
    rebuilt.extend_from_slice(records);
    let batch_length = (rebuilt.len() - LOG_OVERHEAD_BYTES) as i32;
    rebuilt[8..LOG_OVERHEAD_BYTES].copy_from_slice(&batch_length.to_be_bytes());
    let attributes = i16::from_be_bytes([batch[ATTRIBUTES_OFFSET], batch[ATTRIBUTES_OFFSET + 1]]);
    let attributes = (attributes & !CODEC_BITS) | codec.attribute_bits();
    rebuilt[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
    let crc = compute_crc(&rebuilt);
    rebuilt[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    rebuilt
}

/// Checks the CRC of one whole batch.
pub fn verify_crc(batch: &[u8], header: &BatchHeader) -> Result<(), BatchError> {
    let computed = compute_crc(batch);
    if computed != header.crc {
        return Err(BatchError::CrcMismatch {
            stored: header.crc,
            computed,
        });
    }
    Ok(())
}

/// Limits applied while validating a batch from a producer.
#[derive(Debug, Clone, Copy)]
pub struct ValidationLimits {
    /// `max.message.bytes` of the topic: the largest batch accepted.
    pub max_batch_bytes: usize,
    /// Upper bound on the uncompressed size of a compressed batch.
    pub max_decompressed_bytes: usize,
    /// Compacted topics accept only records with a key.
    pub require_keys: bool,
    /// CreateTime topics: the earliest and latest record timestamps accepted (now less
    /// `message.timestamp.before.max.ms`, now plus `message.timestamp.after.max.ms`).
    pub timestamp_bounds_ms: Option<(i64, i64)>,
}

/// What validation learned about a producer batch.
#[derive(Debug, Clone)]
pub struct ValidatedBatch {
    pub header: BatchHeader,
    pub records_count: i32,
    /// The records section decompressed, when the batch was compressed (validation had to).
    pub decompressed_records: Option<Vec<u8>>,
}

/// Validates the `records` field of a Produce request: exactly one v2 batch with a good CRC,
/// a size within limits, and records whose count and offset deltas match the header.
pub fn validate_producer_batch(
    records: &[u8],
    limits: &ValidationLimits,
) -> Result<ValidatedBatch, BatchError> {
    let header = BatchHeader::parse(records)?;
    let total = header.total_bytes();
    if total != records.len() {
        if total > records.len() {
            return Err(BatchError::Truncated {
                needed: total,
                available: records.len(),
            });
        }
        return Err(BatchError::MoreThanOneBatch);
    }
    if total > limits.max_batch_bytes {
        return Err(BatchError::TooLarge {
            size: total,
            max: limits.max_batch_bytes,
        });
    }
    verify_crc(records, &header)?;
    if header.records_count <= 0 {
        return Err(BatchError::InvalidRecords(
            "a batch must hold at least one record".into(),
        ));
    }
    if header.last_offset_delta != header.records_count - 1 {
        return Err(BatchError::InvalidRecords(format!(
            "last offset delta {} does not match record count {}",
            header.last_offset_delta, header.records_count
        )));
    }
    let codec = header.compression()?;
    let body = &records[BATCH_HEADER_BYTES..];
    let decompressed_records = match codec {
        CompressionCodec::None => {
            check_producer_records(body, &header, limits)?;
            None
        }
        codec => {
            let plain = decompress_bounded(codec, body, limits.max_decompressed_bytes)?;
            check_producer_records(&plain, &header, limits)?;
            Some(plain)
        }
    };
    Ok(ValidatedBatch {
        header,
        records_count: header.records_count,
        decompressed_records,
    })
}

/// Checks the records of a producer batch: framing, offset deltas counting up from zero, nothing
/// after the last record, for compacted topics a key on every record, and timestamps within
/// `timestamp_bounds_ms` (Kafka's order: a keyless record is reported as such, not for its
/// timestamp; a record without a timestamp, -1, is not checked).
fn check_producer_records(
    body: &[u8],
    header: &BatchHeader,
    limits: &ValidationLimits,
) -> Result<(), BatchError> {
    let records_count = header.records_count;
    let mut records = RecordIter::new(body, records_count);
    let mut keyless = Vec::new();
    let mut out_of_range = Vec::new();
    for expected_delta in 0..records_count as i64 {
        let record = records
            .next()
            .unwrap_or_else(|| Err(BatchError::InvalidRecords("missing records".into())))?;
        if record.offset_delta != expected_delta {
            return Err(BatchError::InvalidRecords(format!(
                "record offset delta {}, expected {expected_delta}",
                record.offset_delta
            )));
        }
        let timestamp = header.base_timestamp.wrapping_add(record.timestamp_delta);
        if limits.require_keys && record.key.is_none() {
            keyless.push(expected_delta as i32);
        } else if let Some((earliest, latest)) = limits.timestamp_bounds_ms {
            if timestamp != NO_TIMESTAMP && (timestamp < earliest || timestamp > latest) {
                let message = format!(
                    "Timestamp {timestamp} of message with offset {expected_delta} is out of \
                     range. The timestamp should be within [{earliest}, {latest}]"
                );
                out_of_range.push((expected_delta as i32, message));
            }
        }
    }
    if records.trailing_bytes() > 0 {
        return Err(BatchError::InvalidRecords(format!(
            "{} bytes after the last of {records_count} records",
            records.trailing_bytes()
        )));
    }
    if !out_of_range.is_empty() {
        return Err(BatchError::TimestampsOutOfRange {
            record_errors: out_of_range,
        });
    }
    if !keyless.is_empty() {
        return Err(BatchError::MissingKey {
            record_indexes: keyless,
        });
    }
    Ok(())
}

/// A record's timestamp when it has none.
const NO_TIMESTAMP: i64 = -1;

/// (offset, timestamp) of every record, given the (decompressed) records section of a stored
/// batch. Offset deltas must increase but may have gaps: compaction removes records.
pub fn record_offsets_and_timestamps(
    records: &[u8],
    header: &BatchHeader,
) -> Result<Vec<(i64, i64)>, BatchError> {
    let mut out = Vec::with_capacity(header.records_count.max(0) as usize);
    let mut previous_delta = -1;
    for record in RecordIter::new(records, header.records_count) {
        let record = record?;
        if record.offset_delta <= previous_delta
            || record.offset_delta > header.last_offset_delta as i64
        {
            return Err(BatchError::InvalidRecords(format!(
                "record offset delta {} out of order (previous {previous_delta}, last {})",
                record.offset_delta, header.last_offset_delta
            )));
        }
        previous_delta = record.offset_delta;
        out.push((
            header.base_offset + record.offset_delta,
            header.base_timestamp + record.timestamp_delta,
        ));
    }
    Ok(out)
}

/// Stamps the broker-assigned fields onto a validated batch before it is appended.
pub fn assign_offsets(
    batch: &mut BytesMut,
    base_offset: i64,
    partition_leader_epoch: i32,
    log_append_time_ms: Option<i64>,
) {
    batch[0..8].copy_from_slice(&base_offset.to_be_bytes());
    batch[PARTITION_LEADER_EPOCH_OFFSET..PARTITION_LEADER_EPOCH_OFFSET + 4]
        .copy_from_slice(&partition_leader_epoch.to_be_bytes());
    if let Some(now_ms) = log_append_time_ms {
        let mut attributes =
            i16::from_be_bytes([batch[ATTRIBUTES_OFFSET], batch[ATTRIBUTES_OFFSET + 1]]);
        attributes |= TIMESTAMP_TYPE_LOG_APPEND_TIME_BIT;
        batch[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attributes.to_be_bytes());
        // Kafka sets both the base and the max timestamp to the append time.
        batch[BASE_TIMESTAMP_OFFSET..BASE_TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&now_ms.to_be_bytes());
        batch[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&now_ms.to_be_bytes());
        let crc = compute_crc(batch);
        batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    }
}

/// Iterates over complete batches in a byte range read from a segment.
pub struct BatchIter<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> BatchIter<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        BatchIter { bytes, position: 0 }
    }

    /// Bytes consumed by the complete batches returned so far.
    pub fn position(&self) -> usize {
        self.position
    }
}

impl<'a> Iterator for BatchIter<'a> {
    /// (position of the batch in the slice, its header)
    type Item = Result<(usize, BatchHeader), BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = &self.bytes[self.position..];
        if rest.len() < BATCH_HEADER_BYTES {
            return None;
        }
        let header = match BatchHeader::parse(rest) {
            Ok(header) => header,
            Err(error) => return Some(Err(error)),
        };
        if header.total_bytes() > rest.len() {
            return None;
        }
        let position = self.position;
        self.position += header.total_bytes();
        Some(Ok((position, header)))
    }
}

#[cfg(test)]
mod timestamp_tests {
    use kafka_protocol::records::Compression;

    use super::*;
    use crate::log::test_support::{encode_batch_with_timestamps, encode_keyed_batch};

    fn limits(bounds: Option<(i64, i64)>, require_keys: bool) -> ValidationLimits {
        ValidationLimits {
            max_batch_bytes: 1 << 20,
            max_decompressed_bytes: 1 << 20,
            require_keys,
            timestamp_bounds_ms: bounds,
        }
    }

    #[test]
    fn records_outside_the_bounds_are_named_with_kafkas_message() {
        // Timestamps 1000, 1001, 1002, 1003 (compressed: checked after decompression too).
        let values: [&[u8]; 4] = [b"a", b"b", b"c", b"d"];
        for compression in [Compression::None, Compression::Lz4] {
            let batch = encode_batch_with_timestamps(&values, compression, 1000);
            let error = validate_producer_batch(&batch, &limits(Some((1001, 1002)), false))
                .expect_err("out of range");
            let BatchError::TimestampsOutOfRange { record_errors } = error else {
                panic!("{error:?}");
            };
            let indexes: Vec<i32> = record_errors.iter().map(|(i, _)| *i).collect();
            assert_eq!(indexes, [0, 3]);
            assert_eq!(
                record_errors[1].1,
                "Timestamp 1003 of message with offset 3 is out of range. The timestamp should \
                 be within [1001, 1002]"
            );
            assert!(validate_producer_batch(&batch, &limits(Some((1000, 1003)), false)).is_ok());
            assert!(validate_producer_batch(&batch, &limits(None, false)).is_ok());
        }
    }

    #[test]
    fn a_keyless_record_is_reported_for_its_key_and_no_timestamp_is_exempt() {
        let keyed = encode_keyed_batch(
            &[(Some(b"k"), Some(b"v")), (None, Some(b"v"))],
            Compression::None,
            -1,
        );
        // Timestamps -1 (none) and 0: only the keyless second record is wrong, for its key.
        let error = validate_producer_batch(&keyed, &limits(Some((5, 10)), true)).unwrap_err();
        assert_eq!(
            error,
            BatchError::MissingKey {
                record_indexes: vec![1]
            }
        );
    }
}
