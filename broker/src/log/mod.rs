//! Storage: the durable, segmented log of each partition.
//!
//! - `batch`: the v2 record batch format, validation, offset assignment.
//! - `compression`: codecs, with bounded decompression.
//! - `index`: sparse offset and time indexes.
//! - `segment`: one `.log` file with its indexes, scanning and recovery of a torn tail.
//! - `partition_log`: the ordered segments of a partition: append, read, roll, retention,
//!   truncation, flush planning and crash recovery.

pub mod batch;
pub mod compression;
pub mod index;
pub mod partition_log;
pub mod segment;

pub use partition_log::{AppendInfo, FlushPlan, PartitionLog, ReadResult};

#[cfg(test)]
pub(crate) mod test_support {
    use bytes::BytesMut;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };

    /// Encodes a producer batch (offsets from 0, timestamps 1000, 1001, …) with kafka-protocol.
    pub fn encode_batch(values: &[&[u8]], compression: Compression) -> BytesMut {
        encode_batch_with_timestamps(values, compression, 1000)
    }

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
                value: Some(bytes::Bytes::copy_from_slice(value)),
                headers: Default::default(),
            })
            .collect();
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            records.iter(),
            &RecordEncodeOptions {
                version: 2,
                compression,
            },
        )
        .expect("encode batch");
        buf
    }
}
