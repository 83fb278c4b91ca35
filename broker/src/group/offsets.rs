//! Committed offsets as records of the internal `__consumer_offsets` topic.
//!
//! Record format follows Kafka's offset-commit records (key version 1: group, topic, partition;
//! value version 3: offset, leader epoch, metadata, commit timestamp), so the topic reads like
//! Kafka's. A null value deletes the key. On start-up the topic is read back to rebuild the
//! offsets; the partition of a group is `abs(java_string_hash(group)) % partitions`, as in Kafka.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::topic::codec::{get_string, put_string};

/// The internal topic holding committed offsets.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
const KEY_VERSION: i16 = 1;
const VALUE_VERSION: i16 = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp_ms: i64,
}

/// (group, topic, partition)
pub type OffsetKey = (String, String, i32);

/// Java's `String.hashCode`, which Kafka uses to place a group on an offsets partition.
pub fn java_string_hash(value: &str) -> i32 {
    value.encode_utf16().fold(0i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(unit as i32)
    })
}

/// The `__consumer_offsets` partition of a group.
pub fn partition_for(group_id: &str, partitions: i32) -> i32 {
    // Kafka's Utils.abs maps i32::MIN to 0.
    let hash = java_string_hash(group_id);
    let positive = if hash == i32::MIN { 0 } else { hash.abs() };
    positive % partitions.max(1)
}

pub fn encode_key(group: &str, topic: &str, partition: i32) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(KEY_VERSION);
    put_string(&mut buf, group);
    put_string(&mut buf, topic);
    buf.put_i32(partition);
    buf.freeze()
}

pub fn encode_value(offset: &CommittedOffset) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(VALUE_VERSION);
    buf.put_i64(offset.offset);
    buf.put_i32(offset.leader_epoch);
    put_string(&mut buf, &offset.metadata);
    buf.put_i64(offset.commit_timestamp_ms);
    buf.freeze()
}

/// Decodes an offset-commit key; `None` for other record kinds (e.g. group metadata, version 2).
pub fn decode_key(bytes: &[u8]) -> Option<OffsetKey> {
    let mut buf = bytes;
    if buf.remaining() < 2 {
        return None;
    }
    let version = buf.get_i16();
    if version != 0 && version != 1 {
        return None;
    }
    let group = get_string(&mut buf)?;
    let topic = get_string(&mut buf)?;
    if buf.remaining() < 4 {
        return None;
    }
    Some((group, topic, buf.get_i32()))
}

pub fn decode_value(bytes: &[u8]) -> Option<CommittedOffset> {
    let mut buf = bytes;
    if buf.remaining() < 2 || buf.get_i16() != VALUE_VERSION || buf.remaining() < 12 {
        return None;
    }
    let offset = buf.get_i64();
    let leader_epoch = buf.get_i32();
    let metadata = get_string(&mut buf)?;
    if buf.remaining() < 8 {
        return None;
    }
    Some(CommittedOffset {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp_ms: buf.get_i64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_placement_matches_java_hash_code() {
        // Values of Java's "…".hashCode().
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("console-consumer"), -648_006_740);
        assert_eq!(partition_for("console-consumer", 50), 40);
    }

    #[test]
    fn records_round_trip() {
        let offset = CommittedOffset {
            offset: 42,
            leader_epoch: 3,
            metadata: "m".into(),
            commit_timestamp_ms: 1_700_000_000_000,
        };
        let key = encode_key("g", "t", 7);
        assert_eq!(decode_key(&key), Some(("g".into(), "t".into(), 7)));
        assert_eq!(decode_value(&encode_value(&offset)), Some(offset));
        assert_eq!(
            decode_key(&[0, 2, 0, 1, b'g']),
            None,
            "group metadata records are skipped"
        );
        assert_eq!(decode_value(&[0, 3, 1]), None);
    }
}
