//! The log of one partition: an ordered set of segments, the last of which is active.
//!
//! Offsets: `log_start_offset` ≤ first retained offset; `log_end_offset` is the next offset to be
//! assigned. The log itself knows nothing of high watermarks or leaders; `partition` does.
//!
//! Durability: appends go to the OS page cache. `flush_plan`/`mark_flushed` let a caller fsync
//! outside the lock (group commit); `recovery_point` is the offset below which everything is
//! known flushed, persisted so that recovery after a crash rescans only what may be torn.
//!
//! Here: opening, appends (as leader, from a coordinator, as a follower, markers), reads and
//! timestamp lookups, rolling, flush planning, checkpoints and the cleaner's view of the
//! segments; `recovery` (segments, leader epochs, producer state on open), `retention` (log
//! start, retention, truncation, reset) and `retired` (removed segments' files kept for
//! `file.delete.delay.ms`) are beside it.

mod recovery;
mod retention;
pub mod retired;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::config::LogConfig;
use crate::durable_file;
use crate::log::aborted_index::{AbortedIndex, AbortedTxn};
use crate::log::batch::{self, BatchHeader, BatchIter};
use crate::log::compression::decompress_bounded;
use crate::log::control::{self, MarkerKind};
use crate::log::error::LogError;
use crate::log::leader_epochs::LeaderEpochCache;
use crate::log::segment::{read_file_at, sync_dir, Segment};
use crate::producer::snapshot;
use crate::producer::state::{ProducerStateManager, SequenceCheck};
use recovery::read_offset_file;
use retired::RetiredFiles;

const LOG_START_OFFSET_FILE: &str = "log-start-offset";
const RECOVERY_POINT_FILE: &str = "recovery-point";
const CLEANER_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";
/// The partition's high watermark as last checkpointed (Kafka keeps one file per log dir,
/// `replication-offset-checkpoint`; here each partition has its own).
const HIGH_WATERMARK_FILE: &str = "high-watermark";

/// Where an appended batch landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    pub base_offset: i64,
    pub last_offset: i64,
    /// The append time when the topic uses LogAppendTime, else -1.
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
    /// A retried idempotent batch already in the log: nothing was appended, the offsets are
    /// those of the original.
    pub duplicate: bool,
}

/// Data read for a fetch: whole batches, possibly none.
#[derive(Debug, Clone, Default)]
pub struct ReadResult {
    pub records: Bytes,
    /// Offset after the last batch returned (equals the fetch offset when nothing was read).
    pub next_offset: i64,
}

/// What must be fsynced to make everything appended so far durable.
pub struct FlushPlan {
    pub files: Vec<(Arc<File>, PathBuf)>,
    pub up_to_offset: i64,
}

pub struct PartitionLog {
    dir: PathBuf,
    config: LogConfig,
    segments: BTreeMap<i64, Segment>,
    log_start_offset: i64,
    /// Sealed segments not yet fsynced.
    unflushed_sealed: Vec<(Arc<File>, PathBuf)>,
    recovery_point: i64,
    unflushed_messages: i64,
    last_flush_ms: i64,
    /// Compaction: everything below was cleaned (see `log::compaction`).
    first_dirty_offset: i64,
    /// Idempotent producers' sequence state and open transactions (see `producer`).
    producers: ProducerStateManager,
    /// Aborted transactions, for read_committed fetches.
    aborted: AbortedIndex,
    /// The first offset of each leader epoch in this log.
    epochs: LeaderEpochCache,
    /// Removed segments' files waiting for `file.delete.delay.ms`.
    retired: RetiredFiles,
}

