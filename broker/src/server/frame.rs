//! Decoding one request frame (the bytes after its size prefix): the header's API key and
//! version, checked against what the broker serves, then the header and body. Shared by the
//! connection and the fuzz targets, so that what is fuzzed is what serves.
//!
//! Decoded size is bounded, not only wire size: a request's structs may hold at most
//! [`decoded_bytes_bound`] of its frame's length beyond the frame itself (the decoder charges
//! each array and tagged field before it allocates, `kafka_protocol::protocol::decode_budget`).
//! An empty OffsetFetch group is 3 bytes on the wire and ~120 decoded; unbounded, 30 MB of them
//! took 1.3 GB. The connection charges what a decode holds to the request-memory pool.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::decode_budget::{self, DecodeCost};
use kafka_protocol::protocol::Decodable;

use crate::handler;

/// The first fields of every request header: enough to answer or refuse it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub api_key: ApiKey,
    pub version: i16,
    pub correlation_id: i32,
}

/// What a frame turned out to be.
#[derive(Debug)]
pub enum Decoded {
    /// A request of an API and version the broker serves.
    Request {
        header: FrameHeader,
        request_header: RequestHeader,
        request: RequestKind,
    },
    /// ApiVersions newer than the broker's: answered in v0 (KIP-511).
    ApiVersionsTooNew(FrameHeader),
    /// A valid request of an API the broker does not implement.
    Unimplemented {
        header: FrameHeader,
        request: RequestKind,
    },
}

/// What a request's decoded structs may hold per byte of its frame.
pub const DECODED_BYTES_PER_FRAME_BYTE: usize = 16;
/// What any request's decoded structs may hold, however small its frame.
pub const DECODED_BYTES_FLOOR: usize = 4 << 20;

/// The most a frame of `frame_bytes` may hold once decoded: 16 bytes per byte, at least 4 MiB.
/// Real clients' requests stay below (a Fetch partition is ~33 bytes on the wire and ~90
/// decoded; an OffsetFetch group named `group-1234` 13 and 120); what needs more is a request of
/// many near-empty elements. The pool bounds what all requests hold together.
pub fn decoded_bytes_bound(frame_bytes: usize) -> usize {
    frame_bytes
        .saturating_mul(DECODED_BYTES_PER_FRAME_BYTE)
        .max(DECODED_BYTES_FLOOR)
}

/// Decodes a frame within its [`decoded_bytes_bound`]; `Err` says why the connection must be
/// closed.
pub fn decode_request(frame: Bytes) -> Result<Decoded, String> {
    let bound = decoded_bytes_bound(frame.len());
    decode_request_within(frame, bound).0
}

/// Decodes a frame holding at most `limit_bytes` in decoded structs; says what it held, and
/// when the limit stopped it, what it had asked for.
pub fn decode_request_within(
    frame: Bytes,
    limit_bytes: usize,
) -> (Result<Decoded, String>, DecodeCost) {
    let frame_bytes = frame.len();
    let (decoded, cost) = decode_budget::within(limit_bytes, || decode_unbounded(frame));
    let decoded = match (decoded, cost.refused_at_bytes) {
        (Err(_), Some(wanted)) => Err(format!(
            "a request of {frame_bytes} bytes would hold over {wanted} bytes once decoded \
             (the bound is {limit_bytes})"
        )),
        (decoded, _) => decoded,
    };
    (decoded, cost)
}

fn decode_unbounded(mut frame: Bytes) -> Result<Decoded, String> {
    if frame.len() < 8 {
        return Err(format!(
            "request of {} bytes is too short for a header",
            frame.len()
        ));
    }
    let raw_key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let api_key = ApiKey::try_from(raw_key).map_err(|_| format!("unknown API key {raw_key}"))?;
    let header = FrameHeader {
        api_key,
        version,
        correlation_id,
    };
    let Some((min, max)) = handler::supported_versions(api_key) else {
        let valid = api_key.valid_versions();
        if version < valid.min || version > valid.max {
            return Err(format!(
                "{api_key:?} v{version} is not a version of the protocol"
            ));
        }
        let (_, request) = decode_parts(api_key, version, &mut frame)?;
        return Ok(Decoded::Unimplemented { header, request });
    };
    if api_key == ApiKey::ApiVersions && version > max {
        return Ok(Decoded::ApiVersionsTooNew(header));
    }
    if version < min || version > max {
        return Err(format!(
            "{api_key:?} v{version} is not supported (v{min}–v{max})"
        ));
    }
    let (request_header, request) = decode_parts(api_key, version, &mut frame)?;
    if frame.has_remaining() {
        tracing::debug!(api = ?api_key, version, trailing = frame.remaining(), "ignoring trailing request bytes");
    }
    Ok(Decoded::Request {
        header,
        request_header,
        request,
    })
}

fn decode_parts(
    api_key: ApiKey,
    version: i16,
    frame: &mut Bytes,
) -> Result<(RequestHeader, RequestKind), String> {
    let header = RequestHeader::decode(frame, api_key.request_header_version(version))
        .map_err(|e| format!("malformed {api_key:?} v{version} request header: {e}"))?;
    let request = RequestKind::decode(api_key, frame, version)
        .map_err(|e| format!("malformed {api_key:?} v{version} request: {e}"))?;
    Ok((header, request))
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
