//! A partition's replication role and what changes with it (cluster mode).
//!
//! - `Alone`: a broker running without a cluster leads everything; the high watermark is the
//!   log end offset.
//! - `Leader`: [`LeaderReplicas`] tracks the followers' fetch positions; the high watermark is
//!   the smallest log end offset over the (maximal) ISR. Producers with `acks=all` wait on it.
//! - `Follower`: the log grows only by copying the leader's batches as they are (offsets and
//!   leader epochs kept); the high watermark is the leader's, capped at the local log end.
//!
//! Appends check the role under its lock, so nothing is appended as leader once this replica
//! has become a follower (lock order: role, then log).

use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::log::batch::BatchIter;
use crate::log::error::LogError;
use crate::partition::leader_replicas::{IsrProposal, LeaderReplicas, NotEnoughReplicas};
use crate::partition::{Partition, LEADER_IS_LOCAL};

/// Why a leader-side replication step was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReplicationError {
    #[error("this replica does not lead the partition")]
    NotLeader,
    #[error("broker {replica_id} is not a replica of the partition")]
    NotAReplica { replica_id: i32 },
    #[error("the ISR shrank to {isr_size}, below min.insync.replicas {min_insync_replicas}, before the write was replicated")]
    NotEnoughReplicasAfterAppend {
        isr_size: usize,
        min_insync_replicas: usize,
    },
}

pub enum Role {
    Alone,
    Leader(LeaderReplicas),
    Follower,
}

impl Role {
    fn leads(&self) -> bool {
        !matches!(self, Role::Follower)
    }

    fn isr_size(&self) -> usize {
        match self {
            Role::Alone => 1,
            Role::Leader(replicas) => replicas.isr().len(),
            Role::Follower => 0,
        }
    }
}

/// What the metadata says about a partition this broker leads.
#[derive(Debug, Clone)]
pub struct Leadership {
    pub local_id: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub replica_lag_time_max_ms: i64,
}

impl Partition {
    /// Becomes (or stays) leader as `leadership` says. A new leader epoch starts a fresh view
    /// of the followers; the same epoch only brings a new ISR.
    pub fn become_leader(&self, leadership: &Leadership) -> Result<(), LogError> {
        let mut role = self.role();
        let now_ms = self.clock.now_ms();
        let same_epoch = self.is_leader() && self.leader_epoch() == leadership.leader_epoch;
        match &mut *role {
            Role::Leader(replicas) if same_epoch => {
                let log_end = self.log().log_end_offset();
                replicas.isr_committed(leadership.isr.clone(), leadership.partition_epoch, log_end);
            }
            _ => {
                let mut log = self.log();
                log.begin_leader_epoch(leadership.leader_epoch)?;
                let replicas = LeaderReplicas::new(
                    leadership.local_id,
                    leadership.replicas.clone(),
                    leadership.isr.clone(),
                    leadership.partition_epoch,
                    log.log_end_offset(),
                    self.high_watermark(),
                    leadership.replica_lag_time_max_ms,
                    now_ms,
                );
                *role = Role::Leader(replicas);
            }
        }
        self.leader_epoch.store(
            leadership.leader_epoch,
            std::sync::atomic::Ordering::Release,
        );
        self.leader_id
            .store(LEADER_IS_LOCAL, std::sync::atomic::Ordering::Release);
        if let Role::Leader(replicas) = &*role {
            self.publish_high_watermark(replicas.high_watermark());
        }
        Ok(())
    }

    /// Follows broker `leader_id` (`-1`: no leader now) at `leader_epoch`. Producers waiting
    /// for replication here are woken (they will find this replica no longer leads).
    pub fn become_follower(&self, leader_id: i32, leader_epoch: i32) {
        let mut role = self.role();
        *role = Role::Follower;
        self.leader_id
            .store(leader_id, std::sync::atomic::Ordering::Release);
        self.leader_epoch
            .store(leader_epoch, std::sync::atomic::Ordering::Release);
        drop(role);
        self.high_watermark.send_modify(|_| {});
    }