impl PartitionLog {
    /// Opens (or creates) the log in `dir`. With `clean_shutdown`, only the active segment's tail is
    /// located from its index; otherwise every segment from the recovery point on is scanned and cut
    /// at the first torn or corrupt batch (later segments are then removed).
    pub fn open(
        dir: &Path,
        config: LogConfig,
        clean_shutdown: bool,
        now_ms: i64,
    ) -> Result<Self, LogError> {
        durable_file::create_directory(dir).map_err(|e| LogError::io(dir, e))?;
        crate::log::compaction::swap::recover(dir)?;
        let mut bases = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| LogError::io(dir, e))? {
            let entry = entry.map_err(|e| LogError::io(dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") || retired::is_leftover(&name) {
                let _ = fs::remove_file(entry.path());
                continue;
            }
            if let Some(stem) = name.strip_suffix(".log") {
                if let Ok(base) = stem.parse::<i64>() {
                    bases.push(base);
                }
            }
        }
        bases.sort_unstable();
        let saved_log_start = read_offset_file(&dir.join(LOG_START_OFFSET_FILE));
        let recovery_point = read_offset_file(&dir.join(RECOVERY_POINT_FILE)).unwrap_or(0);
        let mut log = PartitionLog {
            dir: dir.to_path_buf(),
            config,
            segments: BTreeMap::new(),
            log_start_offset: 0,
            unflushed_sealed: Vec::new(),
            recovery_point,
            unflushed_messages: 0,
            last_flush_ms: now_ms,
            first_dirty_offset: read_offset_file(&dir.join(CLEANER_CHECKPOINT_FILE)).unwrap_or(0),
            producers: ProducerStateManager::default(),
            aborted: AbortedIndex::unopened(dir),
            epochs: LeaderEpochCache::empty(dir),
            retired: RetiredFiles::default(),
        };
        log.load_segments(&bases, clean_shutdown, now_ms)?;
        if log.segments.is_empty() {
            let base = saved_log_start.unwrap_or(0);
            log.segments
                .insert(base, Segment::create(dir, base, now_ms)?);
            // The first segment's entry, as a roll syncs each new one's.
            sync_dir(dir)?;
        }
        let first_base = *log.segments.keys().next().unwrap_or(&0);
        let log_end = log.log_end_offset();
        log.log_start_offset = saved_log_start
            .unwrap_or(first_base)
            .max(first_base)
            .min(log_end);
        log.recovery_point = log.recovery_point.min(log_end);
        log.first_dirty_offset = log.first_dirty_offset.min(log_end);
        if saved_log_start.is_some_and(|saved| saved != log.log_start_offset) {
            // Recovery cut the log below the saved start: the saved value no longer holds.
            log.write_log_start_offset()?;
        }
        log.aborted = AbortedIndex::open(dir, log_end)?;
        log.rebuild_producer_state(now_ms)?;
        log.load_leader_epochs()?;
        Ok(log)
    }

    /// Records that data of `epoch` begins at `start_offset`, persisting the cache if it changed.
    fn assign_epoch(&mut self, epoch: i32, start_offset: i64) -> Result<(), LogError> {
        if self.epochs.assign(epoch, start_offset) {
            self.epochs.persist()?;
        }
        Ok(())
    }

    /// This replica leads from now at `epoch`: the epoch begins at the log end (Kafka records
    /// it at election, so followers asking for the previous epoch learn where it ended).
    pub fn begin_leader_epoch(&mut self, epoch: i32) -> Result<(), LogError> {
        let log_end = self.log_end_offset();
        self.assign_epoch(epoch, log_end)
    }

    /// Where `epoch` ends in this log (OffsetForLeaderEpoch): `(epoch found, end offset)`.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.epochs.end_offset_for(epoch, self.log_end_offset())
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.epochs.latest_epoch()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    pub fn set_config(&mut self, config: LogConfig) {
        self.config = config;
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    pub fn log_end_offset(&self) -> i64 {
        self.active().next_offset()
    }

    pub fn size_bytes(&self) -> u64 {
        self.segments.values().map(Segment::size).sum()
    }

    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    fn active(&self) -> &Segment {
        self.segments
            .values()
            .next_back()
            .expect("a log always has an active segment")
    }

    fn active_mut(&mut self) -> &mut Segment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a log always has an active segment")
    }

