//! Group metadata as records of `__consumer_offsets`, so that a broker restart is invisible to a
//! settled group: its generation, protocol, leader and members (with their subscriptions and
//! assignments) come back, and members carry on heartbeating without a rebalance.
//!
//! Format as Kafka's group metadata records: key version 2 (group id); value version 3
//! (protocol type, generation, protocol, leader, state timestamp, members with instance id,
//! client id and host, timeouts, subscription and assignment). A null value deletes the group.
//! The coordinator writes one when a group settles (Stable after the leader's SyncGroup, Empty
//! after the last member left) and its snapshot differs from the last one written.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::topic::codec::{
    decode_string_key, encode_string_key, get_bytes, get_i32, get_i64, get_nullable_string,
    get_string, put_bytes, put_nullable_string, put_string,
};

const KEY_VERSION: i16 = 2;
const VALUE_VERSION: i16 = 3;

/// What is persisted of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSnapshot {
    pub protocol_type: String,
    pub generation_id: i32,
    pub protocol_name: Option<String>,
    pub leader: Option<String>,
    pub state_timestamp_ms: i64,
    pub members: Vec<MemberSnapshot>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSnapshot {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// The member's metadata for the group's protocol.
    pub subscription: Bytes,
    pub assignment: Bytes,
}

impl GroupSnapshot {
    /// Snapshots equal but for the time they were taken.
    pub fn same_as(&self, other: &GroupSnapshot) -> bool {
        GroupSnapshot {
            state_timestamp_ms: 0,
            ..self.clone()
        } == GroupSnapshot {
            state_timestamp_ms: 0,
            ..other.clone()
        }
    }
}

pub fn encode_key(group_id: &str) -> Bytes {
    encode_string_key(KEY_VERSION, group_id)
}

/// The group id of a group metadata key; `None` for other record kinds.
pub fn decode_key(bytes: &[u8]) -> Option<String> {
    decode_string_key(KEY_VERSION, bytes)
}

pub fn encode_value(group: &GroupSnapshot) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(VALUE_VERSION);
    put_string(&mut buf, &group.protocol_type);
    buf.put_i32(group.generation_id);
    put_nullable_string(&mut buf, group.protocol_name.as_deref());
    put_nullable_string(&mut buf, group.leader.as_deref());
    buf.put_i64(group.state_timestamp_ms);
    buf.put_i32(group.members.len() as i32);
    for member in &group.members {
        put_string(&mut buf, &member.member_id);
        put_nullable_string(&mut buf, member.group_instance_id.as_deref());
        put_string(&mut buf, &member.client_id);
        put_string(&mut buf, &member.client_host);
        buf.put_i32(member.rebalance_timeout_ms);
        buf.put_i32(member.session_timeout_ms);
        put_bytes(&mut buf, &member.subscription);
        put_bytes(&mut buf, &member.assignment);
    }
    buf.freeze()
}

/// Decodes a value of version 3; `None` when it is of another version or malformed.
pub fn decode_value(bytes: &[u8]) -> Option<GroupSnapshot> {
    let mut buf = bytes;
    if buf.remaining() < 2 || buf.get_i16() != VALUE_VERSION {
        return None;
    }
    let protocol_type = get_string(&mut buf)?;
    let generation_id = get_i32(&mut buf)?;
    let protocol_name = get_nullable_string(&mut buf)?;
    let leader = get_nullable_string(&mut buf)?;
    let state_timestamp_ms = get_i64(&mut buf)?;
    let count = get_i32(&mut buf)?;
    // Each member takes at least 28 bytes: a count beyond that is corrupt, not a huge allocation.
    if count < 0 || count as usize > buf.remaining() / 28 {
        return None;
    }
    let mut members = Vec::with_capacity(count as usize);
    for _ in 0..count {
        members.push(MemberSnapshot {
            member_id: get_string(&mut buf)?,
            group_instance_id: get_nullable_string(&mut buf)?,
            client_id: get_string(&mut buf)?,
            client_host: get_string(&mut buf)?,
            rebalance_timeout_ms: get_i32(&mut buf)?,
            session_timeout_ms: get_i32(&mut buf)?,
            subscription: get_bytes(&mut buf)?,
            assignment: get_bytes(&mut buf)?,
        });
    }
    Some(GroupSnapshot {
        protocol_type,
        generation_id,
        protocol_name,
        leader,
        state_timestamp_ms,
        members,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> GroupSnapshot {
        GroupSnapshot {
            protocol_type: "consumer".into(),
            generation_id: 4,
            protocol_name: Some("range".into()),
            leader: Some("m-1".into()),
            state_timestamp_ms: 1_700_000_000_000,
            members: vec![MemberSnapshot {
                member_id: "m-1".into(),
                group_instance_id: Some("instance-a".into()),
                client_id: "client".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout_ms: 300_000,
                session_timeout_ms: 45_000,
                subscription: Bytes::from_static(b"\x00\x01sub"),
                assignment: Bytes::from_static(b"\x00\x01assign"),
            }],
        }
    }

    #[test]
    fn records_round_trip_and_other_kinds_are_not_mistaken_for_them() {
        let group = snapshot();
        assert_eq!(decode_key(&encode_key("g")), Some("g".into()));
        assert_eq!(decode_value(&encode_value(&group)), Some(group.clone()));
        let empty = GroupSnapshot {
            protocol_name: None,
            leader: None,
            members: vec![],
            ..group
        };
        assert_eq!(decode_value(&encode_value(&empty)), Some(empty));
        // An offset-commit key (version 1) is not a group key.
        assert_eq!(
            decode_key(&crate::group::offsets::encode_key("g", "t", 0)),
            None
        );
    }

    #[test]
    fn truncated_or_hostile_values_are_rejected() {
        let bytes = encode_value(&snapshot());
        for cut in 0..bytes.len() {
            assert_eq!(decode_value(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut huge_count = encode_value(&GroupSnapshot {
            members: vec![],
            ..snapshot()
        })
        .to_vec();
        let at = huge_count.len() - 4;
        huge_count[at..].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(decode_value(&huge_count), None);
    }
}
