//! A response as it goes to the socket: a size-prefixed frame held as a list of chunks, so that
//! record batches read for a Fetch are written from the buffers they were read into, not copied
//! once more into the encoded response.
//!
//! `kafka-protocol` encodes into any `ByteBufMut`. `ChunkedBuf` is one that copies what it is
//! given into an owned chunk, except a slice that *is* one of the shared payloads it was built
//! with (the same address and length: the encoder is handing over that `Bytes`' own memory):
//! that one ends the owned chunk and joins the list by reference. The frame is then written with
//! vectored writes (`write_frame`).

use std::io::IoSlice;
use std::ops::Range;

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::protocol::buf::ByteBufMut;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Payloads smaller than this are copied: an extra iovec costs more than the copy.
const MIN_SHARED_BYTES: usize = 1024;
/// Slices handed to one vectored write (Linux takes up to 1024).
const MAX_IO_SLICES: usize = 64;

/// A size-prefixed response frame in order.
#[derive(Debug, Default)]
pub(super) struct ResponseFrame {
    chunks: Vec<Bytes>,
}

impl ResponseFrame {
    /// A frame already whole in one buffer (its size prefix included).
    pub(super) fn whole(bytes: Bytes) -> Self {
        Self {
            chunks: vec![bytes],
        }
    }

    /// The frame as one buffer.
    #[cfg(test)]
    fn to_vec(&self) -> Vec<u8> {
        self.chunks.concat()
    }
}

/// An encoder target that keeps `shared` payloads by reference (see the module's tour).
/// The frame starts with a four-byte size, filled in by `finish`.
pub(super) struct ChunkedBuf {
    /// Finished chunks, in order; the first is the owned start of the frame.
    chunks: Vec<Bytes>,
    /// The frame's start while it is still owned: the size prefix goes here at the end.
    start: Option<BytesMut>,
    /// What is being written now.
    owned: BytesMut,
    /// Bytes in `chunks` and `start`.
    finished_len: usize,
    shared: Vec<Bytes>,
}

impl ChunkedBuf {
    /// An empty frame (its size prefix reserved) that will keep the `shared` payloads by
    /// reference when the encoder writes them whole.
    pub(super) fn new(shared: Vec<Bytes>) -> Self {
        let mut owned = BytesMut::with_capacity(1024);
        owned.put_i32(0);
        Self {
            chunks: Vec::new(),
            start: None,
            owned,
            finished_len: 0,
            shared: shared
                .into_iter()
                .filter(|payload| payload.len() >= MIN_SHARED_BYTES)
                .collect(),
        }
    }

    /// The frame, its size prefix set to what follows it.
    pub(super) fn finish(mut self) -> ResponseFrame {
        let size = (self.offset() - 4) as i32;
        let start = self.start.as_mut().unwrap_or(&mut self.owned);
        start[0..4].copy_from_slice(&size.to_be_bytes());
        let mut chunks = Vec::with_capacity(self.chunks.len() + 2);
        chunks.extend(self.start.take().map(BytesMut::freeze));
        chunks.append(&mut self.chunks);
        if !self.owned.is_empty() {
            chunks.push(self.owned.freeze());
        }
        ResponseFrame { chunks }
    }

    fn shared_payload(&self, slice: &[u8]) -> Option<Bytes> {
        if slice.len() < MIN_SHARED_BYTES {
            return None;
        }
        self.shared
            .iter()
            .find(|payload| payload.as_ptr() == slice.as_ptr() && payload.len() == slice.len())
            .cloned()
    }

    fn end_owned_chunk(&mut self) {
        let owned = self.owned.split();
        self.finished_len += owned.len();
        match self.start {
            None => self.start = Some(owned),
            Some(_) if owned.is_empty() => {}
            Some(_) => self.chunks.push(owned.freeze()),
        }
    }

    /// Makes the whole frame one owned buffer again (a gap to fill reaches back into a
    /// finished chunk; the Fetch response's encoder never does this).
    fn gather(&mut self) {
        let mut whole = BytesMut::with_capacity(self.offset());
        if let Some(start) = self.start.take() {
            whole.extend_from_slice(&start);
        }
        for chunk in self.chunks.drain(..) {
            whole.extend_from_slice(&chunk);
        }
        whole.extend_from_slice(&self.owned);
        self.owned = whole;
        self.finished_len = 0;
    }
}

// SAFETY: every method delegates to the owned `BytesMut`, whose `BufMut` implementation upholds
// the trait's contract.
#[allow(unsafe_code)] // `BufMut` is an unsafe trait; nothing here but delegation
unsafe impl BufMut for ChunkedBuf {
    fn remaining_mut(&self) -> usize {
        self.owned.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, count: usize) {
        // SAFETY: the caller initialised `count` bytes of `chunk_mut`, which is the owned buffer's.
        unsafe { self.owned.advance_mut(count) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.owned.chunk_mut()
    }

    fn put_slice(&mut self, slice: &[u8]) {
        match self.shared_payload(slice) {
            Some(payload) => {
                self.end_owned_chunk();
                self.finished_len += payload.len();
                self.chunks.push(payload);
            }
            None => self.owned.extend_from_slice(slice),
        }
    }
}

impl ByteBufMut for ChunkedBuf {
    fn offset(&self) -> usize {
        self.finished_len + self.owned.len()
    }

    fn seek(&mut self, offset: usize) {
        if offset < self.finished_len {
            self.gather();
        }
        self.owned.resize(offset - self.finished_len, 0);
    }

