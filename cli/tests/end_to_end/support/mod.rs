//! What several end-to-end tests share.

pub(crate) mod access_log;
pub(crate) mod broker;
pub(crate) mod committed;
pub(crate) mod history;
pub(crate) mod jobs;
pub(crate) mod netns;
pub(crate) mod nodes;
pub(crate) mod produce;
pub(crate) mod rng;
pub(crate) mod scrape;
pub(crate) mod windowed;
pub(crate) mod workload;

use std::sync::{Mutex, MutexGuard};

/// Held for the whole of a test: the end-to-end tests run one at a time.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    // A test that panicked while holding it has failed already; the next may still run.
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