    /// Appends a validated producer batch, assigning offsets from the log end.
    pub fn append(
        &mut self,
        batch: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        let header = BatchHeader::parse(&batch)?;
        if header.is_control() {
            return Err(LogError::Batch(
                crate::log::error::BatchError::InvalidRecords(
                    "control batches are written by the transaction coordinator only".into(),
                ),
            ));
        }
        if let SequenceCheck::Duplicate(original) = self.producers.check(&header)? {
            return Ok(AppendInfo {
                base_offset: original.first_offset,
                last_offset: original.last_offset,
                log_append_time_ms: -1,
                log_start_offset: self.log_start_offset,
                duplicate: true,
            });
        }
        self.append_unchecked(batch, header, leader_epoch, now_ms)
    }

    /// Appends a batch a coordinator wrote on a producer's behalf (transactional offset commits):
    /// it carries the producer's id and epoch but no sequence, so no sequence rules apply.
    pub fn append_from_coordinator(
        &mut self,
        batch: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        let header = BatchHeader::parse(&batch)?;
        if header.producer_id >= 0 {
            let current = self.producers.get(header.producer_id).map(|e| e.epoch);
            if current.is_some_and(|epoch| header.producer_epoch < epoch) {
                return Err(LogError::Producer(
                    crate::producer::ProducerError::InvalidEpoch {
                        producer_id: header.producer_id,
                        epoch: header.producer_epoch,
                        current_epoch: current.unwrap_or_default(),
                    },
                ));
            }
        }
        self.append_unchecked(batch, header, leader_epoch, now_ms)
    }

    fn append_unchecked(
        &mut self,
        mut batch: BytesMut,
        header: BatchHeader,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        self.maybe_roll(batch.len() as u64, now_ms)?;
        let base_offset = self.log_end_offset();
        let log_append_time = self.config.log_append_time.then_some(now_ms);
        batch::assign_offsets(&mut batch, base_offset, leader_epoch, log_append_time);
        let header = BatchHeader {
            base_offset,
            partition_leader_epoch: leader_epoch,
            max_timestamp: log_append_time.unwrap_or(header.max_timestamp),
            ..header
        };
        self.assign_epoch(leader_epoch, base_offset)?;
        let interval = self.config.index_interval_bytes;
        let eager = self.config.flush_on_ack;
        self.active_mut().append(&batch, &header, interval, eager)?;
        self.unflushed_messages += header.records_count as i64;
        self.producers.record(&header, now_ms);
        Ok(AppendInfo {
            base_offset,
            last_offset: header.last_offset(),
            log_append_time_ms: log_append_time.unwrap_or(-1),
            log_start_offset: self.log_start_offset,
            duplicate: false,
        })
    }

    /// Appends batches whose offsets are already assigned (a follower copying its leader, tests).
    pub fn append_as_is(&mut self, batch: &[u8], now_ms: i64) -> Result<(), LogError> {
        let header = BatchHeader::parse(batch)?;
        batch::verify_crc(batch, &header)?;
        if header.base_offset < self.log_end_offset() {
            return Err(LogError::OffsetOutOfRange {
                requested: header.base_offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.log_end_offset(),
            });
        }
        self.maybe_roll(batch.len() as u64, now_ms)?;
        self.assign_epoch(header.partition_leader_epoch, header.base_offset)?;
        let interval = self.config.index_interval_bytes;
        let eager = self.config.flush_on_ack;
        self.active_mut().append(batch, &header, interval, eager)?;
        self.unflushed_messages += header.records_count as i64;
        match control::parse_marker(batch, &header)? {
            Some((kind, coordinator_epoch)) => {
                let (producers, aborted) = (&mut self.producers, &mut self.aborted);
                apply_marker(producers, aborted, &header, kind, coordinator_epoch, now_ms)?;
            }
            None => self.producers.record(&header, now_ms),
        }
        Ok(())
    }