    fn range(&mut self, range: Range<usize>) -> &mut [u8] {
        if range.start < self.finished_len {
            self.gather();
        }
        let base = self.finished_len;
        &mut self.owned[range.start - base..range.end - base]
    }
}

/// Writes the frame with vectored writes (through the caller's buffered writer, which copies
/// small frames and hands large ones to the socket as they are).
pub(super) async fn write_frame(
    writer: &mut (impl AsyncWrite + Unpin),
    frame: &ResponseFrame,
) -> std::io::Result<()> {
    let mut chunk = 0;
    let mut within = 0;
    while chunk < frame.chunks.len() {
        let end = (chunk + MAX_IO_SLICES).min(frame.chunks.len());
        let mut slices = Vec::with_capacity(end - chunk);
        slices.push(IoSlice::new(&frame.chunks[chunk][within..]));
        slices.extend(frame.chunks[chunk + 1..end].iter().map(|c| IoSlice::new(c)));
        let mut written = writer.write_vectored(&slices).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while chunk < frame.chunks.len() && written > 0 {
            let left = frame.chunks[chunk].len() - within;
            if written >= left {
                written -= left;
                chunk += 1;
                within = 0;
            } else {
                within += written;
                written = 0;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kafka_protocol::messages::FetchResponse;
    use kafka_protocol::protocol::Encodable;

    fn fetch_response(payloads: &[Bytes]) -> FetchResponse {
        let partitions = payloads
            .iter()
            .enumerate()
            .map(|(index, payload)| {
                PartitionData::default()
                    .with_partition_index(index as i32)
                    .with_records(Some(payload.clone()))
            })
            .collect();
        FetchResponse::default().with_responses(vec![
            FetchableTopicResponse::default().with_partitions(partitions)
        ])
    }

    fn encoded_whole(response: &FetchResponse, version: i16) -> Vec<u8> {
        let mut buffer = BytesMut::new();
        buffer.put_i32(0);
        response.encode(&mut buffer, version).unwrap();
        let size = (buffer.len() - 4) as i32;
        buffer[0..4].copy_from_slice(&size.to_be_bytes());
        buffer.to_vec()
    }

    #[test]
    fn a_fetch_response_keeps_large_payloads_by_reference_and_encodes_the_same_bytes() {
        let large: Vec<Bytes> = (0..3u8).map(|i| Bytes::from(vec![i; 5000])).collect();
        let small = Bytes::from(vec![9u8; 100]);
        let payloads = vec![
            large[0].clone(),
            small.clone(),
            large[1].clone(),
            large[2].clone(),
        ];
        let response = fetch_response(&payloads);
        for version in [4, 11, 12, 16] {
            let mut buffer = ChunkedBuf::new(payloads.clone());
            response.encode(&mut buffer, version).unwrap();
            let frame = buffer.finish();
            assert_eq!(
                frame.to_vec(),
                encoded_whole(&response, version),
                "v{version}"
            );
            let by_reference = frame
                .chunks
                .iter()
                .filter(|chunk| large.iter().any(|l| l.as_ptr() == chunk.as_ptr()))
                .count();
            assert_eq!(
                by_reference, 3,
                "v{version}: the three large payloads are not copied"
            );
        }
    }

    #[test]
    fn equal_bytes_elsewhere_are_copied_not_taken_for_a_payload() {
        let payload = Bytes::from(vec![7u8; 4096]);
        let lookalike = vec![7u8; 4096];
        let mut buffer = ChunkedBuf::new(vec![payload]);
        buffer.put_slice(&lookalike);
        let frame = buffer.finish();
        assert_eq!(frame.chunks.len(), 1);
        assert_eq!(frame.to_vec().len(), 4 + 4096);
    }

    #[test]
    fn a_gap_reaching_into_a_finished_chunk_gathers_the_frame() {
        let payload = Bytes::from(vec![1u8; 2048]);
        let mut buffer = ChunkedBuf::new(vec![payload.clone()]);
        let gap = buffer.put_gap(4);
        buffer.put_slice(&payload);
        buffer.put_slice(b"tail");
        buffer.gap_buf(gap).copy_from_slice(b"head");
        let bytes = buffer.finish().to_vec();
        assert_eq!(&bytes[0..4], &(4 + 2048 + 4i32).to_be_bytes());
        assert_eq!(&bytes[4..8], b"head");
        assert_eq!(&bytes[8..8 + 2048], &payload[..]);
        assert_eq!(&bytes[8 + 2048..], b"tail");
    }

    /// A writer that takes at most `step` bytes a call, to exercise partial vectored writes.
    struct Trickle {
        written: Vec<u8>,
        step: usize,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            let n = buf.len().min(self.step);
            self.written.extend_from_slice(&buf[..n]);
            std::task::Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            slices: &[IoSlice<'_>],
        ) -> std::task::Poll<std::io::Result<usize>> {
            let mut left = self.step;
            let mut total = 0;
            for slice in slices {
                let n = slice.len().min(left);
                self.written.extend_from_slice(&slice[..n]);
                left -= n;
                total += n;
                if left == 0 {
                    break;
                }
            }
            std::task::Poll::Ready(Ok(total))
        }
        fn is_write_vectored(&self) -> bool {
            true
        }
        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn partial_vectored_writes_send_every_byte_in_order() {
        let chunks: Vec<Bytes> = (0..150u32)
            .map(|i| Bytes::from(vec![(i % 251) as u8; 1 + (i as usize * 37) % 3000]))
            .collect();
        let frame = ResponseFrame { chunks };
        for step in [1, 7, 1000, 4096, 1 << 20] {
            let mut writer = Trickle {
                written: Vec::new(),
                step,
            };
            write_frame(&mut writer, &frame).await.unwrap();
            assert_eq!(writer.written, frame.to_vec(), "step {step}");
        }
    }
}
