//! How the coordinator changes an id's state: decided on the current one, appended to the id's
//! `__transaction_state` partition, and taken into memory once that partition's ISR holds it;
//! the id is pending meanwhile ([`PendingChange`]).

use std::sync::Arc;

use super::{CoordinatorState, Step, TransactionCoordinator, TxnServices};
use crate::cluster::ControllerError;
use crate::error::BrokerError;
use crate::log::LogError;
use crate::partition::role::ReplicationError;
use crate::partition::Partition;
use crate::topic::{internal, TopicRegistry};
use crate::transaction::markers::MARKER_WRITE_TIMEOUT;
use crate::transaction::records::{self, TRANSACTION_STATE_TOPIC};
use crate::transaction::state::TxnMetadata;
use crate::transaction::TxnError;

/// Where a state record went, to wait for its replicas.
pub(super) struct StateWrite {
    partition: Arc<Partition>,
    last_offset: i64,
    min_insync_replicas: usize,
}

/// An id marked pending; dropping it (an error, a dropped future) clears the mark.
pub(super) struct PendingChange<'a> {
    pub(super) coordinator: &'a TransactionCoordinator,
    pub(super) id: String,
    /// The state partition and its coordinator epoch when the change began.
    pub(super) partition: i32,
    pub(super) coordinator_epoch: i32,
    pub(super) done: bool,
}

impl PendingChange<'_> {
    /// Takes `txn` as the id's state (`None`: forgets the id) — if this broker still
    /// coordinates it at the same epoch.
    pub(super) fn install(mut self, txn: Option<TxnMetadata>) -> Result<(), TxnError> {
        let coordinator = self.coordinator;
        let mut state = coordinator.lock();
        self.done = true;
        state.pending.remove(&self.id);
        if !coordinator.still_owns(&state, self.partition, self.coordinator_epoch) {
            return Err(TxnError::NotCoordinator);
        }
        match txn {
            Some(txn) => state.transactions.insert(self.id.clone(), txn),
            None => state.transactions.remove(&self.id),
        };
        Ok(())
    }

    pub(super) fn still_owned(&self) -> bool {
        let state = self.coordinator.lock();
        self.coordinator
            .still_owns(&state, self.partition, self.coordinator_epoch)
    }
}

impl Drop for PendingChange<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.coordinator.lock().pending.remove(&self.id);
        }
    }
}

/// Kafka's answers when the coordinator cannot write its state: NOT_COORDINATOR once another
/// broker leads the partition, COORDINATOR_NOT_AVAILABLE for the passing troubles.
fn state_write_error(error: &BrokerError) -> TxnError {
    match error {
        BrokerError::ShuttingDown
        | BrokerError::Log(LogError::Closed | LogError::NotLeader { .. } | LogError::NotFollower)
        | BrokerError::Controller(ControllerError::NotLeader { .. }) => TxnError::NotCoordinator,
        _ => TxnError::CoordinatorUnavailable,
    }
}

/// The same for a state record that did not reach the ISR.
fn state_replication_error(error: ReplicationError) -> TxnError {
    match error {
        ReplicationError::NotLeader | ReplicationError::NotAReplica { .. } => {
            TxnError::NotCoordinator
        }
        ReplicationError::NotEnoughReplicasAfterAppend { .. } => TxnError::CoordinatorUnavailable,
    }
}

impl TransactionCoordinator {
    /// One change of an id's state: `decide` looks at the current state (under the lock); a
    /// new state is appended to the id's partition, and taken once its replicas hold it.
    pub(super) async fn transition<T>(
        &self,
        services: &TxnServices<'_>,
        transactional_id: &str,
        decide: impl FnOnce(Option<&TxnMetadata>, i64) -> Result<Step<T>, TxnError>,
    ) -> Result<T, TxnError> {
        let partition = self.partition_of(services.topics, transactional_id);
        let (pending, write, txn, answer) = {
            let mut state = self.lock();
            let coordinator_epoch = self.coordinator_epoch(&state, partition)?;
            if state.pending.contains(transactional_id) {
                return Err(TxnError::Concurrent);
            }
            let now_ms = self.clock.now_ms();
            let (txn, answer) = match decide(state.transactions.get(transactional_id), now_ms)? {
                Step::Answer(answer) => return Ok(answer),
                Step::Write(txn, answer) => (txn, answer),
            };
            let write = self.append_record(services.topics, transactional_id, Some(&txn))?;
            let pending =
                self.mark_pending(&mut state, transactional_id, partition, coordinator_epoch);
            (pending, write, txn, answer)
        };
        self.replicated(&write).await?;
        pending.install(Some(txn))?;
        Ok(answer)
    }

    /// Marks an id pending (under the state lock) until the returned guard installs or drops.
    pub(super) fn mark_pending(
        &self,
        state: &mut CoordinatorState,
        transactional_id: &str,
        partition: i32,
        coordinator_epoch: i32,
    ) -> PendingChange<'_> {
        state.pending.insert(transactional_id.to_string());
        PendingChange {
            coordinator: self,
            id: transactional_id.to_string(),
            partition,
            coordinator_epoch,
            done: false,
        }
    }

    /// Appends the id's record (`None`: a tombstone) to its `__transaction_state` partition.
    pub(super) fn append_record(
        &self,
        topics: &TopicRegistry,
        transactional_id: &str,
        txn: Option<&TxnMetadata>,
    ) -> Result<StateWrite, TxnError> {
        let failed = |error: BrokerError| {
            tracing::warn!(transactional_id, %error, "cannot persist transaction state");
            state_write_error(&error)
        };
        let topic = self.state_topic(topics).map_err(failed)?;
        let index = self.partition_of(topics, transactional_id);
        let partition = topics
            .partition(TRANSACTION_STATE_TOPIC, index)
            .map_err(failed)?;
        let min_insync_replicas = topic.config.min_insync_replicas;
        if self.in_cluster() {
            if let Err(error) = partition.check_min_insync(min_insync_replicas) {
                tracing::warn!(transactional_id, %error, "cannot persist transaction state");
                return Err(TxnError::CoordinatorUnavailable);
            }
        }
        let record = (
            records::encode_key(transactional_id),
            txn.map(records::encode_value),
        );
        let batch =
            internal::key_value_batch(vec![record], None, self.clock.now_ms()).map_err(failed)?;
        let info = partition
            .append(batch)
            .map_err(|error| failed(error.into()))?;
        Ok(StateWrite {
            partition,
            last_offset: info.last_offset,
            min_insync_replicas,
        })
    }

    /// Waits until the state partition's in-sync replicas hold a record (cluster mode).
    pub(super) async fn replicated(&self, write: &StateWrite) -> Result<(), TxnError> {
        if !self.in_cluster() {
            return Ok(());
        }
        let wait = write
            .partition
            .wait_replicated(write.last_offset, write.min_insync_replicas);
        match tokio::time::timeout(MARKER_WRITE_TIMEOUT, wait).await {
            Ok(result) => result.map_err(state_replication_error),
            Err(_) => Err(TxnError::CoordinatorUnavailable),
        }
    }
}