    /// Writes a transaction marker for `producer_id`, ending its open transaction here; an abort
    /// is indexed for read_committed fetches. The producer's and the coordinator's epochs must
    /// not go back.
    pub fn append_marker(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        kind: MarkerKind,
        coordinator_epoch: i32,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        self.producers
            .check_marker(producer_id, producer_epoch, coordinator_epoch)?;
        let mut batch =
            control::marker_batch(producer_id, producer_epoch, kind, coordinator_epoch, now_ms);
        self.maybe_roll(batch.len() as u64, now_ms)?;
        let base_offset = self.log_end_offset();
        batch::assign_offsets(&mut batch, base_offset, leader_epoch, None);
        let header = BatchHeader::parse(&batch)?;
        self.assign_epoch(leader_epoch, base_offset)?;
        let interval = self.config.index_interval_bytes;
        let eager = self.config.flush_on_ack;
        self.active_mut().append(&batch, &header, interval, eager)?;
        self.unflushed_messages += 1;
        let (producers, aborted) = (&mut self.producers, &mut self.aborted);
        apply_marker(producers, aborted, &header, kind, coordinator_epoch, now_ms)?;
        Ok(AppendInfo {
            base_offset,
            last_offset: base_offset,
            log_append_time_ms: -1,
            log_start_offset: self.log_start_offset,
            duplicate: false,
        })
    }

