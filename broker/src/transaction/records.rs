//! Transaction state as records of the internal `__transaction_state` topic, in Kafka's format:
//! key version 0 (transactional id); value version 0 (producer id, epoch, timeout, state,
//! partitions by topic, last update and start timestamps). A null value deletes the id. The
//! partition of an id is `abs(java_string_hash(id)) % partitions`, as in Kafka.
//!
//! Weir's extension: when an id has transaction-version-2 facts (last producer epoch, previous
//! and next producer id — see `transaction::state`), they follow the version-0 fields (i16, i64,
//! i64); a value without them is plain version 0.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::topic::codec::{decode_string_key, encode_string_key, get_i32, get_string, put_string};
use crate::transaction::state::{TxnMetadata, TxnState};

/// The internal topic holding transaction state.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";
const KEY_VERSION: i16 = 0;
const VALUE_VERSION: i16 = 0;

pub fn encode_key(transactional_id: &str) -> Bytes {
    encode_string_key(KEY_VERSION, transactional_id)
}

pub fn decode_key(bytes: &[u8]) -> Option<String> {
    decode_string_key(KEY_VERSION, bytes)
}

pub fn encode_value(txn: &TxnMetadata) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(VALUE_VERSION);
    buf.put_i64(txn.producer_id);
    buf.put_i16(txn.producer_epoch);
    buf.put_i32(txn.timeout_ms);
    buf.put_i8(txn.state.code());
    let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (topic, partition) in &txn.partitions {
        by_topic.entry(topic).or_default().push(*partition);
    }
    buf.put_i32(by_topic.len() as i32);
    for (topic, partitions) in by_topic {
        put_string(&mut buf, topic);
        buf.put_i32(partitions.len() as i32);
        for partition in partitions {
            buf.put_i32(partition);
        }
    }
    buf.put_i64(txn.last_update_ms);
    buf.put_i64(txn.start_ms);
    if txn.last_producer_epoch >= 0 || txn.previous_producer_id >= 0 || txn.next_producer_id >= 0 {
        buf.put_i16(txn.last_producer_epoch);
        buf.put_i64(txn.previous_producer_id);
        buf.put_i64(txn.next_producer_id);
    }
    buf.freeze()
}

pub fn decode_value(bytes: &[u8]) -> Option<TxnMetadata> {
    let mut buf = bytes;
    if buf.remaining() < 17 || buf.get_i16() != VALUE_VERSION {
        return None;
    }
    let producer_id = buf.get_i64();
    let producer_epoch = buf.get_i16();
    let timeout_ms = buf.get_i32();
    let state = TxnState::from_code(buf.get_i8())?;
    let topics = get_i32(&mut buf)?;
    let mut partitions = BTreeSet::new();
    // A topic entry takes at least 6 bytes: a larger count is corruption, not an allocation.
    if topics < -1 || topics as i64 > buf.remaining() as i64 / 6 {
        return None;
    }
    for _ in 0..topics.max(0) {
        let topic = get_string(&mut buf)?;
        let count = get_i32(&mut buf)?;
        if count < 0 || count as usize > buf.remaining() / 4 {
            return None;
        }
        for _ in 0..count {
            partitions.insert((topic.clone(), buf.get_i32()));
        }
    }
    if buf.remaining() < 16 {
        return None;
    }
    let mut txn = TxnMetadata::new(producer_id, timeout_ms, buf.get_i64());
    txn.producer_epoch = producer_epoch;
    txn.state = state;
    txn.partitions = partitions;
    txn.start_ms = buf.get_i64();
    match buf.remaining() {
        0 => {}
        18 => {
            txn.last_producer_epoch = buf.get_i16();
            txn.previous_producer_id = buf.get_i64();
            txn.next_producer_id = buf.get_i64();
        }
        _ => return None,
    }
    Some(txn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_is_rejected() {
        let mut txn = TxnMetadata::new(42, 60_000, 1_000);
        txn.add_partitions([("a".into(), 0), ("a".into(), 3), ("b".into(), 1)], 2_000)
            .unwrap();
        assert_eq!(decode_key(&encode_key("app-1")), Some("app-1".into()));
        let value = encode_value(&txn);
        assert_eq!(decode_value(&value), Some(txn.clone()));
        for cut in 0..value.len() {
            assert_eq!(decode_value(&value[..cut]), None, "cut at {cut}");
        }
        txn.last_producer_epoch = 4;
        txn.next_producer_id = 43;
        let extended = encode_value(&txn);
        assert_eq!(extended.len(), value.len() + 18);
        assert_eq!(decode_value(&extended), Some(txn));
        for cut in value.len() + 1..extended.len() {
            assert_eq!(decode_value(&extended[..cut]), None, "cut at {cut}");
        }
        assert_eq!(
            decode_key(&crate::group::offsets::encode_key("g", "t", 0)),
            None
        );
    }
}
