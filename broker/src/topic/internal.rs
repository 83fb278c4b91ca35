//! Internal topics (`__consumer_offsets`, `__transaction_state`): created on first use, written by
//! the coordinators as batches of key/value records.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::error::BrokerError;
use crate::log::compression::CompressionCodec;
use crate::partition::Partition;
use crate::topic::{Topic, TopicRegistry};

/// The topic `name`, created with `partitions` and `configs` if it does not exist.
pub fn ensure_topic(
    topics: &TopicRegistry,
    name: &str,
    partitions: i32,
    configs: BTreeMap<String, String>,
) -> Result<Arc<Topic>, BrokerError> {
    if let Some(topic) = topics.get(name) {
        return Ok(topic);
    }
    match topics.create(name, partitions, 1, configs) {
        Ok(topic) => Ok(topic),
        Err(BrokerError::TopicAlreadyExists { .. }) => topics
            .get(name)
            .ok_or_else(|| BrokerError::InvalidRequest(format!("{name} vanished"))),
        Err(error) => Err(error),
    }
}

/// A batch of (key, value) records (`None` value: a tombstone). With `producer`, the batch is
/// transactional, from that producer id and epoch, without sequence numbers (as Kafka's
/// coordinators write transactional offset commits).
pub fn key_value_batch(
    entries: Vec<(Bytes, Option<Bytes>)>,
    producer: Option<(i64, i16)>,
    now_ms: i64,
) -> Result<BytesMut, BrokerError> {
    let (producer_id, producer_epoch) = producer.unwrap_or((-1, -1));
    let records: Vec<Record> = entries
        .into_iter()
        .enumerate()
        .map(|(i, (key, value))| Record {
            transactional: producer.is_some(),
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id,
            producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // kafka-protocol keeps one batch while offset − sequence stays constant.
            sequence: i as i32 - 1,
            timestamp: now_ms,
            key: Some(key),
            value,
            headers: Default::default(),
        })
        .collect();
    let mut batch = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut batch, records.iter(), &options)
        .map_err(|e| BrokerError::InvalidRequest(format!("cannot encode internal records: {e}")))?;
    if producer.is_some() {
        // No sequence: base sequence -1 (kafka-protocol derived it from the records).
        batch[53..57].copy_from_slice(&(-1i32).to_be_bytes());
        let crc = crate::log::batch::compute_crc(&batch);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
    }
    Ok(batch)
}

/// Calls `visit` with every record of an internal topic, partition by partition in offset order
/// (start-up loading). An unreadable batch is skipped with a warning.
pub fn for_each_record(topic: &Topic, mut visit: impl FnMut(Record)) -> Result<(), BrokerError> {
    for partition in topic.hosted() {
        for_each_record_of(partition, &mut visit)?;
    }
    Ok(())
}

/// Calls `visit` with every record of one partition of an internal topic, in offset order. A
/// batch that cannot be trusted — its CRC does not match, it is compressed (Weir's coordinators
/// never compress), or its records do not decode — is skipped with a warning giving the reason.
pub fn for_each_record_of(
    partition: &Partition,
    mut visit: impl FnMut(Record),
) -> Result<(), BrokerError> {
    let batches = partition.log().batches_for_loading();
    for (header, batch) in batches {
        let skip = |reason: &str| {
            tracing::warn!(
                topic = %partition.topic,
                partition = partition.index,
                offset = header.base_offset,
                reason,
                "skipping a batch while loading"
            );
        };
        if let Err(error) = crate::log::batch::verify_crc(&batch, &header) {
            skip(&error.to_string());
            continue;
        }
        if !matches!(header.compression(), Ok(CompressionCodec::None)) {
            skip("the batch is compressed, which Weir's coordinators never write");
            continue;
        }
        let mut bytes = batch;
        match RecordBatchDecoder::decode(&mut bytes) {
            Ok(set) => set.records.into_iter().for_each(&mut visit),
            Err(error) => skip(&format!("its records do not decode: {error}")),
        }
    }
    Ok(())
}
