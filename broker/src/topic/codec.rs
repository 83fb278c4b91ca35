//! Kafka's classic (non-flexible) encodings used in internal-topic records: i16-length
//! strings (-1: null), i32-length bytes. Readers return `None` on anything malformed.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// A record key that is a version followed by one string (group metadata, transaction state).
pub fn encode_string_key(version: i16, value: &str) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(version);
    put_string(&mut buf, value);
    buf.freeze()
}

/// The string of a key written by `encode_string_key` with `version`; `None` for other keys.
pub fn decode_string_key(version: i16, bytes: &[u8]) -> Option<String> {
    let mut buf = bytes;
    if buf.remaining() < 2 || buf.get_i16() != version {
        return None;
    }
    get_string(&mut buf)
}

pub fn put_string(buf: &mut BytesMut, value: &str) {
    let length = value.len().min(i16::MAX as usize);
    buf.put_i16(length as i16);
    buf.put_slice(&value.as_bytes()[..length]);
}

pub fn put_nullable_string(buf: &mut BytesMut, value: Option<&str>) {
    match value {
        Some(value) => put_string(buf, value),
        None => buf.put_i16(-1),
    }
}

pub fn put_bytes(buf: &mut BytesMut, value: &[u8]) {
    buf.put_i32(value.len() as i32);
    buf.put_slice(value);
}

pub fn get_i32(buf: &mut &[u8]) -> Option<i32> {
    (buf.remaining() >= 4).then(|| buf.get_i32())
}

pub fn get_i64(buf: &mut &[u8]) -> Option<i64> {
    (buf.remaining() >= 8).then(|| buf.get_i64())
}

pub fn get_nullable_string(buf: &mut &[u8]) -> Option<Option<String>> {
    if buf.remaining() < 2 {
        return None;
    }
    if i16::from_be_bytes([buf[0], buf[1]]) < 0 {
        buf.advance(2);
        return Some(None);
    }
    get_string(buf).map(Some)
}

pub fn get_string(buf: &mut &[u8]) -> Option<String> {
    if buf.remaining() < 2 {
        return None;
    }
    let length = buf.get_i16();
    if length < 0 || buf.remaining() < length as usize {
        return None;
    }
    let value = String::from_utf8(buf[..length as usize].to_vec()).ok()?;
    buf.advance(length as usize);
    Some(value)
}

pub fn get_bytes(buf: &mut &[u8]) -> Option<Bytes> {
    let length = get_i32(buf)?;
    if length < 0 || buf.remaining() < length as usize {
        return None;
    }
    let value = Bytes::copy_from_slice(&buf[..length as usize]);
    buf.advance(length as usize);
    Some(value)
}
