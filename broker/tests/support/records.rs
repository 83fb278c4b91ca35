//! Producer-style record batches for tests, encoded by kafka-protocol (a second implementation of
//! the format, so the broker's own code is not checked against itself). Shared by unit tests
//! (`log::test_support`) and the integration test binaries.

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// One batch of `values` (offsets from 0, timestamps `first_timestamp`, +1, …), no producer id.
pub fn encode_batch_with_timestamps(
    values: &[&[u8]],
    compression: Compression,
    first_timestamp: i64,
) -> BytesMut {
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, value)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // kafka-protocol starts a new batch unless offset − sequence stays constant;
            // this keeps one batch whose base sequence is -1 (no idempotence).
            sequence: i as i32 - 1,
            timestamp: first_timestamp + i as i64,
            key: None,
            value: Some(Bytes::copy_from_slice(value)),
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

/// One batch of `values` with timestamps from 1000.
#[allow(dead_code)]
pub fn encode_batch(values: &[&[u8]], compression: Compression) -> BytesMut {
    encode_batch_with_timestamps(values, compression, 1000)
}

/// A record's key and value; `None` is null.
#[allow(dead_code)]
pub type KeyValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// One batch of keyed records (`None` value = tombstone), offsets from 0, timestamps from
/// `first_timestamp`.
#[allow(dead_code)]
pub fn encode_keyed_batch(
    entries: &[KeyValue<'_>],
    compression: Compression,
    first_timestamp: i64,
) -> BytesMut {
    let records: Vec<Record> = entries
        .iter()
        .enumerate()
        .map(|(i, (key, value))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: i as i32 - 1,
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

/// One batch from an idempotent producer: `values` with sequences from `first_sequence`.
#[allow(dead_code)]
pub fn encode_idempotent_batch(
    values: &[&[u8]],
    producer_id: i64,
    producer_epoch: i16,
    first_sequence: i32,
) -> BytesMut {
    encode_producer_batch(values, producer_id, producer_epoch, first_sequence, false)
}

/// One batch from a producer with an id, in a transaction when `transactional`.
#[allow(dead_code)]
pub fn encode_producer_batch(
    values: &[&[u8]],
    producer_id: i64,
    producer_epoch: i16,
    first_sequence: i32,
    transactional: bool,
) -> BytesMut {
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, value)| Record {
            transactional,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id,
            producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: first_sequence + i as i32,
            timestamp: 1000 + i as i64,
            key: None,
            value: Some(Bytes::copy_from_slice(value)),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options).expect("encode batch");
    buf
}