    /// The broker this replica follows, when it follows one.
    pub fn leader_id(&self) -> Option<i32> {
        let leader = self.leader_id.load(std::sync::atomic::Ordering::Acquire);
        (leader != LEADER_IS_LOCAL && leader >= 0).then_some(leader)
    }

    /// Runs `append` on the log if this replica leads, then moves the high watermark.
    pub(super) fn append_as_leader<T>(
        &self,
        append: impl FnOnce(&mut crate::log::PartitionLog, i32) -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        self.health.check()?;
        let mut role = self.role();
        if !role.leads() {
            return Err(LogError::NotLeader {
                leader_epoch: self.leader_epoch(),
            });
        }
        let mut log = self.log();
        let appended = match self.health.injected(super::storage_health::DiskOp::Write) {
            Some(error) => Err(LogError::io(log.dir(), error)),
            None => append(&mut log, self.leader_epoch()),
        };
        let result = self.judge(appended)?;
        let log_end = log.log_end_offset();
        drop(log);
        self.log_end.send_replace(log_end);
        match &mut *role {
            Role::Alone => self.publish_high_watermark(log_end),
            Role::Leader(replicas) => {
                replicas.leader_appended(log_end);
                self.publish_high_watermark(replicas.high_watermark());
            }
            Role::Follower => {}
        }
        Ok(result)
    }

    /// The high watermark moved to `high_watermark` (it only moves back on a follower that
    /// truncated).
    fn publish_high_watermark(&self, high_watermark: i64) {
        self.high_watermark.send_if_modified(|current| {
            let moved = *current != high_watermark;
            *current = high_watermark;
            moved
        });
    }

    /// A follower fetched at `fetch_offset` (it holds everything below). Returns an ISR
    /// expansion to ask the controller for, if the follower earned one.
    pub fn follower_fetched(
        &self,
        replica_id: i32,
        fetch_offset: i64,
    ) -> Result<Option<IsrProposal>, ReplicationError> {
        let mut role = self.role();
        let Role::Leader(replicas) = &mut *role else {
            return Err(ReplicationError::NotLeader);
        };
        if !replicas.is_replica(replica_id) {
            return Err(ReplicationError::NotAReplica { replica_id });
        }
        let log_end = self.log().log_end_offset();
        let now_ms = self.clock.now_ms();
        let proposal = replicas.follower_fetched(replica_id, fetch_offset, log_end, now_ms);
        self.publish_high_watermark(replicas.high_watermark());
        Ok(proposal)
    }

    /// The committed ISR of a partition this replica leads (empty otherwise).
    pub fn isr(&self) -> Vec<i32> {
        match &*self.role() {
            Role::Leader(replicas) => replicas.isr().to_vec(),
            _ => Vec::new(),
        }
    }

    /// How many offsets each follower is behind this leader's log end.
    pub fn follower_lags(&self) -> Vec<(i32, i64)> {
        let role = self.role();
        let Role::Leader(replicas) = &*role else {
            return Vec::new();
        };
        let log_end = self.log().log_end_offset();
        replicas
            .follower_log_ends()
            .map(|(follower, follower_end)| (follower, (log_end - follower_end.max(0)).max(0)))
            .collect()
    }

    /// ISR members that fell behind for the lag time, as a shrink to ask the controller for.
    pub fn check_lagging(&self) -> Option<IsrProposal> {
        let now_ms = self.clock.now_ms();
        match &mut *self.role() {
            Role::Leader(replicas) => replicas.check_lagging(now_ms),
            _ => None,
        }
    }

    /// The controller refused this leader's pending ISR change.
    pub fn isr_proposal_failed(&self) {
        if let Role::Leader(replicas) = &mut *self.role() {
            replicas.proposal_failed();
        }
    }

