//! Storage failures of one partition, as Kafka's log-dir failure model treats them but per
//! partition: an I/O error that may have lost or torn acknowledged data (a failed fsync, EIO on
//! a write or read) takes the partition offline until the broker restarts — every request for it
//! gets KAFKA_STORAGE_ERROR, the broker keeps serving the others, and recovery at start-up keeps
//! what was durable. A full disk (ENOSPC, EDQUOT) only refuses the append that hit it: the
//! segment is cut back to its last whole batch, reads go on, and appends succeed again once
//! space is freed.
//!
//! Tests inject faults with [`super::Partition::inject_disk_fault`]: the next writes or fsyncs
//! fail with the given error as if the disk had returned it.

use std::io;
use std::sync::{Mutex, OnceLock};

use crate::log::error::LogError;

/// Which disk operation an injected fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskOp {
    /// Appending to the log.
    Write,
    /// Fsyncing the log's files.
    Sync,
}

#[derive(Default)]
pub(super) struct StorageHealth {
    /// Why the partition is offline, once it is.
    failure: OnceLock<String>,
    injected: Mutex<Option<(DiskOp, i32)>>,
}

/// Whether an I/O error means the disk is full (the append can be retried once space is freed).
pub fn is_disk_full(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

impl StorageHealth {
    pub(super) fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    /// `Err(Offline)` once the partition is offline.
    pub(super) fn check(&self) -> Result<(), LogError> {
        match self.failure.get() {
            Some(reason) => Err(LogError::Offline {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Takes the partition offline for `error` unless it only says the disk is full.
    /// `always`: any I/O error counts (a failed fsync leaves the page cache's state unknown).
    pub(super) fn judge<T>(
        &self,
        result: Result<T, LogError>,
        partition: &str,
        always: bool,
    ) -> Result<T, LogError> {
        if let Err(LogError::Io { path, source }) = &result {
            if always || !is_disk_full(source) {
                let reason = format!("I/O error on {}: {source}", path.display());
                if self.failure.set(reason.clone()).is_ok() {
                    tracing::error!(
                        partition,
                        %reason,
                        "partition offline after a storage failure: requests for it get \
                         KAFKA_STORAGE_ERROR until the broker restarts (recovery keeps what was \
                         durable)"
                    );
                }
            }
        }
        result
    }

    pub(super) fn inject(&self, fault: Option<(DiskOp, i32)>) {
        *self.injected.lock().unwrap_or_else(|p| p.into_inner()) = fault;
    }

    /// The injected error for `op`, if one is set.
    pub(super) fn injected(&self, op: DiskOp) -> Option<io::Error> {
        let injected = *self.injected.lock().unwrap_or_else(|p| p.into_inner());
        match injected {
            Some((on, errno)) if on == op => Some(io::Error::from_raw_os_error(errno)),
            _ => None,
        }
    }
}
