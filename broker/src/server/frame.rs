//! Decoding one request frame (the bytes after its size prefix): the header's API key and
//! version, checked against what the broker serves, then the header and body. Shared by the
//! connection and the fuzz targets, so that what is fuzzed is what serves.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
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

/// Decodes a frame; `Err` says why the connection must be closed.
pub fn decode_request(mut frame: Bytes) -> Result<Decoded, String> {
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
