//! A partition as the broker serves it: its log plus the replication-facing state — leader epoch,
//! log start offset, high watermark and log end offset — and the waiters on them.
//!
//! Alone (no cluster), the high watermark follows the log end offset on every append; in a
//! cluster, the role in [`role`] decides it: the ISR's smallest log end on a leader (whose view
//! of its followers is [`leader_replicas`]), the leader's on a follower.
//!
//! Waiting is never a sleep loop: consumers' fetches wait on the `high_watermark` watch channel,
//! followers' fetches on `log_end`; producers that need durability wait on `durable_offset`,
//! advanced by group commits (one fsync covering every append made before it started), and
//! with `acks=all` on the high watermark.

pub mod leader_replicas;
pub mod role;
pub mod storage_health;

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::BytesMut;
use tokio::sync::watch;

use crate::clock::Clock;
use crate::config::LogConfig;
use crate::log::aborted_index::AbortedTxn;
use crate::log::compaction::{self, CleaningStats};
use crate::log::control::MarkerKind;
use crate::log::error::LogError;
use crate::log::{AppendInfo, PartitionLog, ReadResult};
use role::Role;
use storage_health::{DiskOp, StorageHealth};

/// A request's `current_leader_epoch` that is not this replica's (KIP-320).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LeaderEpochMismatch {
    #[error("leader epoch {requested} is newer than this replica's {current}")]
    Unknown { requested: i32, current: i32 },
    #[error("leader epoch {requested} is older than this replica's {current}")]
    Fenced { requested: i32, current: i32 },
}

/// Offsets a fetch or list-offsets answer reports alongside data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionOffsets {
    pub log_start_offset: i64,
    pub high_watermark: i64,
    /// Below the first open transaction and the high watermark: what read_committed sees.
    pub last_stable_offset: i64,
    pub log_end_offset: i64,
}

/// Who leads a partition, as this broker's metadata says (a broker running alone leads all).
pub const LEADER_IS_LOCAL: i32 = i32::MIN;

pub struct Partition {
    pub topic: Arc<str>,
    pub index: i32,
    log: Mutex<PartitionLog>,
    leader_epoch: AtomicI32,
    /// The leader's broker id, or [`LEADER_IS_LOCAL`] while this replica leads.
    leader_id: AtomicI32,
    high_watermark: watch::Sender<i64>,
    log_end: watch::Sender<i64>,
    role: Mutex<Role>,
    /// The high watermark last written to the partition's checkpoint file (-1: none yet).
    checkpointed_high_watermark: AtomicI64,
    durable_offset: watch::Sender<i64>,
    flush_lock: tokio::sync::Mutex<()>,
    health: StorageHealth,
    clock: Arc<dyn Clock>,
}

impl Partition {
    pub fn new(
        topic: Arc<str>,
        index: i32,
        log: PartitionLog,
        leader_epoch: i32,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let log_end = log.log_end_offset();
        Partition {
            topic,
            index,
            log: Mutex::new(log),
            leader_epoch: AtomicI32::new(leader_epoch),
            leader_id: AtomicI32::new(LEADER_IS_LOCAL),
            high_watermark: watch::Sender::new(log_end),
            log_end: watch::Sender::new(log_end),
            role: Mutex::new(Role::Alone),
            checkpointed_high_watermark: AtomicI64::new(-1),
            durable_offset: watch::Sender::new(0),
            flush_lock: tokio::sync::Mutex::new(()),
            health: StorageHealth::default(),
            clock,
        }
    }

    /// The log, locked. Hold it briefly: appends and reads of this partition wait on it.
    pub fn log(&self) -> MutexGuard<'_, PartitionLog> {
        // A panic while holding the lock must not wedge the partition forever; the log's own
        // invariants are re-established by recovery, so take the data as it is.
        self.log
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A replica of a cluster's partition, opened before the metadata says who leads: a
    /// follower of nobody, whose high watermark is the one last checkpointed (records above it
    /// may not be committed; the leader's answers will tell), else the log start.
    pub fn new_replica(
        topic: Arc<str>,
        index: i32,
        log: PartitionLog,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let (log_start, log_end) = (log.log_start_offset(), log.log_end_offset());
        let saved = log.saved_high_watermark();
        let partition = Partition::new(topic, index, log, -1, clock);
        partition.become_follower(-1, -1);
        let high_watermark = saved.map_or(log_start, |saved| saved.clamp(log_start, log_end));
        partition.high_watermark.send_replace(high_watermark);
        partition
    }

