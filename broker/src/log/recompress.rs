//! Topic compression (`compression.type` other than `producer`, KIP-390 levels): a producer
//! batch is stored in the topic's codec. Only the records section is re-encoded — the header
//! (base offset, producer id, epoch and base sequence, transactional bit, timestamps) stays as
//! the producer sent it, so idempotent de-duplication, transactions and offsets are unchanged;
//! the length, codec bits and CRC are rewritten. A batch already in the topic's codec is kept
//! as it is (as Kafka does, whatever level the producer used).

use bytes::BytesMut;

use crate::config::TopicCompression;
use crate::log::batch::{with_records_section, ValidatedBatch, BATCH_HEADER_BYTES};
use crate::log::compression::{compress_at_level, CompressionCodec};
use crate::log::error::BatchError;

/// The codec and level batches of a topic are stored with (`None`: as the producer sent them).
pub fn target_codec(compression: TopicCompression) -> Option<(CompressionCodec, i32)> {
    match compression {
        TopicCompression::Producer => None,
        TopicCompression::Uncompressed => Some((CompressionCodec::None, 0)),
        TopicCompression::Gzip { level } => Some((CompressionCodec::Gzip, level)),
        TopicCompression::Snappy => Some((CompressionCodec::Snappy, 0)),
        TopicCompression::Lz4 { level } => Some((CompressionCodec::Lz4, level)),
        TopicCompression::Zstd { level } => Some((CompressionCodec::Zstd, level)),
    }
}

/// `batch` (validated as `validated`) in the topic's codec, or `None` when it is stored as it
/// came. The decompressed records validation produced are reused, so a batch is decompressed
/// once, within validation's bound.
pub fn to_topic_compression(
    batch: &[u8],
    validated: &ValidatedBatch,
    compression: TopicCompression,
) -> Result<Option<BytesMut>, BatchError> {
    let Some((codec, level)) = target_codec(compression) else {
        return Ok(None);
    };
    if validated.header.compression()? == codec {
        return Ok(None);
    }
    let plain = match &validated.decompressed_records {
        Some(plain) => plain.as_slice(),
        None => &batch[BATCH_HEADER_BYTES..],
    };
    let records = compress_at_level(codec, plain, level)?;
    Ok(Some(with_records_section(batch, codec, &records)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{validate_producer_batch, ValidationLimits};
    use crate::log::compression::compress;
    use crate::log::record::RecordIter;
    use bytes::BufMut;

    const LIMITS: ValidationLimits = ValidationLimits {
        max_batch_bytes: 1 << 20,
        max_decompressed_bytes: 1 << 20,
        require_keys: false,
        timestamp_bounds_ms: None,
    };

    /// An idempotent, transactional batch of `count` records in `codec`.
    fn batch(codec: CompressionCodec, count: i32) -> Vec<u8> {
        let mut records = Vec::new();
        for i in 0..count {
            let value = format!("value-{i}-{}", "x".repeat(40));
            let mut body = Vec::new();
            body.put_i8(0); // attributes
            put_varint(&mut body, i as i64); // timestamp delta
            put_varint(&mut body, i as i64); // offset delta
            put_varint(&mut body, -1); // no key
            put_varint(&mut body, value.len() as i64);
            body.extend_from_slice(value.as_bytes());
            put_varint(&mut body, 0); // no headers
            put_varint(&mut records, body.len() as i64);
            records.extend_from_slice(&body);
        }
        let section = compress(codec, &records).unwrap();
        let mut header = vec![0u8; BATCH_HEADER_BYTES];
        header[16] = 2; // magic
        let attributes: i16 = (1 << 4) | codec.attribute_bits(); // transactional
        header[21..23].copy_from_slice(&attributes.to_be_bytes());
        header[23..27].copy_from_slice(&(count - 1).to_be_bytes());
        header[27..35].copy_from_slice(&1_700_000_000_000i64.to_be_bytes());
        header[43..51].copy_from_slice(&42i64.to_be_bytes()); // producer id
        header[51..53].copy_from_slice(&3i16.to_be_bytes()); // epoch
        header[53..57].copy_from_slice(&17i32.to_be_bytes()); // base sequence
        header[57..61].copy_from_slice(&count.to_be_bytes());
        with_records_section(&header, codec, &section).to_vec()
    }

    fn put_varint(buf: &mut Vec<u8>, value: i64) {
        let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
        while zigzag >= 0x80 {
            buf.push((zigzag as u8) | 0x80);
            zigzag >>= 7;
        }
        buf.push(zigzag as u8);
    }

    fn values(batch: &[u8]) -> Vec<Vec<u8>> {
        let validated = validate_producer_batch(batch, &LIMITS).unwrap();
        let plain = validated
            .decompressed_records
            .clone()
            .unwrap_or_else(|| batch[BATCH_HEADER_BYTES..].to_vec());
        RecordIter::new(&plain, validated.records_count)
            .map(|r| r.unwrap().value.unwrap().to_vec())
            .collect()
    }

    #[test]
    fn every_codec_to_every_codec_keeps_records_and_header() {
        let codecs = [
            CompressionCodec::None,
            CompressionCodec::Gzip,
            CompressionCodec::Snappy,
            CompressionCodec::Lz4,
            CompressionCodec::Zstd,
        ];
        let targets = [
            TopicCompression::Uncompressed,
            TopicCompression::Gzip { level: 9 },
            TopicCompression::Snappy,
            TopicCompression::Lz4 { level: 17 },
            TopicCompression::Zstd { level: -5 },
        ];
        for source in codecs {
            let original = batch(source, 20);
            let validated = validate_producer_batch(&original, &LIMITS).unwrap();
            for target in targets {
                let (codec, _) = target_codec(target).unwrap();
                let stored = to_topic_compression(&original, &validated, target).unwrap();
                let Some(stored) = stored else {
                    assert_eq!(source, codec, "only a batch in the topic's codec is kept");
                    continue;
                };
                let again = validate_producer_batch(&stored, &LIMITS)
                    .unwrap_or_else(|e| panic!("{source:?} → {target:?}: {e}"));
                assert_eq!(again.header.compression().unwrap(), codec);
                // Everything but the length, the codec bits and the CRC is as it came.
                let (before, after) = (validated.header, again.header);
                assert_eq!(after.attributes & !0x07, before.attributes & !0x07);
                assert_eq!(
                    (after.producer_id, after.producer_epoch, after.base_sequence),
                    (42, 3, 17)
                );
                assert_eq!(
                    (
                        after.last_offset_delta,
                        after.base_timestamp,
                        after.records_count
                    ),
                    (19, before.base_timestamp, 20)
                );
                assert!(after.is_transactional());
                assert_eq!(
                    values(&stored),
                    values(&original),
                    "{source:?} → {target:?}"
                );
            }
        }
    }

    #[test]
    fn producer_compression_keeps_every_batch() {
        let original = batch(CompressionCodec::Gzip, 3);
        let validated = validate_producer_batch(&original, &LIMITS).unwrap();
        let kept = to_topic_compression(&original, &validated, TopicCompression::Producer);
        assert!(kept.unwrap().is_none());
    }
}
