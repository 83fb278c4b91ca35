//! Ending decided transactions: the markers, then the completed state — right away for an
//! EndTxn (within [`FINISH_WAIT`]), else by the broker's settling task, which also aborts open
//! transactions past their timeout.

use std::collections::BTreeSet;

use super::{
    CoordinatorState, Step, TransactionCoordinator, TxnServices, FINISH_WAIT, MARKER_RETRY_BACKOFF,
    MAX_MARKER_RETRY_BACKOFF,
};
use crate::transaction::markers::{MarkerOutcome, TxnMarker};
use crate::transaction::state::TxnState;
use crate::transaction::TxnError;

impl TransactionCoordinator {
    /// Queues every decided transaction for the settling task.
    pub(super) fn queue_decided(&self, state: &mut CoordinatorState) {
        let decided: Vec<String> = state
            .transactions
            .iter()
            .filter(|(_, txn)| txn.state.is_preparing())
            .map(|(id, _)| id.clone())
            .collect();
        if decided.is_empty() {
            return;
        }
        state.to_settle.extend(decided);
        self.settle_queued.notify_one();
    }

    /// Queues an id for the settling task.
    pub fn queue_settle(&self, transactional_id: &str) {
        self.lock().to_settle.insert(transactional_id.to_string());
        self.settle_queued.notify_one();
    }

    /// Waits until ids are queued for settling, and takes them (the settling task).
    pub async fn next_to_settle(&self) -> BTreeSet<String> {
        loop {
            let queued = std::mem::take(&mut self.lock().to_settle);
            if !queued.is_empty() {
                return queued;
            }
            self.settle_queued.notified().await;
        }
    }

    /// Queues open transactions past their timeout, and decided ones not being finished, for
    /// the settling task.
    pub fn tick(&self) {
        let now_ms = self.clock.now_ms();
        let mut state = self.lock();
        let due: Vec<String> = state
            .transactions
            .iter()
            .filter(|(_, txn)| txn.is_expired(now_ms) || txn.state.is_preparing())
            .map(|(id, _)| id.clone())
            .filter(|id| !state.pending.contains(id))
            .collect();
        if !due.is_empty() {
            state.to_settle.extend(due);
            self.settle_queued.notify_one();
        }
    }

    /// The settling task's work on one id: an open transaction past its timeout is aborted
    /// (the producer's epoch bumped, fencing it); a decided one gets its markers and completes.
    pub async fn settle(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
    ) -> Result<(), TxnError> {
        let expired = self
            .transition(services, transactional_id, |existing, now_ms| {
                let Some(txn) = existing.filter(|txn| txn.is_expired(now_ms)) else {
                    return Ok(Step::Answer(false));
                };
                tracing::info!(
                    transactional_id,
                    producer_id = txn.producer_id,
                    "aborting a transaction past its timeout"
                );
                let mut txn = txn.clone();
                // The abort is written with a bumped epoch: the timed-out producer is fenced.
                if txn.bump_epoch(now_ms).is_none() {
                    tracing::warn!(
                        transactional_id,
                        "producer epoch exhausted; aborting without fencing"
                    );
                }
                txn.end(false, now_ms)?;
                Ok(Step::Write(txn, true))
            })
            .await?;
        if expired {
            tracing::debug!(transactional_id, "timed-out transaction decided");
        }
        self.finish(services, transactional_id).await
    }

    /// Finishes a decided transaction, waiting at most [`FINISH_WAIT`]; past that (or when the
    /// settling task holds it and does not finish in time) it is left to the settling task.
    pub(super) async fn finish_in_time(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
    ) -> Result<(), TxnError> {
        let mut completions = self.completions.subscribe();
        let deadline = tokio::time::Instant::now() + FINISH_WAIT;
        let finished = tokio::time::timeout_at(deadline, self.finish(services, transactional_id));
        match finished.await {
            Ok(Err(TxnError::Concurrent)) => {}
            Ok(result) => return result,
            Err(_) => {
                self.queue_settle(transactional_id);
                return Err(TxnError::Concurrent);
            }
        }
        // Someone else (the settling task) is finishing it: wait for that.
        let decided = |coordinator: &Self| {
            coordinator
                .lock()
                .transactions
                .get(transactional_id)
                .is_some_and(|txn| txn.state.is_preparing())
        };
        while decided(self) {
            match tokio::time::timeout_at(deadline, completions.changed()).await {
                Ok(Ok(())) => {}
                _ => return Err(TxnError::Concurrent),
            }
        }
        Ok(())
    }

    /// Writes the markers of a decided transaction (retrying partitions not written yet while
    /// this broker coordinates the id) and completes it.
    pub(super) async fn finish(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
    ) -> Result<(), TxnError> {
        let partition = self.partition_of(services.topics, transactional_id);
        let (pending, txn, marker) = {
            let mut state = self.lock();
            let coordinator_epoch = self.coordinator_epoch(&state, partition)?;
            if state.pending.contains(transactional_id) {
                return Err(TxnError::Concurrent);
            }
            let Some(txn) = state.transactions.get(transactional_id).cloned() else {
                return Ok(());
            };
            let commit = match txn.state {
                TxnState::PrepareCommit => true,
                TxnState::PrepareAbort => false,
                _ => return Ok(()),
            };
            let pending =
                self.mark_pending(&mut state, transactional_id, partition, coordinator_epoch);
            let marker = TxnMarker {
                producer_id: txn.producer_id,
                producer_epoch: txn.producer_epoch,
                commit,
                coordinator_epoch,
            };
            (pending, txn, marker)
        };
        let mut remaining = txn.partitions.clone();
        let mut backoff = MARKER_RETRY_BACKOFF;
        loop {
            for (tp, outcome) in services.markers().write(marker, &remaining).await {
                match outcome {
                    MarkerOutcome::Fenced(error) => {
                        tracing::info!(transactional_id, topic = %tp.0, partition = tp.1, %error, "a newer coordinator ends this transaction");
                        return Err(TxnError::NotCoordinator);
                    }
                    outcome if outcome.is_done() => {
                        remaining.remove(&tp);
                    }
                    outcome => {
                        tracing::debug!(transactional_id, topic = %tp.0, partition = tp.1, ?outcome, "marker not written yet")
                    }
                }
            }
            if remaining.is_empty() {
                break;
            }
            if !pending.still_owned() {
                return Err(TxnError::NotCoordinator);
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_MARKER_RETRY_BACKOFF);
        }
        let mut complete = txn;
        complete.complete(self.clock.now_ms());
        let write = self.append_record(services.topics, transactional_id, Some(&complete))?;
        self.replicated(&write).await?;
        pending.install(Some(complete))?;
        self.completions.send_modify(|count| *count += 1);
        Ok(())
    }
}
