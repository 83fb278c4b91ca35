//! Large structured requests: what decoding them allocates, per byte of the frame. A small input
//! describes a large frame — a prefix, then an array count followed by one element's bytes
//! repeated that many times, then a suffix — behind a valid header of an API and version the
//! broker serves, so libFuzzer can search for the element whose decoded form is largest against
//! its wire form (an empty OffsetFetch group: 3 bytes, ~120 decoded). Whatever it finds, the
//! heap that `decode_request` takes at its peak must stay within the frame's
//! `decoded_bytes_bound` plus one copy of the frame (strings the decoder copies) and a little
//! constant overhead: a site that allocates without charging the decode budget fails here.
#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::RequestHeader;
use kafka_protocol::protocol::{Encodable, StrBytes};
use libfuzzer_sys::fuzz_target;
use weir_broker::handler::SUPPORTED_APIS;
use weir_broker::server::frame::{decode_request, decoded_bytes_bound};

/// The system allocator, counting what is live and its peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            let live = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed)
                + (new_size - layout.size());
            PEAK.fetch_max(live, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What decoding may take beyond its bound: the error strings, the header's copies.
const OVERHEAD_BYTES: usize = 64 * 1024;
/// The most elements one input may ask for (frames up to a few MiB keep runs fast).
const MOST_ELEMENTS: usize = 1 << 18;

fuzz_target!(|data: &[u8]| {
    let [api, version, count_kind, count_lo, count_hi, prefix_len, element_len, rest @ ..] = data
    else {
        return;
    };
    let (prefix_len, element_len) = (*prefix_len as usize, *element_len as usize);
    if rest.len() < prefix_len + element_len {
        return;
    }
    let (prefix, rest) = rest.split_at(prefix_len);
    let (element, suffix) = rest.split_at(element_len);
    let count = (u16::from_le_bytes([*count_lo, *count_hi]) as usize) << (count_kind >> 4 & 3);
    let count = count.min(MOST_ELEMENTS);
    let (api_key, min, max) = SUPPORTED_APIS[*api as usize % SUPPORTED_APIS.len()];
    let version = min + (*version as i16 % (max - min + 1));
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(1)
        .with_client_id(Some(StrBytes::from_static_str("fuzz")));
    let mut frame = BytesMut::with_capacity(64 + prefix.len() + count * element.len() + suffix.len());
    if header
        .encode(&mut frame, api_key.request_header_version(version))
        .is_err()
    {
        return;
    }
    frame.put_slice(prefix);
    match count_kind & 3 {
        // An INT32 count (classic arrays), an unsigned varint of count + 1 (compact arrays),
        // or none (the prefix says it).
        0 => frame.put_i32(count as i32),
        1 => {
            let mut value = count as u64 + 1;
            while value >= 0x80 {
                frame.put_u8((value as u8 & 0x7f) | 0x80);
                value >>= 7;
            }
            frame.put_u8(value as u8);
        }
        _ => {}
    }
    for _ in 0..count {
        frame.put_slice(element);
    }
    frame.put_slice(suffix);
    let frame: Bytes = frame.freeze();
    let frame_bytes = frame.len();
    let allowed = decoded_bytes_bound(frame_bytes) + frame_bytes + OVERHEAD_BYTES;
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let decoded = decode_request(frame);
    let peak = PEAK.load(Ordering::Relaxed) - before;
    drop(decoded);
    assert!(
        peak <= allowed,
        "{api_key:?} v{version}: a frame of {frame_bytes} bytes took {peak} bytes to decode \
         (allowed {allowed})"
    );
});
