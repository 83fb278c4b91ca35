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

use std::sync::{Condvar, Mutex, PoisonError};

/// How many end-to-end tests run at once. Each starts `weir` processes and mostly waits for
/// them (a third of a core on average, measured), so two share a 2-core machine; more would make
/// their deadlines a matter of load.
const TESTS_AT_ONCE: usize = 2;

static RUNNING: Mutex<usize> = Mutex::new(0);
static SLOT_FREED: Condvar = Condvar::new();

/// One of the [`TESTS_AT_ONCE`] places, held for the whole of a test.
pub(crate) struct TestSlot(());

/// Waits for a place among the tests running. A test that panicked has failed already and
/// gives its place back as it unwinds, so the next may still run.
pub(crate) fn test_slot() -> TestSlot {
    let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
    while *running >= TESTS_AT_ONCE {
        running = SLOT_FREED
            .wait(running)
            .unwrap_or_else(PoisonError::into_inner);
    }
    *running += 1;
    TestSlot(())
}

impl Drop for TestSlot {
    fn drop(&mut self) {
        *RUNNING.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
        SLOT_FREED.notify_one();
    }
}
