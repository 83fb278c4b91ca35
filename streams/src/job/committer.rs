//! Checkpoints are committed on a helper thread, so that producing one checkpoint's records
//! and committing its transaction overlap with processing the next one (on the other core).
//!
//! What keeps this exactly-once (the loop in `job/mod.rs` relies on each point):
//! - One checkpoint at a time: the loop waits for the one in flight ([`Committer::wait`])
//!   before it sends the next, so transactions begin and commit in checkpoint order.
//! - The next checkpoint is only computed in memory while the previous one commits; it is sent
//!   only once that one committed. If it was aborted instead, the loop drops the next one,
//!   rewinds the input to the committed offsets and rebuilds the state (which the next one had
//!   already changed) from the changelog — as after any aborted checkpoint.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::Scope;
use std::time::Instant;

use rdkafka::consumer::ConsumerGroupMetadata;

use crate::error::{Result, StreamsError};
use crate::job::purge::Purger;
use crate::job::transaction::{Checkpoint, CheckpointWriter};

type Request = (Option<ConsumerGroupMetadata>, Checkpoint);

pub(super) struct Committer {
    requests: SyncSender<Request>,
    answers: Receiver<(Result<()>, Instant)>,
    in_flight: bool,
    /// When the checkpoint waited for last had committed (or failed).
    finished: Option<Instant>,
}

impl Committer {
    /// Starts the helper in `scope`; it ends once this is dropped. After a commit, `purger`
    /// (if any) deletes what the job's internal topics hold below the committed offsets, once
    /// its interval has passed — after the answer, off the loop's path.
    pub(super) fn start<'scope, 'env>(
        scope: &'scope Scope<'scope, 'env>,
        writer: &'env mut CheckpointWriter,
        mut purger: Option<Purger>,
    ) -> Self {
        let (requests, requested) = sync_channel::<Request>(1);
        let (answer, answers) = sync_channel(1);
        scope.spawn(move || {
            while let Ok((group, checkpoint)) = requested.recv() {
                let committed = writer.commit(group.as_ref(), &checkpoint);
                // The records are dropped here, off the loop's thread.
                drop(checkpoint);
                let purge = committed.is_ok();
                if answer.send((committed, Instant::now())).is_err() {
                    break;
                }
                if let Some(purger) = purger.as_mut().filter(|_| purge) {
                    purger.purge_if_due();
                }
            }
        });
        Committer {
            requests,
            answers,
            in_flight: false,
            finished: None,
        }
    }

    /// Commits `checkpoint` (its offsets under `group`) in the background; the one sent before
    /// must have been waited for.
    pub(super) fn send(
        &mut self,
        group: Option<ConsumerGroupMetadata>,
        checkpoint: Checkpoint,
    ) -> Result<()> {
        assert!(!self.in_flight, "one checkpoint commits at a time");
        self.requests
            .send((group, checkpoint))
            .map_err(|_| StreamsError::Internal("the job's committing thread stopped".into()))?;
        self.in_flight = true;
        Ok(())
    }

    /// How the checkpoint in flight ended (`None`: none was).
    pub(super) fn wait(&mut self) -> Option<Result<()>> {
        if !self.in_flight {
            return None;
        }
        self.in_flight = false;
        let (committed, finished) = self.answers.recv().unwrap_or_else(|_| {
            let stopped = StreamsError::Internal("the job's committing thread stopped".into());
            (Err(stopped), Instant::now())
        });
        self.finished = Some(finished);
        Some(committed)
    }

    /// When the checkpoint last waited for had committed or failed (not when it was waited
    /// for: the loop may have been polling meanwhile).
    pub(super) fn finished(&self) -> Option<Instant> {
        self.finished
    }
}
