//! Reading one size-prefixed request frame off a client connection, within bounds that keep a
//! slow or silent sender from holding what others need:
//!
//! - between frames, a connection silent for `connections.max.idle.ms` is closed;
//! - a frame's first `PROBATION_BYTES` (64 KiB, the size of the connection's read buffer) are
//!   reserved in the `queued.max.request.bytes` pool when it starts, and the rest only once
//!   those have arrived: a sender that declares 90 MiB and trickles holds 64 KiB. The rest is
//!   taken at once if the pool has it; otherwise the frame gives back what it holds and waits
//!   in the pool's fair queue for its whole size. Nothing waits for the pool while holding some
//!   of it, so frames cannot each hold a part while waiting for the rest (a deadlock);
//! - a started frame must arrive within `body_timeout` of reading time (time spent waiting for
//!   the pool does not count): a connection that stalls mid-frame is closed. 30 s by default,
//!   Kafka clients' own `request.timeout.ms`: a request later than that has been given up by its
//!   client anyway.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;

use crate::memory_pool::{RequestMemory, RequestMemoryPool};

/// What a frame must have sent before the rest of it is reserved.
const PROBATION_BYTES: usize = 64 * 1024;
/// A started frame's bytes must all arrive within this much reading time.
pub(super) const FRAME_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// What a connection's frames are bounded by.
pub(super) struct FrameBounds<'a> {
    /// `socket.request.max.bytes` (or the pre-authentication bound).
    pub max_frame: usize,
    pub pool: &'a RequestMemoryPool,
    /// `connections.max.idle.ms`: silence allowed between frames.
    pub idle: Duration,
    pub body_timeout: Duration,
}

/// What reading a frame came to.
pub(super) enum FrameRead {
    /// A whole frame and the pool bytes it holds.
    Frame(Bytes, RequestMemory),
    /// The client closed the connection between frames.
    Closed,
    /// Silent for `idle` between frames.
    Idle,
}

/// Reads one frame; `Err` says why the connection must be closed.
pub(super) async fn read_frame(
    reader: &mut (impl AsyncRead + Unpin),
    bounds: &FrameBounds<'_>,
) -> Result<FrameRead, String> {
    let size = match tokio::time::timeout(bounds.idle, reader.read_i32()).await {
        Err(_) => return Ok(FrameRead::Idle),
        Ok(Ok(size)) => size,
        // A client that goes away between requests (EOF, or a reset when it closes with unread
        // data) is an ordinary end of a connection.
        Ok(Err(e))
            if matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
            ) =>
        {
            return Ok(FrameRead::Closed)
        }
        Ok(Err(e)) => return Err(format!("read failed: {e}")),
    };
    if size < 0 || size as usize > bounds.max_frame {
        return Err(format!(
            "request of {size} bytes exceeds socket.request.max.bytes {}",
            bounds.max_frame
        ));
    }
    let (frame, held) = read_body(reader, size as usize, bounds).await?;
    Ok(FrameRead::Frame(frame, held))
}

async fn read_body(
    reader: &mut (impl AsyncRead + Unpin),
    size: usize,
    bounds: &FrameBounds<'_>,
) -> Result<(Bytes, RequestMemory), String> {
    let probation = size.min(PROBATION_BYTES);
    let mut held = bounds.pool.reserve(probation).await;
    let mut frame = BytesMut::with_capacity(probation);
    let mut reading_left = bounds.body_timeout;
    read_until(
        reader,
        &mut frame,
        probation,
        size,
        bounds,
        &mut reading_left,
    )
    .await?;
    if size > probation {
        match bounds.pool.try_reserve(size - probation) {
            Some(rest) => held.absorb(rest),
            None => {
                drop(held);
                held = bounds.pool.reserve(size).await;
            }
        }
        frame.reserve(size - frame.len());
        read_until(reader, &mut frame, size, size, bounds, &mut reading_left).await?;
    }
    Ok((frame.freeze(), held))
}

/// Reads until `frame` has `until` bytes, within `reading_left` of reading time.
async fn read_until(
    reader: &mut (impl AsyncRead + Unpin),
    frame: &mut BytesMut,
    until: usize,
    size: usize,
    bounds: &FrameBounds<'_>,
    reading_left: &mut Duration,
) -> Result<(), String> {
    while frame.len() < until {
        let began = Instant::now();
        let missing = (until - frame.len()) as u64;
        let read =
            tokio::time::timeout(*reading_left, (&mut *reader).take(missing).read_buf(frame))
                .await
                .map_err(|_| {
                    format!(
                        "a request of {size} bytes was not complete after {:?} ({} bytes arrived)",
                        bounds.body_timeout,
                        frame.len()
                    )
                })?
                .map_err(|e| format!("truncated request: {e}"))?;
        if read == 0 {
            return Err(format!(
                "truncated request: the connection closed after {} of {size} bytes",
                frame.len()
            ));
        }
        *reading_left = reading_left.saturating_sub(began.elapsed());
    }
    Ok(())
}

#[cfg(test)]
#[path = "frame_reader_tests.rs"]
mod tests;