    /// `acks=all` is refused while fewer than `min_insync_replicas` replicas are in sync.
    pub fn check_min_insync(&self, min_insync_replicas: usize) -> Result<(), NotEnoughReplicas> {
        let isr_size = self.role().isr_size();
        if isr_size < min_insync_replicas {
            return Err(NotEnoughReplicas {
                isr_size,
                min_insync_replicas,
            });
        }
        Ok(())
    }

    /// Waits until every in-sync replica holds `last_offset` (`acks=all`). Fails when this
    /// replica stops leading, or when the ISR has shrunk below `min_insync_replicas` by then.
    pub async fn wait_replicated(
        &self,
        last_offset: i64,
        min_insync_replicas: usize,
    ) -> Result<(), ReplicationError> {
        let mut high_watermark = self.watch_high_watermark();
        loop {
            if !self.is_leader() {
                return Err(ReplicationError::NotLeader);
            }
            if *high_watermark.borrow_and_update() > last_offset {
                let isr_size = self.role().isr_size();
                return match isr_size < min_insync_replicas {
                    true => Err(ReplicationError::NotEnoughReplicasAfterAppend {
                        isr_size,
                        min_insync_replicas,
                    }),
                    false => Ok(()),
                };
            }
            if high_watermark.changed().await.is_err() {
                return Err(ReplicationError::NotLeader);
            }
        }
    }

    /// Appends the leader's batches as they are (a follower's fetch answer at `leader_epoch`),
    /// then takes the leader's high watermark as far as the local log reaches. Returns the new
    /// log end.
    pub fn append_as_follower(
        &self,
        leader_epoch: i32,
        records: &Bytes,
        leader_high_watermark: i64,
    ) -> Result<i64, LogError> {
        self.health.check()?;
        let role = self.role();
        self.check_following(&role, leader_epoch)?;
        let now_ms = self.clock.now_ms();
        let mut log = self.log();
        for batch in BatchIter::new(records) {
            let (position, header) = batch?;
            if header.base_offset < log.log_end_offset() {
                continue; // Already copied (a retried fetch).
            }
            let batch = &records[position..position + header.total_bytes()];
            let copied = match self.health.injected(super::storage_health::DiskOp::Write) {
                Some(error) => Err(LogError::io(log.dir(), error)),
                None => log.append_as_is(batch, now_ms),
            };
            self.judge(copied)?;
        }
        let log_end = log.log_end_offset();
        drop(log);
        drop(role);
        self.log_end.send_replace(log_end);
        self.publish_high_watermark(leader_high_watermark.min(log_end));
        Ok(log_end)
    }

    /// Copying is only for a follower still at the leader epoch the copy was asked at (a late
    /// answer from a former leader must not land).
    fn check_following(&self, role: &Role, leader_epoch: i32) -> Result<(), LogError> {
        if role.leads() || self.leader_epoch() != leader_epoch {
            return Err(LogError::NotFollower);
        }
        Ok(())
    }

    /// Cuts the log at `offset` (a follower dropping what its new leader does not have).
    pub fn truncate_as_follower(&self, leader_epoch: i32, offset: i64) -> Result<i64, LogError> {
        let role = self.role();
        self.check_following(&role, leader_epoch)?;
        let mut log = self.log();
        log.truncate_to(offset)?;
        let log_end = log.log_end_offset();
        drop(log);
        drop(role);
        self.log_end.send_replace(log_end);
        if self.high_watermark() > log_end {
            self.publish_high_watermark(log_end);
        }
        Ok(log_end)
    }

    /// Empties the log to start at `offset` (a follower behind its leader's log start).
    pub fn reset_as_follower(&self, leader_epoch: i32, offset: i64) -> Result<(), LogError> {
        let role = self.role();
        self.check_following(&role, leader_epoch)?;
        let now_ms = self.clock.now_ms();
        self.log().reset_to(offset, now_ms)?;
        drop(role);
        self.log_end.send_replace(offset);
        self.publish_high_watermark(offset);
        Ok(())
    }

