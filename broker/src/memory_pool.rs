//! A pool of bytes that tasks reserve before they allocate and give back when done: the
//! `queued.max.request.bytes` pool of the client listener (`server::limits`) and the controller
//! listener's. A reservation waits (back-pressure) while the pool is exhausted; the semaphore
//! is fair, so a large reservation is not starved by small ones.

use std::sync::Arc;

use prometheus::IntGauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The pool's size when no bound is asked for.
const UNBOUNDED: usize = Semaphore::MAX_PERMITS;

/// `queued.max.request.bytes`: request bytes held across all connections.
pub struct RequestMemoryPool {
    bytes: Arc<Semaphore>,
    capacity_bytes: usize,
    used_bytes: IntGauge,
}

/// Pool bytes reserved for one request, given back when dropped.
pub struct RequestMemory {
    _permit: Option<OwnedSemaphorePermit>,
    bytes: usize,
    used_bytes: IntGauge,
}

impl RequestMemoryPool {
    /// A pool of `capacity_bytes` (`None`: no bound); `used_bytes` follows what is reserved.
    pub fn new(capacity_bytes: Option<usize>, used_bytes: IntGauge) -> Arc<Self> {
        let capacity_bytes = capacity_bytes.unwrap_or(UNBOUNDED).min(UNBOUNDED);
        Arc::new(RequestMemoryPool {
            bytes: Arc::new(Semaphore::new(capacity_bytes)),
            capacity_bytes,
            used_bytes,
        })
    }

    pub fn capacity_bytes(&self) -> usize {
        self.capacity_bytes
    }

    /// Waits until `bytes` are free and reserves them. `bytes` is at most
    /// `socket.request.max.bytes`, which the pool is never smaller than.
    pub async fn reserve(&self, bytes: usize) -> RequestMemory {
        let permit = match self.permits(bytes) {
            0 => None,
            permits => Some(
                Arc::clone(&self.bytes)
                    .acquire_many_owned(permits)
                    .await
                    .expect("the pool's semaphore is never closed"),
            ),
        };
        self.held(permit, bytes)
    }

    /// Reserves `bytes` if they are free now, without waiting.
    pub fn try_reserve(&self, bytes: usize) -> Option<RequestMemory> {
        let permit = match self.permits(bytes) {
            0 => None,
            permits => Some(
                Arc::clone(&self.bytes)
                    .try_acquire_many_owned(permits)
                    .ok()?,
            ),
        };
        Some(self.held(permit, bytes))
    }

    fn permits(&self, bytes: usize) -> u32 {
        u32::try_from(bytes.min(self.capacity_bytes)).unwrap_or(u32::MAX)
    }

    fn held(&self, permit: Option<OwnedSemaphorePermit>, bytes: usize) -> RequestMemory {
        self.used_bytes.add(bytes as i64);
        RequestMemory {
            _permit: permit,
            bytes,
            used_bytes: self.used_bytes.clone(),
        }
    }
    /// Bytes free right now (a hint: another task may take them before this one does).
    pub fn available_bytes(&self) -> usize {
        self.bytes.available_permits()
    }
}

impl RequestMemory {
    /// A reservation of nothing, to grow with [`RequestMemory::absorb`].
    pub fn none(pool: &RequestMemoryPool) -> RequestMemory {
        RequestMemory {
            _permit: None,
            bytes: 0,
            used_bytes: pool.used_bytes.clone(),
        }
    }

    /// Bytes this reservation holds.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Takes `other`'s bytes into this reservation (both from the same pool).
    pub fn absorb(&mut self, mut other: RequestMemory) {
        // The same gauge counts both: the bytes move, the gauge stays.
        self.bytes += std::mem::take(&mut other.bytes);
        match (self._permit.as_mut(), other._permit.take()) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (None, theirs) => self._permit = theirs,
            (Some(_), None) => {}
        }
    }
}

impl Drop for RequestMemory {
    fn drop(&mut self) {
        self.used_bytes.sub(self.bytes as i64);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_reservation_waits_while_the_pool_is_exhausted() {
        let used = IntGauge::new("used", "used").unwrap();
        let pool = RequestMemoryPool::new(Some(100), used.clone());
        let held = pool.reserve(70).await;
        assert_eq!(used.get(), 70);
        let waiting = tokio::time::timeout(Duration::from_millis(50), pool.reserve(40));
        assert!(
            waiting.await.is_err(),
            "the pool handed out more than it has"
        );
        drop(held);
        assert_eq!(used.get(), 0);
        let mut grown = RequestMemory::none(&pool);
        grown.absorb(pool.reserve(30).await);
        grown.absorb(pool.reserve(30).await);
        assert_eq!(
            (grown.bytes(), used.get(), pool.available_bytes()),
            (60, 60, 40)
        );
        drop(grown);
        assert_eq!((used.get(), pool.available_bytes()), (0, 100));
        let granted = tokio::time::timeout(Duration::from_secs(5), pool.reserve(40)).await;
        assert!(granted.is_ok());
    }
}
