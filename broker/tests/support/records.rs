//! Producer-style record batches for tests, encoded by kafka-protocol (a second implementation of
//! the format, so the broker's own code is not checked against itself). Shared by unit tests
//! (`log::test_support`) and the integration test binaries.

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// A record's key and value; `None` is null.
#[allow(dead_code)]
pub(crate) type KeyValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// Who writes a batch: producer id, epoch, first sequence, transactional.
type Writer = (i64, i16, i32, bool);

/// No producer id: kafka-protocol starts a new batch unless offset − sequence stays constant, so
/// sequences from -1 keep one batch whose base sequence is -1 (no idempotence).
const PLAIN: Writer = (-1, -1, -1, false);

/// One batch of `entries` (offsets from 0, timestamps `first_timestamp`, +1, …).
fn encode_records(
    entries: &[KeyValue<'_>],
    (producer_id, producer_epoch, first_sequence, transactional): Writer,
    compression: Compression,
    first_timestamp: i64,
) -> BytesMut {
    let records: Vec<Record> = entries
        .iter()
        .enumerate()
        .map(|(i, (key, value))| Record {
            transactional,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id,
            producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: first_sequence + i as i32,
            timestamp: first_timestamp + i as i64,
            key: key.map(Bytes::copy_from_slice),
            value: value.map(Bytes::copy_from_slice),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options).expect("encode batch");
    buf
}

fn unkeyed<'a>(values: &[&'a [u8]]) -> Vec<KeyValue<'a>> {
    values.iter().map(|value| (None, Some(*value))).collect()
}

/// One batch of `values` (offsets from 0, timestamps `first_timestamp`, +1, …), no producer id.
pub(crate) fn encode_batch_with_timestamps(
    values: &[&[u8]],
    compression: Compression,
    first_timestamp: i64,
) -> BytesMut {
    encode_records(&unkeyed(values), PLAIN, compression, first_timestamp)
}

/// One batch of `values` with timestamps from 1000.
#[allow(dead_code)]
pub(crate) fn encode_batch(values: &[&[u8]], compression: Compression) -> BytesMut {
    encode_batch_with_timestamps(values, compression, 1000)
}

/// One batch of keyed records (`None` value = tombstone), offsets from 0, timestamps from
/// `first_timestamp`.
#[allow(dead_code)]
pub(crate) fn encode_keyed_batch(
    entries: &[KeyValue<'_>],
    compression: Compression,
    first_timestamp: i64,
) -> BytesMut {
    encode_records(entries, PLAIN, compression, first_timestamp)
}

/// One batch from an idempotent producer: `values` with sequences from `first_sequence`.
#[allow(dead_code)]
pub(crate) fn encode_idempotent_batch(
    values: &[&[u8]],
    producer_id: i64,
    producer_epoch: i16,
    first_sequence: i32,
) -> BytesMut {
    encode_producer_batch(values, producer_id, producer_epoch, first_sequence, false)
}

/// One batch from a producer with an id, in a transaction when `transactional`.
#[allow(dead_code)]
pub(crate) fn encode_producer_batch(
    values: &[&[u8]],
    producer_id: i64,
    producer_epoch: i16,
    first_sequence: i32,
    transactional: bool,
) -> BytesMut {
    let entries = unkeyed(values);
    encode_keyed_producer_batch(
        &entries,
        producer_id,
        producer_epoch,
        first_sequence,
        transactional,
    )
}

/// One batch of keyed records from a producer with an id, in a transaction when `transactional`.
#[allow(dead_code)]
pub(crate) fn encode_keyed_producer_batch(
    entries: &[KeyValue<'_>],
    producer_id: i64,
    producer_epoch: i16,
    first_sequence: i32,
    transactional: bool,
) -> BytesMut {
    let writer = (producer_id, producer_epoch, first_sequence, transactional);
    encode_records(entries, writer, Compression::None, 1000)
}
