//! Request frames as the broker decodes them. The first two bytes choose an API the broker
//! serves (index into `SUPPORTED_APIS`) and a version within its range, so every supported API
//! and version is reached; the third says whether the rest is a whole frame as sent on the wire
//! (the header's own key and version, then anything) or a body behind a valid header for the
//! chosen API and version. Decoding must return — never panic, abort or allocate past the input.
#![no_main]

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::RequestHeader;
use kafka_protocol::protocol::{Encodable, StrBytes};
use libfuzzer_sys::fuzz_target;
use weir_broker::handler::SUPPORTED_APIS;
use weir_broker::server::frame::decode_request;

fuzz_target!(|data: &[u8]| {
    let [api, version, whole, rest @ ..] = data else {
        return;
    };
    if whole % 4 == 0 {
        let _ = decode_request(Bytes::copy_from_slice(rest));
        return;
    }
    let (api_key, min, max) = SUPPORTED_APIS[*api as usize % SUPPORTED_APIS.len()];
    let version = min + (*version as i16 % (max - min + 1));
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("fuzz")));
    let mut frame = BytesMut::new();
    if header
        .encode(&mut frame, api_key.request_header_version(version))
        .is_err()
    {
        return;
    }
    frame.put_slice(rest);
    let _ = decode_request(frame.freeze());
});
