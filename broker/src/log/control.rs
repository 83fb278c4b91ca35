//! Transaction markers: the control batches that end a transaction in a partition.
//!
//! A marker is a batch with the transactional and control attribute bits, the producer's id and
//! epoch, and one record whose key is (version i16 = 0, type i16: 0 abort, 1 commit) and whose
//! value is (version i16 = 0, coordinator epoch i32) — Kafka's `EndTransactionMarker`. Markers
//! take an offset like any batch; consumers skip them.

use bytes::{BufMut, BytesMut};

use crate::log::batch::{self, BatchHeader, BATCH_HEADER_BYTES};
use crate::log::compression::CompressionCodec;
use crate::log::error::BatchError;
use crate::log::record::RecordIter;

const TRANSACTIONAL_AND_CONTROL: i16 = (1 << 4) | (1 << 5);
const CONTROL_KEY_VERSION: i16 = 0;
const MARKER_VALUE_VERSION: i16 = 0;

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    Abort,
    Commit,
}

impl MarkerKind {
    fn code(self) -> i16 {
        match self {
            MarkerKind::Abort => 0,
            MarkerKind::Commit => 1,
        }
    }
}

/// A marker batch for `producer_id`/`epoch` (offset fields 0: the log assigns them).
pub fn marker_batch(
    producer_id: i64,
    producer_epoch: i16,
    kind: MarkerKind,
    coordinator_epoch: i32,
    timestamp_ms: i64,
) -> BytesMut {
    let mut key = BytesMut::with_capacity(4);
    key.put_i16(CONTROL_KEY_VERSION);
    key.put_i16(kind.code());
    let mut value = BytesMut::with_capacity(6);
    value.put_i16(MARKER_VALUE_VERSION);
    value.put_i32(coordinator_epoch);
    // The record: attributes, timestamp delta 0, offset delta 0, key, value, no headers.
    let mut record = BytesMut::new();
    record.put_i8(0);
    put_varint(&mut record, 0);
    put_varint(&mut record, 0);
    put_varint(&mut record, key.len() as i64);
    record.put_slice(&key);
    put_varint(&mut record, value.len() as i64);
    record.put_slice(&value);
    put_varint(&mut record, 0);
    let mut batch = BytesMut::with_capacity(BATCH_HEADER_BYTES + record.len() + 2);
    batch.put_i64(0); // base offset
    batch.put_i32(0); // batch length, below
    batch.put_i32(0); // partition leader epoch
    batch.put_i8(2); // magic
    batch.put_u32(0); // crc, below
    batch.put_i16(TRANSACTIONAL_AND_CONTROL);
    batch.put_i32(0); // last offset delta
    batch.put_i64(timestamp_ms);
    batch.put_i64(timestamp_ms);
    batch.put_i64(producer_id);
    batch.put_i16(producer_epoch);
    batch.put_i32(-1); // base sequence: markers carry none
    batch.put_i32(1); // records
    put_varint(&mut batch, record.len() as i64);
    batch.put_slice(&record);
    let length = (batch.len() - batch::LOG_OVERHEAD_BYTES) as i32;
    batch[8..12].copy_from_slice(&length.to_be_bytes());
    let crc = batch::compute_crc(&batch);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    batch
}

/// The kind and coordinator epoch of a marker batch; `None` for other control records (Kafka has
/// none other in data partitions, but the type space is open).
pub fn parse_marker(
    bytes: &[u8],
    header: &BatchHeader,
) -> Result<Option<(MarkerKind, i32)>, BatchError> {
    if !header.is_control() {
        return Ok(None);
    }
    if header.compression()? != CompressionCodec::None {
        return Err(BatchError::InvalidRecords(
            "compressed control batch".into(),
        ));
    }
    let body =
        bytes
            .get(BATCH_HEADER_BYTES..header.total_bytes())
            .ok_or(BatchError::Truncated {
                needed: header.total_bytes(),
                available: bytes.len(),
            })?;
    let Some(record) = RecordIter::new(body, header.records_count).next() else {
        return Ok(None);
    };
    let record = record?;
    let key = record.key.unwrap_or_default();
    if key.len() < 4 {
        return Err(BatchError::InvalidRecords(
            "control record key too short".into(),
        ));
    }
    let kind = match i16::from_be_bytes([key[2], key[3]]) {
        0 => MarkerKind::Abort,
        1 => MarkerKind::Commit,
        _ => return Ok(None),
    };
    // The value: version i16, coordinator epoch i32 (read leniently: only fencing uses it).
    let coordinator_epoch = match record.value.unwrap_or_default() {
        [_, _, a, b, c, d, ..] => i32::from_be_bytes([*a, *b, *c, *d]),
        _ => -1,
    };
    Ok(Some((kind, coordinator_epoch)))
}

fn put_varint(buf: &mut BytesMut, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    while zigzag >= 0x80 {
        buf.put_u8((zigzag as u8 & 0x7f) | 0x80);
        zigzag >>= 7;
    }
    buf.put_u8(zigzag as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::RecordBatchDecoder;

    #[test]
    fn markers_are_control_batches_kafka_protocol_reads() {
        for kind in [MarkerKind::Commit, MarkerKind::Abort] {
            let batch = marker_batch(42, 3, kind, 7, 1_700_000_000_000);
            let header = BatchHeader::parse(&batch).unwrap();
            batch::verify_crc(&batch, &header).unwrap();
            assert!(header.is_control() && header.is_transactional());
            assert_eq!((header.producer_id, header.producer_epoch), (42, 3));
            assert_eq!(parse_marker(&batch, &header).unwrap(), Some((kind, 7)));
            let mut bytes = batch.freeze();
            let decoded = RecordBatchDecoder::decode(&mut bytes).unwrap();
            let record = &decoded.records[0];
            assert!(record.control && record.transactional);
            let key = record.key.as_ref().unwrap();
            assert_eq!(&key[..], &[0, 0, 0, kind.code() as u8]);
            assert_eq!(&record.value.as_ref().unwrap()[..], &[0, 0, 0, 0, 0, 7]);
        }
    }
}
