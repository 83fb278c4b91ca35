//! Rewriting one batch with only the records the cleaner keeps.
//!
//! A kept record is copied byte for byte; the new batch keeps the original base offset, last
//! offset delta (so the offsets after it and the producer's sequence range stay as they were),
//! base timestamp, attributes and producer fields — as Kafka's cleaner does. Only the record
//! count, the length, the max timestamp (CreateTime) and the CRC change; a compressed batch is
//! compressed again with its own codec.

use crate::log::batch::{self, BatchHeader, BATCH_HEADER_BYTES};
use crate::log::compression::{compress, decompress_bounded, CompressionCodec};
use crate::log::error::BatchError;
use crate::log::record::{RecordIter, RecordView};

const BATCH_LENGTH_OFFSET: usize = 8;
const CRC_OFFSET: usize = 17;
const MAX_TIMESTAMP_OFFSET: usize = 35;
const RECORDS_COUNT_OFFSET: usize = 57;

/// What becomes of a batch.
#[derive(Debug, PartialEq, Eq)]
pub enum BatchFate {
    /// Every record stays: copy the batch unchanged.
    Keep,
    /// No record stays.
    Drop,
    /// Some records stay: the new batch.
    Rewrite(Vec<u8>),
}

/// Applies `retain(record, offset)` to every record of `bytes` (one whole batch).
pub fn filter_batch(
    bytes: &[u8],
    header: &BatchHeader,
    max_decompressed_bytes: usize,
    mut retain: impl FnMut(&RecordView<'_>, i64) -> bool,
) -> Result<(BatchFate, usize), BatchError> {
    let codec = header.compression()?;
    let body = &bytes[BATCH_HEADER_BYTES..];
    let plain;
    let records = match codec {
        CompressionCodec::None => body,
        codec => {
            plain = decompress_bounded(codec, body, max_decompressed_bytes)?;
            &plain[..]
        }
    };
    let mut kept: Vec<RecordView<'_>> = Vec::new();
    let mut total = 0;
    for record in RecordIter::new(records, header.records_count) {
        let record = record?;
        total += 1;
        if retain(&record, header.base_offset + record.offset_delta) {
            kept.push(record);
        }
    }
    let removed = total - kept.len();
    if removed == 0 {
        return Ok((BatchFate::Keep, 0));
    }
    if kept.is_empty() {
        return Ok((BatchFate::Drop, removed));
    }
    Ok((
        BatchFate::Rewrite(rebuild(bytes, header, &kept, codec)?),
        removed,
    ))
}

/// The batch with no records left: header only (offsets, producer and sequence range kept).
pub fn empty_batch(original: &[u8], header: &BatchHeader) -> Result<Vec<u8>, BatchError> {
    rebuild(original, header, &[], header.compression()?)
}

fn rebuild(
    original: &[u8],
    header: &BatchHeader,
    kept: &[RecordView<'_>],
    codec: CompressionCodec,
) -> Result<Vec<u8>, BatchError> {
    let mut plain = Vec::with_capacity(kept.iter().map(|r| r.raw.len()).sum());
    for record in kept {
        plain.extend_from_slice(record.raw);
    }
    let records = compress(codec, &plain)?;
    let mut batch = Vec::with_capacity(BATCH_HEADER_BYTES + records.len());
    batch.extend_from_slice(&original[..BATCH_HEADER_BYTES]);
    batch.extend_from_slice(&records);
    let batch_length = (batch.len() - batch::LOG_OVERHEAD_BYTES) as i32;
    batch[BATCH_LENGTH_OFFSET..BATCH_LENGTH_OFFSET + 4]
        .copy_from_slice(&batch_length.to_be_bytes());
    batch[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4]
        .copy_from_slice(&(kept.len() as i32).to_be_bytes());
    if !header.is_log_append_time() {
        let max_delta = kept.iter().map(|r| r.timestamp_delta).max().unwrap_or(0);
        let max_timestamp = header.base_timestamp + max_delta;
        batch[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&max_timestamp.to_be_bytes());
    }
    let crc = batch::compute_crc(&batch);
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::record_offsets_and_timestamps;
    use crate::log::test_support::encode_keyed_batch;
    use kafka_protocol::records::{Compression, RecordBatchDecoder};

    fn batch(compression: Compression) -> bytes::BytesMut {
        let mut batch = encode_keyed_batch(
            &[
                (Some(&b"a"[..]), Some(&b"1"[..])),
                (Some(&b"b"[..]), Some(&b"2"[..])),
                (Some(&b"a"[..]), Some(&b"3"[..])),
                (Some(&b"c"[..]), None),
            ],
            compression,
            5000,
        );
        batch[0..8].copy_from_slice(&100i64.to_be_bytes());
        batch
    }

    #[test]
    fn kept_records_keep_their_offsets_and_the_batch_decodes_with_kafka_protocol() {
        for compression in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let original = batch(compression);
            let header = BatchHeader::parse(&original).unwrap();
            let (fate, removed) = filter_batch(&original, &header, 1 << 20, |record, offset| {
                !(record.key == Some(b"a") && offset == 100)
            })
            .unwrap();
            assert_eq!(removed, 1);
            let BatchFate::Rewrite(rewritten) = fate else {
                panic!("expected a rewrite, got {fate:?}");
            };
            let new_header = BatchHeader::parse(&rewritten).unwrap();
            batch::verify_crc(&rewritten, &new_header).unwrap();
            assert_eq!(new_header.base_offset, 100);
            assert_eq!(new_header.last_offset(), 103, "last offset delta is kept");
            assert_eq!(new_header.records_count, 3);
            assert_eq!(new_header.max_timestamp, 5003);
            let mut bytes = bytes::Bytes::from(rewritten.clone());
            let decoded = RecordBatchDecoder::decode(&mut bytes).unwrap();
            let offsets: Vec<i64> = decoded.records.iter().map(|r| r.offset).collect();
            assert_eq!(offsets, vec![101, 102, 103], "{compression:?}");
            assert_eq!(decoded.records[1].value.as_deref(), Some(&b"3"[..]));
            assert!(decoded.records[2].value.is_none(), "tombstone kept");
            let plain = decompress_bounded(
                header.compression().unwrap(),
                &rewritten[BATCH_HEADER_BYTES..],
                1 << 20,
            )
            .unwrap();
            let walked = record_offsets_and_timestamps(&plain, &new_header).unwrap();
            assert_eq!(walked, vec![(101, 5001), (102, 5002), (103, 5003)]);
        }
    }

    #[test]
    fn all_kept_is_keep_and_none_kept_is_drop() {
        let original = batch(Compression::Lz4);
        let header = BatchHeader::parse(&original).unwrap();
        let (fate, removed) = filter_batch(&original, &header, 1 << 20, |_, _| true).unwrap();
        assert_eq!((fate, removed), (BatchFate::Keep, 0));
        let (fate, removed) = filter_batch(&original, &header, 1 << 20, |_, _| false).unwrap();
        assert_eq!((fate, removed), (BatchFate::Drop, 4));
    }
}