    /// The first offset of the earliest open transaction: read_committed readers stop before it.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.producers.first_unstable_offset()
    }

    /// Aborted transactions with records in `[from, to)`, for a read_committed fetch.
    pub fn aborted_transactions(&self, from: i64, to: i64) -> Vec<AbortedTxn> {
        self.aborted.overlapping(from, to)
    }

    fn maybe_roll(&mut self, incoming_bytes: u64, now_ms: i64) -> Result<(), LogError> {
        let active = self.active();
        if active.is_empty() {
            return Ok(());
        }
        let full = active.size() + incoming_bytes > self.config.segment_bytes;
        let aged = now_ms - active.created_ms() >= self.config.segment_ms;
        let offsets_fit = self.log_end_offset() - active.base_offset < u32::MAX as i64 - 1;
        if full || aged || !offsets_fit {
            self.roll(now_ms)?;
        }
        Ok(())
    }

    /// Seals the active segment and starts a new one at the log end offset.
    pub fn roll(&mut self, now_ms: i64) -> Result<(), LogError> {
        let new_base = self.log_end_offset();
        if self.active().base_offset == new_base {
            return Ok(());
        }
        let active = self.active_mut();
        active.write_indexes()?;
        let sealed = (active.file(), active.path().to_path_buf());
        self.unflushed_sealed.push(sealed);
        let segment = Segment::create(&self.dir, new_base, now_ms)?;
        self.segments.insert(new_base, segment);
        sync_dir(&self.dir)?;
        snapshot::write(&self.dir, new_base, self.producers.producers())
    }

    /// Reads whole batches starting with the one that holds `fetch_offset`, stopping before
    /// `max_offset` (exclusive, e.g. the high watermark). At most `max_bytes`, except that with
    /// `min_one_batch` the first batch is returned whole even when larger (KIP-74).
    pub fn read(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
        max_offset: i64,
        min_one_batch: bool,
    ) -> Result<ReadResult, LogError> {
        let log_end = self.log_end_offset();
        if fetch_offset < self.log_start_offset || fetch_offset > log_end {
            return Err(LogError::OffsetOutOfRange {
                requested: fetch_offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: log_end,
            });
        }
        let empty = ReadResult {
            records: Bytes::new(),
            next_offset: fetch_offset,
        };
        if fetch_offset >= max_offset {
            return Ok(empty);
        }
        for segment in self
            .segments
            .range(..=fetch_offset)
            .next_back()
            .into_iter()
            .map(|(_, s)| s)
            .chain(self.segments.range(fetch_offset + 1..).map(|(_, s)| s))
        {
            if segment.next_offset() <= fetch_offset {
                continue;
            }
            let Some((position, first)) = segment.find_batch(fetch_offset)? else {
                continue;
            };
            if first.base_offset >= max_offset
                || (!min_one_batch && first.total_bytes() > max_bytes)
            {
                return Ok(empty);
            }
            let want = max_bytes.max(first.total_bytes());
            let available = (segment.size() - position) as usize;
            let mut records = segment.read_shared(position, want.min(available))?;
            let mut end = 0;
            let mut next_offset = fetch_offset;
            for item in BatchIter::new(&records) {
                let (at, header) = item?;
                if header.base_offset >= max_offset {
                    break;
                }
                end = at + header.total_bytes();
                next_offset = header.next_offset();
            }
            records.truncate(end);
            return Ok(ReadResult {
                records,
                next_offset,
            });
        }
        Ok(empty)
    }

    /// Offset of the first record with a timestamp ≥ `timestamp`, with that record's timestamp.
    pub fn offset_for_timestamp(
        &self,
        timestamp: i64,
        max_offset: i64,
        max_decompressed_bytes: usize,
    ) -> Result<Option<(i64, i64)>, LogError> {
        for segment in self.segments.values() {
            if segment.max_timestamp() < timestamp || segment.next_offset() <= self.log_start_offset
            {
                continue;
            }
            let start = segment.time_search_start(timestamp);
            let log_start = self.log_start_offset;
            let found = segment.find_batch_from(start, |header| {
                header.max_timestamp >= timestamp && header.last_offset() >= log_start
            })?;
            let Some((position, header)) = found else {
                continue;
            };
            if header.base_offset >= max_offset {
                return Ok(None);
            }
            let bytes = segment.read_at(position, header.total_bytes())?;
            let records = decode_records(&bytes, &header, max_decompressed_bytes)?;
            let hit = records.into_iter().find(|(offset, record_timestamp)| {
                *record_timestamp >= timestamp && *offset >= log_start && *offset < max_offset
            });
            if let Some(hit) = hit {
                return Ok(Some(hit));
            }
        }
        Ok(None)
    }

    /// Offset and timestamp of the record with the largest timestamp (the first such record).
    pub fn max_timestamp_offset(
        &self,
        max_offset: i64,
        max_decompressed_bytes: usize,
    ) -> Result<Option<(i64, i64)>, LogError> {
        let best = self
            .segments
            .values()
            .filter(|s| !s.is_empty() && s.next_offset() > self.log_start_offset)
            .max_by_key(|s| (s.max_timestamp(), std::cmp::Reverse(s.base_offset)));
        let Some(segment) = best else {
            return Ok(None);
        };
        let target = segment.offset_of_max_timestamp();
        let Some((position, header)) = segment.find_batch(target)? else {
            return Ok(None);
        };
        if header.base_offset >= max_offset {
            return Ok(None);
        }
        let bytes = segment.read_at(position, header.total_bytes())?;
        let records = decode_records(&bytes, &header, max_decompressed_bytes)?;
        Ok(records
            .into_iter()
            .find(|(_, record_timestamp)| *record_timestamp == header.max_timestamp))
    }

    /// Idempotent producers' state (for DescribeProducers and tests).
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producers
    }

    /// Forgets producers idle for `expiration_ms` (`producer.id.expiration.ms`).
    pub fn expire_producers(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        self.producers.expire(now_ms, expiration_ms)
    }

    /// Compaction: the offset below which the log was cleaned.
    pub fn first_dirty_offset(&self) -> i64 {
        self.first_dirty_offset
    }

    pub(crate) fn set_first_dirty_offset(&mut self, offset: i64) -> Result<(), LogError> {
        self.first_dirty_offset = offset;
        let path = self.dir.join(CLEANER_CHECKPOINT_FILE);
        durable_file::replace(&path, offset.to_string().as_bytes())
            .map_err(|e| LogError::io(&path, e))
    }

    pub fn active_base_offset(&self) -> i64 {
        self.active().base_offset
    }

    /// Every segment but the active one, in offset order.
    pub(crate) fn sealed_segments(&self) -> impl Iterator<Item = &Segment> {
        let active = self.active_base_offset();
        self.segments.range(..active).map(|(_, segment)| segment)
    }

    pub(crate) fn segment_at(&self, base_offset: i64) -> Option<&Segment> {
        self.segments.get(&base_offset)
    }

    /// The segment whose range holds `offset`.
    pub(crate) fn segment_holding(&self, offset: i64) -> Option<&Segment> {
        self.segments
            .range(..=offset)
            .next_back()
            .map(|(_, segment)| segment)
            .filter(|segment| offset < segment.next_offset())
    }

    /// Removes sealed segments and their files (compaction replaces them).
    pub(crate) fn remove_segments(&mut self, bases: &[i64]) -> Result<(), LogError> {
        for base in bases {
            debug_assert!(
                *base < self.active_base_offset(),
                "never the active segment"
            );
            if let Some(segment) = self.segments.remove(base) {
                let path = segment.path().to_path_buf();
                self.unflushed_sealed.retain(|(_, p)| *p != path);
                self.retired
                    .retire(&segment, self.config.file_delete_delay_ms)?;
            }
        }
        Ok(())
    }

    /// Deletes removed segments' files whose `file.delete.delay.ms` has passed (the background
    /// calls it every second); answers how many segments' files went.
    pub fn delete_retired_files(&mut self, now_ms: i64) -> Result<usize, LogError> {
        self.retired.delete_due(now_ms)
    }

    /// How many removed segments' files wait for `file.delete.delay.ms`.
    pub fn retired_segments_waiting(&self) -> usize {
        self.retired.waiting()
    }

    /// Adds a sealed segment (already durable) in place of removed ones.
    pub(crate) fn insert_segment(&mut self, segment: Segment) {
        debug_assert!(segment.base_offset < self.active_base_offset());
        self.segments.insert(segment.base_offset, segment);
    }

    /// What to fsync to make everything appended durable; see `mark_flushed`.
    pub fn flush_plan(&self) -> FlushPlan {
        let mut files = self.unflushed_sealed.clone();
        let active = self.active();
        files.push((active.file(), active.path().to_path_buf()));
        files.extend(self.aborted.file());
        FlushPlan {
            files,
            up_to_offset: self.log_end_offset(),
        }
    }

    /// Records that a flush plan's files were fsynced.
    pub fn mark_flushed(&mut self, plan: &FlushPlan, now_ms: i64) {
        self.unflushed_sealed
            .retain(|(_, path)| !plan.files.iter().any(|(_, p)| p == path));
        if plan.up_to_offset > self.recovery_point {
            self.recovery_point = plan.up_to_offset;
        }
        self.unflushed_messages = 0;
        self.last_flush_ms = now_ms;
    }

    /// Whether `flush.messages` or `flush.ms` call for a flush now.
    pub fn flush_due(&self, now_ms: i64) -> bool {
        let pending =
            self.recovery_point < self.log_end_offset() || !self.unflushed_sealed.is_empty();
        pending
            && (self.unflushed_messages >= self.config.flush_messages
                || now_ms - self.last_flush_ms >= self.config.flush_ms)
    }

    /// Persists the recovery point (call after a flush, periodically and at shutdown).
    /// The high watermark last checkpointed here, if any.
    pub fn saved_high_watermark(&self) -> Option<i64> {
        read_offset_file(&self.dir.join(HIGH_WATERMARK_FILE))
    }

    /// Writes the high watermark checkpoint (whole, fsynced).
    pub fn checkpoint_high_watermark(&self, high_watermark: i64) -> Result<(), LogError> {
        let path = self.dir.join(HIGH_WATERMARK_FILE);
        durable_file::replace(&path, high_watermark.to_string().as_bytes())
            .map_err(|e| LogError::io(&path, e))
    }

    pub fn checkpoint_recovery_point(&self) -> Result<(), LogError> {
        let path = self.dir.join(RECOVERY_POINT_FILE);
        durable_file::replace(&path, self.recovery_point.to_string().as_bytes())
            .map_err(|e| LogError::io(&path, e))
    }

    /// Flushes everything and writes indexes and checkpoints: the clean-shutdown path.
    pub fn close(&mut self, now_ms: i64) -> Result<(), LogError> {
        let plan = self.flush_plan();
        for (file, path) in &plan.files {
            file.sync_data().map_err(|e| LogError::io(path, e))?;
        }
        self.mark_flushed(&plan, now_ms);
        self.active_mut().write_indexes()?;
        self.checkpoint_recovery_point()?;
        snapshot::write(&self.dir, self.log_end_offset(), self.producers.producers())?;
        self.write_log_start_offset()
    }

    fn write_log_start_offset(&mut self) -> Result<(), LogError> {
        let path = self.dir.join(LOG_START_OFFSET_FILE);
        durable_file::replace(&path, self.log_start_offset.to_string().as_bytes())
            .map_err(|e| LogError::io(&path, e))?;
        if self.epochs.truncate_from_start(self.log_start_offset) {
            self.epochs.persist()?;
        }
        Ok(())
    }

    /// Deletes every file of the log (topic deletion).
    pub fn delete(self) -> Result<(), LogError> {
        fs::remove_dir_all(&self.dir).map_err(|e| LogError::io(&self.dir, e))
    }

    /// Every batch from the start, for loading a coordinator's state from an internal topic. A
    /// segment that cannot be read, or its part from the first batch that does not parse, is
    /// skipped with a warning naming the file and the reason: loading goes on with the rest.
    pub fn batches_for_loading(&self) -> Vec<(BatchHeader, Bytes)> {
        let mut out = Vec::new();
        for segment in self.segments.values() {
            let path = segment.path();
            let bytes = match read_file_at(&segment.file(), path, 0, segment.size() as usize) {
                Ok(bytes) => Bytes::from(bytes),
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "skipping an unreadable segment");
                    continue;
                }
            };
            for item in BatchIter::new(&bytes) {
                match item {
                    Ok((at, header)) => {
                        out.push((header, bytes.slice(at..at + header.total_bytes())))
                    }
                    Err(error) => {
                        tracing::warn!(path = %path.display(), %error, "skipping the rest of a damaged segment");
                        break;
                    }
                }
            }
        }
        out
    }

    /// Reads raw bytes of the log for tests and tools: all batches from the start.
    pub fn read_all_batches(&self) -> Result<Vec<(BatchHeader, Bytes)>, LogError> {
        let mut out = Vec::new();
        for segment in self.segments.values() {
            let bytes = read_file_at(&segment.file(), segment.path(), 0, segment.size() as usize)?;
            let bytes = Bytes::from(bytes);
            for item in BatchIter::new(&bytes) {
                let (at, header) = item?;
                out.push((header, bytes.slice(at..at + header.total_bytes())));
            }
        }
        Ok(out)
    }
}