    /// Writes the high watermark to the partition's checkpoint file if it moved since the last
    /// write, so a restarted replica knows how far its log was committed.
    pub fn checkpoint_high_watermark(&self) -> Result<(), LogError> {
        let high_watermark = self.high_watermark();
        if self.checkpointed_high_watermark.load(Ordering::Acquire) == high_watermark {
            return Ok(());
        }
        self.log().checkpoint_high_watermark(high_watermark)?;
        self.checkpointed_high_watermark
            .store(high_watermark, Ordering::Release);
        Ok(())
    }

    /// The latest leader epoch this log holds data of.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.log().latest_epoch()
    }

    /// Where leader epoch `epoch` ends here: `(epoch found, end offset)` (OffsetForLeaderEpoch).
    /// A leader's current epoch ends at its log end, even before anything was written in it.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        let log = self.log();
        if self.is_leader() && epoch == self.leader_epoch() {
            return (epoch, log.log_end_offset());
        }
        log.end_offset_for_epoch(epoch)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use std::path::Path;

    use super::*;
    use crate::clock::ManualClock;
    use crate::config::LogConfig;
    use crate::log::test_support::encode_batch;
    use crate::log::PartitionLog;
    use kafka_protocol::records::Compression;

    fn replica(dir: &Path) -> Partition {
        let log = PartitionLog::open(dir, LogConfig::default(), false, 0).unwrap();
        Partition::new_replica("t".into(), 0, log, Arc::new(ManualClock::new(0)))
    }

    fn leadership(isr: Vec<i32>) -> Leadership {
        Leadership {
            local_id: 1,
            leader_epoch: 3,
            partition_epoch: 0,
            replicas: vec![1, 2],
            isr,
            replica_lag_time_max_ms: 30_000,
        }
    }

    #[test]
    fn a_restarted_replica_starts_from_its_checkpointed_high_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let partition = replica(dir.path());
        assert_eq!(partition.high_watermark(), 0);
        partition.become_leader(&leadership(vec![1, 2])).unwrap();
        for _ in 0..3 {
            partition
                .append(encode_batch(&[b"a"], Compression::None))
                .unwrap();
        }
        assert_eq!(
            partition.high_watermark(),
            0,
            "the follower holds nothing yet"
        );
        partition.follower_fetched(2, 2).unwrap();
        assert_eq!(partition.high_watermark(), 2);
        partition.checkpoint_high_watermark().unwrap();
        drop(partition);
        let restarted = replica(dir.path());
        assert_eq!(restarted.high_watermark(), 2);
        assert!(!restarted.is_leader());
    }

    #[test]
    fn acks_all_needs_min_insync_replicas_and_waits_for_the_isr() {
        let dir = tempfile::tempdir().unwrap();
        let partition = Arc::new(replica(dir.path()));
        partition.become_leader(&leadership(vec![1])).unwrap();
        assert!(partition.check_min_insync(2).is_err());
        partition.become_leader(&leadership(vec![1, 2])).unwrap();
        assert!(partition.check_min_insync(2).is_ok());
        let info = partition
            .append(encode_batch(&[b"a"], Compression::None))
            .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let waiting = {
                let partition = Arc::clone(&partition);
                tokio::spawn(async move { partition.wait_replicated(info.last_offset, 2).await })
            };
            tokio::task::yield_now().await;
            assert!(
                !waiting.is_finished(),
                "acknowledged before the follower copied"
            );
            partition.follower_fetched(2, info.last_offset + 1).unwrap();
            assert_eq!(waiting.await.unwrap(), Ok(()));
            // Leadership lost while waiting: the producer is told.
            let info = partition
                .append(encode_batch(&[b"b"], Compression::None))
                .unwrap();
            let waiting = {
                let partition = Arc::clone(&partition);
                tokio::spawn(async move { partition.wait_replicated(info.last_offset, 2).await })
            };
            tokio::task::yield_now().await;
            partition.become_follower(2, 4);
            assert_eq!(waiting.await.unwrap(), Err(ReplicationError::NotLeader));
        });
    }
}