    fn role(&self) -> MutexGuard<'_, Role> {
        self.role
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.load(Ordering::Acquire)
    }

    /// KIP-320: a client that knows a newer epoch than ours is ahead of us; an older one is
    /// fenced. A negative epoch (the client knows none) always passes.
    pub fn check_leader_epoch(&self, requested: i32) -> Result<(), LeaderEpochMismatch> {
        let current = self.leader_epoch();
        if requested < 0 || requested == current {
            Ok(())
        } else if requested > current {
            Err(LeaderEpochMismatch::Unknown { requested, current })
        } else {
            Err(LeaderEpochMismatch::Fenced { requested, current })
        }
    }

    /// Whether this replica leads (takes produce, answers consumers).
    pub fn is_leader(&self) -> bool {
        self.leader_id.load(Ordering::Acquire) == LEADER_IS_LOCAL
    }

    pub fn high_watermark(&self) -> i64 {
        *self.high_watermark.borrow()
    }

    /// A receiver that changes whenever the high watermark moves (or the role changes).
    pub fn watch_high_watermark(&self) -> watch::Receiver<i64> {
        self.high_watermark.subscribe()
    }

    /// A receiver that changes whenever the log end moves (followers' fetches wait on it).
    pub fn watch_log_end(&self) -> watch::Receiver<i64> {
        self.log_end.subscribe()
    }

    pub fn offsets(&self) -> PartitionOffsets {
        let log = self.log();
        let high_watermark = self.high_watermark();
        PartitionOffsets {
            log_start_offset: log.log_start_offset(),
            high_watermark,
            last_stable_offset: Self::last_stable_offset_of(&log, high_watermark),
            log_end_offset: log.log_end_offset(),
        }
    }

    /// The last stable offset of `log` (held by the caller) under `high_watermark`.
    pub fn last_stable_offset_of(log: &PartitionLog, high_watermark: i64) -> i64 {
        log.first_unstable_offset()
            .map_or(high_watermark, |first| first.min(high_watermark))
    }

    /// Appends a validated producer batch as leader.
    pub fn append(&self, batch: BytesMut) -> Result<AppendInfo, LogError> {
        let now_ms = self.clock.now_ms();
        self.append_as_leader(|log, leader_epoch| log.append(batch, leader_epoch, now_ms))
    }

    /// Appends a batch a coordinator wrote for a producer (no sequence rules; see the log).
    pub fn append_from_coordinator(&self, batch: BytesMut) -> Result<AppendInfo, LogError> {
        let now_ms = self.clock.now_ms();
        self.append_as_leader(|log, leader_epoch| {
            log.append_from_coordinator(batch, leader_epoch, now_ms)
        })
    }

    /// Reads committed data (below the high watermark).
    pub fn read(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
    ) -> Result<ReadResult, LogError> {
        self.health.check()?;
        let high_watermark = self.high_watermark();
        let read = self
            .log()
            .read(fetch_offset, max_bytes, high_watermark, min_one_batch);
        self.judge(read)
    }

    /// Reads for a follower: everything up to the log end.
    pub fn read_for_follower(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
    ) -> Result<ReadResult, LogError> {
        self.health.check()?;
        let log = self.log();
        let log_end = log.log_end_offset();
        let read = log.read(fetch_offset, max_bytes, log_end, true);
        drop(log);
        self.judge(read)
    }

    /// Reads for a read_committed consumer: below the last stable offset, with the aborted
    /// transactions whose records the data may hold (the consumer drops those records).
    pub fn read_committed(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
        min_one_batch: bool,
    ) -> Result<(ReadResult, Vec<AbortedTxn>), LogError> {
        self.health.check()?;
        let high_watermark = self.high_watermark();
        let log = self.log();
        let last_stable_offset = Self::last_stable_offset_of(&log, high_watermark);
        let read = log.read(fetch_offset, max_bytes, last_stable_offset, min_one_batch);
        let read = self.judge(read)?;
        let aborted = if read.records.is_empty() {
            Vec::new()
        } else {
            log.aborted_transactions(fetch_offset, read.next_offset)
        };
        Ok((read, aborted))
    }

    /// Writes a transaction marker as leader (the transaction coordinator's WriteTxnMarkers).
    pub fn append_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        kind: MarkerKind,
        coordinator_epoch: i32,
    ) -> Result<AppendInfo, LogError> {
        let now_ms = self.clock.now_ms();
        self.append_as_leader(|log, leader_epoch| {
            log.append_marker(
                producer_id,
                producer_epoch,
                kind,
                coordinator_epoch,
                leader_epoch,
                now_ms,
            )
        })
    }

    /// Waits until everything up to and including `offset` is fsynced. Concurrent callers share
    /// fsyncs: whoever takes the flush lock flushes all that was appended by then.
    pub async fn wait_durable(&self, offset: i64) -> Result<(), LogError> {
        if *self.durable_offset.borrow() > offset {
            return Ok(());
        }
        let _guard = self.flush_lock.lock().await;
        if *self.durable_offset.borrow() > offset {
            return Ok(());
        }
        self.flush_now().await
    }

    /// Fsyncs all appended data now (outside the log lock).
    pub async fn flush_now(&self) -> Result<(), LogError> {
        self.health.check()?;
        let plan = self.log().flush_plan();
        let files: Vec<_> = plan.files.clone();
        let injected = self
            .health
            .injected(DiskOp::Sync)
            .and_then(|error| error.raw_os_error());
        let synced = tokio::task::spawn_blocking(move || {
            for (file, path) in &files {
                let result = match injected {
                    Some(errno) => Err(std::io::Error::from_raw_os_error(errno)),
                    None => file.sync_data(),
                };
                result.map_err(|e| LogError::io(path, e))?;
            }
            Ok::<(), LogError>(())
        })
        .await
        .map_err(|_| LogError::Closed)?;
        self.health.judge(synced, &self.name(), true)?;
        let up_to = plan.up_to_offset;
        self.log().mark_flushed(&plan, self.clock.now_ms());
        self.durable_offset.send_if_modified(|durable| {
            let moved = up_to > *durable;
            if moved {
                *durable = up_to;
            }
            moved
        });
        Ok(())
    }

    /// Moves the log start offset (DeleteRecords); returns the new log start offset. As Kafka:
    /// -1 means the high watermark, any other offset must be within [0, high watermark] (one
    /// below the log start offset leaves it where it is).
    pub fn delete_records_before(&self, offset: i64) -> Result<i64, LogError> {
        let now_ms = self.clock.now_ms();
        let high_watermark = self.high_watermark();
        let target = if offset == -1 { high_watermark } else { offset };
        if !(0..=high_watermark).contains(&target) {
            let log = self.log();
            return Err(LogError::OffsetOutOfRange {
                requested: offset,
                log_start_offset: log.log_start_offset(),
                log_end_offset: high_watermark,
            });
        }
        self.log().advance_log_start_offset(target, now_ms)
    }

    pub fn apply_retention(&self) -> Result<usize, LogError> {
        let now_ms = self.clock.now_ms();
        self.log().apply_retention(now_ms)
    }

    /// One compaction pass if the log is compacted and dirty enough: planned and installed under
    /// the log lock, cleaned without it. Blocking (file I/O): run it off the async threads.
    /// Returns the pass's counters when cleaned segments were installed.
    pub fn compact(&self, memory_bytes: usize) -> Result<Option<CleaningStats>, LogError> {
        let now_ms = self.clock.now_ms();
        let Some(plan) = compaction::plan(&self.log(), self.high_watermark(), now_ms)? else {
            return Ok(None);
        };
        if !plan.is_due(now_ms) {
            return Ok(None);
        }
        let Some(outcome) = compaction::clean(&plan, memory_bytes, now_ms)? else {
            return Ok(None);
        };
        let stats = outcome.stats;
        let installed = compaction::install(&mut self.log(), outcome, &|_| false)?;
        Ok(installed.then_some(stats))
    }

    /// The dirty ratio of a compacted log, if it has anything to clean (for picking the dirtiest).
    pub fn dirty_ratio_if_due(&self) -> Result<Option<f64>, LogError> {
        let now_ms = self.clock.now_ms();
        let plan = compaction::plan(&self.log(), self.high_watermark(), now_ms)?;
        Ok(plan.filter(|p| p.is_due(now_ms)).map(|p| p.dirty_ratio()))
    }

    /// Why the partition is offline after a storage failure, if it is (see `storage_health`).
    pub fn offline_reason(&self) -> Option<&str> {
        self.health.failure()
    }

    /// Makes the next writes (`DiskOp::Write`) or fsyncs (`DiskOp::Sync`) of this partition fail
    /// with OS error `errno` (e.g. `libc::EIO` = 5) as if the disk returned it; `None` clears it.
    /// For fault-injection tests.
    pub fn inject_disk_fault(&self, fault: Option<(DiskOp, i32)>) {
        self.health.inject(fault);
    }

    fn name(&self) -> String {
        format!("{}-{}", self.topic, self.index)
    }

    /// Takes the partition offline if `result` is an I/O error other than a full disk.
    fn judge<T>(&self, result: Result<T, LogError>) -> Result<T, LogError> {
        self.health.judge(result, &self.name(), false)
    }

    pub fn set_config(&self, config: LogConfig) {
        self.log().set_config(config);
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }
}

#[cfg(test)]
mod transaction_tests;