/// Applies a marker at `header` to the producer state (appended, copied from a leader or
/// replayed) and indexes the transaction it aborted. The entry's last stable offset is the
/// earliest transaction still open, or just past the marker: later aborted transactions start
/// there or after.
fn apply_marker(
    producers: &mut ProducerStateManager,
    aborted: &mut AbortedIndex,
    header: &BatchHeader,
    kind: MarkerKind,
    coordinator_epoch: i32,
    now_ms: i64,
) -> Result<(), LogError> {
    let is_abort = kind == MarkerKind::Abort;
    let completed = producers.complete_txn(header, is_abort, coordinator_epoch, now_ms);
    let Some(txn) = completed.filter(|txn| txn.aborted) else {
        return Ok(());
    };
    let last_stable_offset = producers
        .first_unstable_offset()
        .unwrap_or(txn.last_offset + 1)
        .min(txn.last_offset + 1);
    aborted.append(AbortedTxn {
        producer_id: txn.producer_id,
        first_offset: txn.first_offset,
        last_offset: txn.last_offset,
        last_stable_offset,
    })
}

/// (offset, timestamp) of each record in a batch.
fn decode_records(
    bytes: &[u8],
    header: &BatchHeader,
    max_decompressed_bytes: usize,
) -> Result<Vec<(i64, i64)>, LogError> {
    if header.is_log_append_time() {
        return Ok((header.base_offset..=header.last_offset())
            .map(|offset| (offset, header.max_timestamp))
            .collect());
    }
    let codec = header.compression()?;
    let body = &bytes[batch::BATCH_HEADER_BYTES..];
    let plain;
    let records = match codec {
        crate::log::compression::CompressionCodec::None => body,
        codec => {
            plain = decompress_bounded(codec, body, max_decompressed_bytes)?;
            &plain[..]
        }
    };
    Ok(batch::record_offsets_and_timestamps(records, header)?)
}
