//! Records inside a v2 batch's (decompressed) records section.
//!
//! Layout of one record: varint length, then attributes i8, varlong timestamp delta, varint
//! offset delta, varint key length (-1 = null) and key, varint value length (-1 = null) and value,
//! varint header count and headers. The broker reads records only to validate producer batches,
//! to search by timestamp and to compact; it never re-encodes a record it keeps: the raw bytes
//! (length prefix included) are copied as they are.

use crate::log::error::BatchError;

/// One record, borrowed from a records section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// The whole record, its length prefix included.
    pub raw: &'a [u8],
    pub timestamp_delta: i64,
    pub offset_delta: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    /// A null value: a tombstone in a compacted topic.
    pub value_is_null: bool,
}

/// Iterates over the records of a records section, checking the framing of each.
pub struct RecordIter<'a> {
    rest: &'a [u8],
    remaining: i32,
    index: i32,
}

impl<'a> RecordIter<'a> {
    pub fn new(records: &'a [u8], records_count: i32) -> Self {
        RecordIter {
            rest: records,
            remaining: records_count.max(0),
            index: 0,
        }
    }

    /// Bytes left after the records read so far.
    pub fn trailing_bytes(&self) -> usize {
        self.rest.len()
    }

    fn parse_next(&mut self) -> Result<RecordView<'a>, BatchError> {
        let index = self.index;
        let start = self.rest;
        let length = read_varint(&mut self.rest)?;
        if length <= 0 || length as usize > self.rest.len() {
            return Err(BatchError::InvalidRecords(format!(
                "record {index} claims {length} bytes, {} remain",
                self.rest.len()
            )));
        }
        let prefix_bytes = start.len() - self.rest.len();
        let (mut body, rest) = self.rest.split_at(length as usize);
        self.rest = rest;
        let raw = &start[..prefix_bytes + length as usize];
        body = &body[1..]; // attributes
        let timestamp_delta = read_varlong(&mut body)?;
        let offset_delta = read_varlong(&mut body)?;
        let key = read_nullable_bytes(&mut body, index, "key")?;
        let value = read_nullable_bytes(&mut body, index, "value")?;
        Ok(RecordView {
            raw,
            timestamp_delta,
            offset_delta,
            key,
            value,
            value_is_null: value.is_none(),
        })
    }
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<RecordView<'a>, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        let result = self.parse_next();
        self.remaining = if result.is_ok() {
            self.remaining - 1
        } else {
            0
        };
        self.index += 1;
        Some(result)
    }
}

fn read_nullable_bytes<'a>(
    body: &mut &'a [u8],
    index: i32,
    what: &str,
) -> Result<Option<&'a [u8]>, BatchError> {
    let length = read_varint(body)?;
    if length < 0 {
        return Ok(None);
    }
    if length as usize > body.len() {
        return Err(BatchError::InvalidRecords(format!(
            "record {index}: {what} of {length} bytes overruns the record"
        )));
    }
    let (bytes, rest) = body.split_at(length as usize);
    *body = rest;
    Ok(Some(bytes))
}

pub(crate) fn read_varint(buf: &mut &[u8]) -> Result<i32, BatchError> {
    let value = read_varlong(buf)?;
    i32::try_from(value).map_err(|_| BatchError::InvalidRecords("varint out of range".into()))
}

/// Zig-zag varlong as used inside records.
pub(crate) fn read_varlong(buf: &mut &[u8]) -> Result<i64, BatchError> {
    let mut raw: u64 = 0;
    for shift in (0..70).step_by(7) {
        let Some((&byte, rest)) = buf.split_first() else {
            return Err(BatchError::InvalidRecords("truncated varint".into()));
        };
        *buf = rest;
        if shift == 63 && byte > 1 {
            return Err(BatchError::InvalidRecords("varint too long".into()));
        }
        raw |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64));
        }
    }
    Err(BatchError::InvalidRecords("varint too long".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{BatchHeader, BATCH_HEADER_BYTES};
    use crate::log::test_support::encode_keyed_batch;
    use kafka_protocol::records::Compression;

    #[test]
    fn keys_values_and_tombstones_are_read_back() {
        let batch = encode_keyed_batch(
            &[
                (Some(&b"k1"[..]), Some(&b"v1"[..])),
                (None, Some(&b"v2"[..])),
                (Some(&b"k3"[..]), None),
            ],
            Compression::None,
            1000,
        );
        let header = BatchHeader::parse(&batch).unwrap();
        let records: Vec<_> = RecordIter::new(&batch[BATCH_HEADER_BYTES..], header.records_count)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[0].key, Some(&b"k1"[..]));
        assert!(!records[0].value_is_null);
        assert_eq!(records[1].key, None);
        assert_eq!(records[2].key, Some(&b"k3"[..]));
        assert!(records[2].value_is_null);
        assert_eq!(records[2].offset_delta, 2);
        let raw_total: usize = records.iter().map(|r| r.raw.len()).sum();
        assert_eq!(raw_total, batch.len() - BATCH_HEADER_BYTES);
    }

    #[test]
    fn a_key_longer_than_its_record_is_an_error_not_a_panic() {
        // length 4: attributes, timestamp delta 0, offset delta 0, key length 50 (zig-zag 100).
        let body = [8u8, 0, 0, 0, 100];
        let error = RecordIter::new(&body, 1).next().unwrap().unwrap_err();
        assert!(matches!(error, BatchError::InvalidRecords(_)), "{error}");
    }
}
