//! Buffers that large log reads (a fetch's record batches) land in, kept for the next read once
//! the response that carried them has been written and dropped.
//!
//! Why: a fetch reads up to `max.partition.fetch.bytes` per partition into fresh memory. The
//! allocator hands such blocks back to the kernel when they are freed (an arena trimmed with
//! `madvise`, or an `munmap`), so the next read faulted in and zeroed every page again: in a
//! profile of an 8-partition consume, page faults and `madvise` took ~40 % of the broker's CPU,
//! more than the copy out of the page cache itself. Reused buffers are already mapped.
//!
//! Bounds: reads under `MIN_POOLED_BYTES` use an ordinary allocation (the allocator serves those
//! well); above `MAX_POOLED_BYTES` they are allocated and freed as before; at most
//! `MAX_IDLE_BYTES` wait idle in the pool, a buffer that would exceed it is freed.

use std::sync::Mutex;

use bytes::Bytes;

/// Smallest read that takes a pooled buffer.
pub const MIN_POOLED_BYTES: usize = 64 * 1024;
/// Largest buffer the pool keeps (a read larger than this is allocated for itself).
pub const MAX_POOLED_BYTES: usize = 16 * 1024 * 1024;
/// Most bytes of idle buffers the pool holds.
pub const MAX_IDLE_BYTES: usize = 64 * 1024 * 1024;

/// A bounded set of idle read buffers.
pub struct ReadBufferPool {
    idle: Mutex<Idle>,
    max_idle_bytes: usize,
}

struct Idle {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

/// The pool fetch reads use.
pub static FETCH_READ_BUFFERS: ReadBufferPool = ReadBufferPool::new(MAX_IDLE_BYTES);

impl ReadBufferPool {
    pub const fn new(max_idle_bytes: usize) -> Self {
        Self {
            idle: Mutex::new(Idle {
                buffers: Vec::new(),
                bytes: 0,
            }),
            max_idle_bytes,
        }
    }

    /// An empty buffer with room for `length` bytes: an idle one when there is one large
    /// enough, else a new one sized to the next power of two (so that the reads of one consumer,
    /// whose lengths vary a little, keep fitting).
    pub fn take(&self, length: usize) -> Vec<u8> {
        if !(MIN_POOLED_BYTES..=MAX_POOLED_BYTES).contains(&length) {
            return Vec::with_capacity(length);
        }
        {
            let mut idle = self.lock();
            if let Some(index) = idle.buffers.iter().position(|b| b.capacity() >= length) {
                let buffer = idle.buffers.swap_remove(index);
                idle.bytes -= buffer.capacity();
                return buffer;
            }
        }
        Vec::with_capacity(length.next_power_of_two().min(MAX_POOLED_BYTES))
    }

    /// The buffer as shared bytes; it comes back to this pool when the last clone is dropped.
    pub fn share(&'static self, buffer: Vec<u8>) -> Bytes {
        if !(MIN_POOLED_BYTES..=MAX_POOLED_BYTES).contains(&buffer.capacity()) {
            return Bytes::from(buffer);
        }
        Bytes::from_owner(Recycled { buffer, pool: self })
    }

    fn give_back(&self, mut buffer: Vec<u8>) {
        buffer.clear();
        let mut idle = self.lock();
        if idle.bytes + buffer.capacity() <= self.max_idle_bytes {
            idle.bytes += buffer.capacity();
            idle.buffers.push(buffer);
        }
    }

    /// Bytes held idle now.
    pub fn idle_bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Idle> {
        // The lists stay consistent whatever a panicking holder was doing: nothing is left
        // half-updated across an await or a call that can panic.
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A pooled buffer lent out as `Bytes`.
struct Recycled {
    buffer: Vec<u8>,
    pool: &'static ReadBufferPool,
}

impl AsRef<[u8]> for Recycled {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.buffer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_read_comes_back_and_is_reused_without_a_new_allocation() {
        static POOL: ReadBufferPool = ReadBufferPool::new(4 * 1024 * 1024);
        let mut buffer = POOL.take(100_000);
        assert!(buffer.capacity() >= 131_072, "rounded up to a power of two");
        buffer.extend_from_slice(&[5u8; 100_000]);
        let address = buffer.as_ptr();
        let bytes = POOL.share(buffer);
        let slice = bytes.slice(10..20);
        drop(bytes);
        assert_eq!(POOL.idle_bytes(), 0, "a clone still holds it");
        assert_eq!(&slice[..], &[5u8; 10]);
        drop(slice);
        assert_eq!(POOL.idle_bytes(), 131_072);
        let again = POOL.take(120_000);
        assert_eq!(again.as_ptr(), address);
        assert!(again.is_empty());
        assert_eq!(POOL.idle_bytes(), 0);
    }

    #[test]
    fn small_and_huge_reads_are_not_pooled_and_idle_bytes_stay_bounded() {
        static POOL: ReadBufferPool = ReadBufferPool::new(300 * 1024);
        drop(POOL.share(POOL.take(1000)));
        drop(POOL.share(POOL.take(MAX_POOLED_BYTES + 1)));
        assert_eq!(POOL.idle_bytes(), 0);
        let buffers: Vec<Bytes> = (0..4).map(|_| POOL.share(POOL.take(128 * 1024))).collect();
        drop(buffers);
        assert_eq!(
            POOL.idle_bytes(),
            256 * 1024,
            "two of four fit under the bound"
        );
    }
}
