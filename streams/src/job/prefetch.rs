//! The next checkpoint's records are polled on a helper thread while the loop processes and
//! commits the current one, so that a job's consuming and its SQL and producing run on two
//! cores at once.
//!
//! What keeps this exactly-once (the loop in `job/mod.rs` relies on each point):
//! - The helper polls only between a [`Prefetch::request`] and the [`Prefetch::take`] that
//!   collects what it polled: the loop seeks (rewinds) and reads the assignment only while it
//!   is idle.
//! - [`Prefetched::group`] is the consumer's group metadata as the helper finished polling, so a
//!   checkpoint's offsets are committed under the generation its records were fetched in: if a
//!   rebalance completes on the helper while the loop commits, the commit is refused and
//!   aborted rather than committed for partitions that moved.
//!   A partition assigned to a copy while this one commits starts from the committed offsets
//!   the group coordinator holds as stable (KIP-447): the checkpoint's, once its transaction
//!   completed, or those before it when it was refused or aborted.
//! - A rebalance seen in a take makes the loop drop what was polled (eager assignment: every
//!   partition starts again from its committed offset), and an aborted checkpoint rewinds only
//!   once the helper is idle.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::Scope;

use rdkafka::consumer::{Consumer, ConsumerGroupMetadata};

use crate::error::{Result, StreamsError};
use crate::job::consumer::JobConsumer;
use crate::job::poll::{fill, Polled};
use crate::job::JobConfig;

/// One poll's records and the group metadata they were fetched under.
pub(super) struct Prefetched {
    pub polled: Polled,
    pub group: Option<ConsumerGroupMetadata>,
}

pub(super) struct Prefetch {
    requests: SyncSender<()>,
    answers: Receiver<Prefetched>,
    in_flight: bool,
}

impl Prefetch {
    /// Starts the helper in `scope`; it ends once this is dropped.
    pub(super) fn start<'scope, 'env>(
        scope: &'scope Scope<'scope, 'env>,
        config: &'env JobConfig,
        consumer: &'env JobConsumer,
        internal_topic: Option<&'env str>,
        stop: &'env AtomicBool,
    ) -> Self {
        let (requests, requested) = sync_channel::<()>(1);
        let (answer, answers) = sync_channel(1);
        scope.spawn(move || {
            while requested.recv().is_ok() {
                let polled = fill(config, consumer, internal_topic, stop);
                let group = consumer.group_metadata();
                if answer.send(Prefetched { polled, group }).is_err() {
                    break;
                }
            }
        });
        Prefetch {
            requests,
            answers,
            in_flight: false,
        }
    }

    /// Lets the helper poll the next checkpoint's records (once; a request in flight stays).
    pub(super) fn request(&mut self) {
        if !self.in_flight && self.requests.send(()).is_ok() {
            self.in_flight = true;
        }
    }

    /// The records the helper polled (requesting them first if no request is in flight); the
    /// helper is idle afterwards.
    pub(super) fn take(&mut self) -> Result<Prefetched> {
        self.request();
        self.in_flight = false;
        self.answers
            .recv()
            .map_err(|_| StreamsError::Internal("the job's polling thread stopped".into()))
    }

    /// Waits for a poll in flight and drops its records (before the loop rewinds).
    pub(super) fn settle(&mut self) {
        if self.in_flight {
            self.in_flight = false;
            let _ = self.answers.recv();
        }
    }
}
