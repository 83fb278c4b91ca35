//! The log of one partition: an ordered set of segments, the last of which is active.
//!
//! Offsets: `log_start_offset` ≤ first retained offset; `log_end_offset` is the next offset to be
//! assigned. The log itself knows nothing of high watermarks or leaders; `partition` does.
//!
//! Durability: appends go to the OS page cache. `flush_plan`/`mark_flushed` let a caller fsync
//! outside the lock (group commit); `recovery_point` is the offset below which everything is
//! known flushed, persisted so that recovery after a crash rescans only what may be torn.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::config::LogConfig;
use crate::error::LogError;
use crate::log::aborted_index::{AbortedIndex, AbortedTxn};
use crate::log::batch::{self, BatchHeader, BatchIter};
use crate::log::compression::decompress_bounded;
use crate::log::control::{self, MarkerKind};
use crate::log::index::write_file_synced;
use crate::log::leader_epochs::LeaderEpochCache;
use crate::log::segment::{read_file_at, sync_dir, Segment};
use crate::producer::snapshot;
use crate::producer::state::{ProducerStateManager, SequenceCheck};

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
        fs::create_dir_all(dir).map_err(|e| LogError::io(dir, e))?;
        crate::log::compaction::swap::recover(dir)?;
        let mut bases = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| LogError::io(dir, e))? {
            let entry = entry.map_err(|e| LogError::io(dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") {
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
        };
        log.load_segments(&bases, clean_shutdown, now_ms)?;
        if log.segments.is_empty() {
            let base = saved_log_start.unwrap_or(0);
            log.segments
                .insert(base, Segment::create(dir, base, now_ms)?);
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

    /// The saved leader epoch cache, fitted to the recovered log; rebuilt from the batches when
    /// missing (a log from before clusters) or unreadable.
    fn load_leader_epochs(&mut self) -> Result<(), LogError> {
        let loaded = match LeaderEpochCache::load(&self.dir) {
            Ok(loaded) => loaded,
            Err(error) => {
                tracing::warn!(%error, "rebuilding the leader epoch cache from the log");
                None
            }
        };
        let (mut epochs, mut changed) = match loaded {
            Some(epochs) => (epochs, false),
            None => (self.scan_leader_epochs()?, true),
        };
        changed |= epochs.truncate_from_end(self.log_end_offset());
        changed |= epochs.truncate_from_start(self.log_start_offset);
        if changed {
            epochs.persist()?;
        }
        self.epochs = epochs;
        Ok(())
    }

    fn scan_leader_epochs(&self) -> Result<LeaderEpochCache, LogError> {
        let mut epochs = LeaderEpochCache::empty(&self.dir);
        for segment in self.segments.values() {
            segment.scan(0, segment.size(), false, |_, header, _| {
                epochs.assign(header.partition_leader_epoch, header.base_offset);
                std::ops::ControlFlow::Continue(())
            })?;
        }
        Ok(epochs)
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

    fn load_segments(
        &mut self,
        bases: &[i64],
        clean_shutdown: bool,
        now_ms: i64,
    ) -> Result<(), LogError> {
        let interval = self.config.index_interval_bytes;
        let mut index = 0;
        while index < bases.len() {
            let base = bases[index];
            let next_base = bases.get(index + 1).copied();
            let is_last = next_base.is_none();
            let must_scan =
                !clean_shutdown && next_base.is_none_or(|next| next > self.recovery_point);
            if must_scan || is_last {
                let (mut segment, cut) = Segment::recover(&self.dir, base, interval, now_ms)?;
                if cut > 0 {
                    tracing::warn!(
                        dir = %self.dir.display(),
                        segment = base,
                        cut_bytes = cut,
                        "recovered segment ends early; removing later segments"
                    );
                    self.segments.insert(base, segment);
                    for &later in &bases[index + 1..] {
                        let (later_segment, _) =
                            Segment::recover(&self.dir, later, interval, now_ms)?;
                        later_segment.delete_files()?;
                    }
                    return Ok(());
                }
                // Compaction may have removed the last records of a sealed segment.
                if let Some(next) = next_base {
                    segment.extend_next_offset(next);
                }
                self.segments.insert(base, segment);
            } else {
                let next = next_base.unwrap_or(base);
                self.segments
                    .insert(base, Segment::open_sealed(&self.dir, base, next, interval)?);
            }
            index += 1;
        }
        Ok(())
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
            return Err(LogError::Batch(crate::error::BatchError::InvalidRecords(
                "control batches are written by the transaction coordinator only".into(),
            )));
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
            let bytes = segment.read_at(position, want.min(available))?;
            let mut end = 0;
            let mut next_offset = fetch_offset;
            for item in BatchIter::new(&bytes) {
                let (at, header) = item?;
                if header.base_offset >= max_offset {
                    break;
                }
                end = at + header.total_bytes();
                next_offset = header.next_offset();
            }
            let mut records = Bytes::from(bytes);
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

    /// Moves the log start offset forward (DeleteRecords); whole segments below it are removed.
    pub fn advance_log_start_offset(&mut self, offset: i64, now_ms: i64) -> Result<i64, LogError> {
        let log_end = self.log_end_offset();
        if offset > log_end {
            return Err(LogError::OffsetOutOfRange {
                requested: offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: log_end,
            });
        }
        if offset > self.log_start_offset {
            self.log_start_offset = offset;
            self.write_log_start_offset()?;
            self.delete_segments_below_log_start(now_ms)?;
        }
        Ok(self.log_start_offset)
    }

    fn delete_segments_below_log_start(&mut self, now_ms: i64) -> Result<(), LogError> {
        let doomed: Vec<i64> = self
            .segments
            .values()
            .filter(|s| {
                s.next_offset() <= self.log_start_offset
                    && s.base_offset != self.active().base_offset
            })
            .map(|s| s.base_offset)
            .collect();
        let whole_log =
            self.active().next_offset() <= self.log_start_offset && !self.active().is_empty();
        if whole_log {
            self.roll(now_ms)?;
            return self.delete_segments_below_log_start(now_ms);
        }
        self.delete_segments(&doomed)
    }

    fn delete_segments(&mut self, bases: &[i64]) -> Result<(), LogError> {
        for base in bases {
            if let Some(segment) = self.segments.remove(base) {
                let path = segment.path().to_path_buf();
                self.unflushed_sealed.retain(|(_, p)| *p != path);
                segment.delete_files()?;
            }
        }
        if let Some(first) = self.segments.keys().next() {
            if *first > self.log_start_offset {
                self.log_start_offset = *first;
                self.write_log_start_offset()?;
            }
        }
        self.aborted.trim_below(self.log_start_offset)
    }

    /// Applies `retention.ms` and `retention.bytes`; returns the number of segments deleted.
    pub fn apply_retention(&mut self, now_ms: i64) -> Result<usize, LogError> {
        if !self.config.delete {
            return Ok(0);
        }
        let mut doomed = Vec::new();
        let retention_ms = self.config.retention_ms;
        let retention_bytes = self.config.retention_bytes;
        let mut total = self.size_bytes() as i64;
        for segment in self.segments.values() {
            if segment.is_empty() {
                break;
            }
            let expired = retention_ms >= 0
                && segment.max_timestamp() >= 0
                && now_ms - segment.max_timestamp() > retention_ms;
            let oversized =
                retention_bytes >= 0 && total - segment.size() as i64 >= retention_bytes;
            if !(expired || oversized) {
                break;
            }
            total -= segment.size() as i64;
            doomed.push(segment.base_offset);
        }
        if doomed.is_empty() {
            return Ok(0);
        }
        if doomed.last() == Some(&self.active().base_offset) {
            self.roll(now_ms)?;
        }
        let count = doomed.len();
        let new_start = self
            .segments
            .range(doomed[count - 1] + 1..)
            .next()
            .map_or(self.log_end_offset(), |(base, _)| *base);
        self.delete_segments(&doomed)?;
        if new_start > self.log_start_offset {
            self.log_start_offset = new_start;
            self.write_log_start_offset()?;
        }
        Ok(count)
    }

    /// Removes every batch at or after `offset` (recovery, followers, tests).
    pub fn truncate_to(&mut self, offset: i64) -> Result<(), LogError> {
        if offset >= self.log_end_offset() {
            // No data goes, but epochs begun at or after `offset` with nothing written do.
            if self.epochs.truncate_from_end(offset) {
                self.epochs.persist()?;
            }
            return Ok(());
        }
        let offset = offset.max(self.log_start_offset);
        let doomed: Vec<i64> = self.segments.range(offset + 1..).map(|(b, _)| *b).collect();
        let keep_one = doomed.len() == self.segments.len();
        let doomed: Vec<i64> = if keep_one {
            doomed[1..].to_vec()
        } else {
            doomed
        };
        for base in &doomed {
            if let Some(segment) = self.segments.remove(base) {
                let path = segment.path().to_path_buf();
                self.unflushed_sealed.retain(|(_, p)| *p != path);
                segment.delete_files()?;
            }
        }
        let interval = self.config.index_interval_bytes;
        self.active_mut().truncate_to(offset, interval)?;
        // Whole batches go: the log may now end before `offset`, even before the log start.
        let log_end = self.log_end_offset();
        self.recovery_point = self.recovery_point.min(log_end);
        if self.first_dirty_offset > log_end {
            self.set_first_dirty_offset(log_end)?;
        }
        self.aborted.truncate_to(log_end)?;
        if self.epochs.truncate_from_end(log_end) {
            self.epochs.persist()?;
        }
        self.rebuild_producer_state(self.last_flush_ms)?;
        if self.log_start_offset > log_end {
            self.log_start_offset = log_end;
            self.write_log_start_offset()?;
        }
        Ok(())
    }

    /// Drops every batch and starts the log empty at `offset`: a follower whose leader's log
    /// now starts past this log's end (retention ran while it was away) cannot continue it.
    pub fn reset_to(&mut self, offset: i64, now_ms: i64) -> Result<(), LogError> {
        let bases: Vec<i64> = self.segments.keys().copied().collect();
        for base in bases {
            if let Some(segment) = self.segments.remove(&base) {
                segment.delete_files()?;
            }
        }
        self.unflushed_sealed.clear();
        for snapshot_offset in snapshot::list(&self.dir)? {
            snapshot::remove(&self.dir, snapshot_offset)?;
        }
        self.segments
            .insert(offset, Segment::create(&self.dir, offset, now_ms)?);
        self.epochs = LeaderEpochCache::empty(&self.dir);
        self.epochs.persist()?;
        self.log_start_offset = offset;
        self.write_log_start_offset()?;
        self.recovery_point = offset;
        self.checkpoint_recovery_point()?;
        self.set_first_dirty_offset(offset)?;
        self.aborted.trim_below(offset)?;
        self.producers = ProducerStateManager::default();
        self.unflushed_messages = 0;
        Ok(())
    }

    /// Idempotent producers' state (for DescribeProducers and tests).
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producers
    }

    /// Forgets producers idle for `expiration_ms` (`producer.id.expiration.ms`).
    pub fn expire_producers(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        self.producers.expire(now_ms, expiration_ms)
    }

    /// Producer state = the newest snapshot not beyond the log end + the batches after it.
    fn rebuild_producer_state(&mut self, now_ms: i64) -> Result<(), LogError> {
        let log_end = self.log_end_offset();
        let (from, producers) = snapshot::load_latest(&self.dir, log_end)?.unwrap_or_default();
        let mut state = ProducerStateManager::new(producers);
        let aborted = &mut self.aborted;
        for segment in self.segments.values() {
            if segment.next_offset() <= from {
                continue;
            }
            let mut failure = None;
            let stop = segment.scan(0, segment.size(), false, |position, header, _| {
                if header.base_offset < from {
                    return std::ops::ControlFlow::Continue(());
                }
                if !header.is_control() {
                    state.record(header, now_ms);
                    return std::ops::ControlFlow::Continue(());
                }
                let replayed = segment
                    .read_at(position, header.total_bytes())
                    .and_then(|bytes| Ok(control::parse_marker(&bytes, header)?))
                    .and_then(|marker| {
                        let Some((kind, coordinator_epoch)) = marker else {
                            return Ok(());
                        };
                        apply_marker(&mut state, aborted, header, kind, coordinator_epoch, now_ms)
                    });
                match replayed {
                    Ok(()) => std::ops::ControlFlow::Continue(()),
                    Err(error) => {
                        failure = Some(error);
                        std::ops::ControlFlow::Break(crate::error::BatchError::InvalidLength(0))
                    }
                }
            })?;
            if let Some(error) = failure {
                return Err(error);
            }
            if let Some(stop) = stop {
                return Err(LogError::Batch(stop.error));
            }
        }
        self.producers = state;
        Ok(())
    }

    /// Compaction: the offset below which the log was cleaned.
    pub fn first_dirty_offset(&self) -> i64 {
        self.first_dirty_offset
    }

    pub(crate) fn set_first_dirty_offset(&mut self, offset: i64) -> Result<(), LogError> {
        self.first_dirty_offset = offset;
        let path = self.dir.join(CLEANER_CHECKPOINT_FILE);
        write_file_synced(&path, offset.to_string().as_bytes()).map_err(|e| LogError::io(&path, e))
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
                segment.delete_files()?;
            }
        }
        Ok(())
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
        write_file_synced(&path, high_watermark.to_string().as_bytes())
            .map_err(|e| LogError::io(&path, e))
    }

    pub fn checkpoint_recovery_point(&self) -> Result<(), LogError> {
        let path = self.dir.join(RECOVERY_POINT_FILE);
        write_file_synced(&path, self.recovery_point.to_string().as_bytes())
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
        write_file_synced(&path, self.log_start_offset.to_string().as_bytes())
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

fn read_offset_file(path: &Path) -> Option<i64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::test_support::encode_batch;
    use kafka_protocol::records::Compression;

    fn open(dir: &Path, config: LogConfig) -> PartitionLog {
        PartitionLog::open(dir, config, false, 0).unwrap()
    }

    #[test]
    fn leader_epochs_follow_appends_truncation_and_a_lost_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), LogConfig::default());
        let batch = || encode_batch(&[b"a", b"b"], Compression::None);
        log.append(batch(), 0, 0).unwrap();
        log.append(batch(), 0, 0).unwrap();
        log.begin_leader_epoch(3).unwrap();
        log.append(batch(), 3, 0).unwrap();
        assert_eq!(log.end_offset_for_epoch(0), (0, 4));
        assert_eq!(log.end_offset_for_epoch(2), (0, 4));
        assert_eq!(log.end_offset_for_epoch(3), (3, 6));
        log.close(0).unwrap();
        drop(log);
        // A log written before the cache existed: rebuilt from the batches' epochs.
        fs::remove_file(
            dir.path()
                .join(crate::log::leader_epochs::LEADER_EPOCH_FILE),
        )
        .unwrap();
        let mut log = open(dir.path(), LogConfig::default());
        assert_eq!(log.end_offset_for_epoch(0), (0, 4));
        assert_eq!(log.latest_epoch(), Some(3));
        log.truncate_to(4).unwrap();
        assert_eq!(log.latest_epoch(), Some(0));
        assert_eq!(log.end_offset_for_epoch(0), (0, 4));
        log.advance_log_start_offset(2, 0).unwrap();
        drop(log);
        let log = open(dir.path(), LogConfig::default());
        assert_eq!(log.latest_epoch(), Some(0));
        assert_eq!(log.end_offset_for_epoch(3), (-1, -1));
    }

    #[test]
    fn reset_starts_an_empty_log_at_the_given_offset() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), LogConfig::default());
        log.append(encode_batch(&[b"a", b"b"], Compression::None), 1, 0)
            .unwrap();
        log.reset_to(100, 0).unwrap();
        assert_eq!((log.log_start_offset(), log.log_end_offset()), (100, 100));
        assert_eq!(log.latest_epoch(), None);
        log.append(encode_batch(&[b"c"], Compression::None), 2, 0)
            .unwrap();
        drop(log);
        let log = open(dir.path(), LogConfig::default());
        assert_eq!((log.log_start_offset(), log.log_end_offset()), (100, 101));
        assert_eq!(log.end_offset_for_epoch(2), (2, 101));
        assert_eq!(log.read(100, 1 << 20, 101, true).unwrap().next_offset, 101);
    }

    #[test]
    fn segment_ms_rolls_on_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_ms: 1000,
            ..LogConfig::default()
        };
        let mut log = open(dir.path(), config);
        log.append(encode_batch(&[b"a"], Compression::None), 0, 0)
            .unwrap();
        log.append(encode_batch(&[b"b"], Compression::None), 0, 999)
            .unwrap();
        assert_eq!(log.segment_count(), 1);
        log.append(encode_batch(&[b"c"], Compression::None), 0, 1000)
            .unwrap();
        assert_eq!(log.segment_count(), 2);
        assert_eq!(log.log_end_offset(), 3);
    }

    #[test]
    fn flush_messages_and_flush_ms_make_a_flush_due() {
        let dir = tempfile::tempdir().unwrap();
        let by_count = LogConfig {
            flush_messages: 3,
            ..LogConfig::default()
        };
        let mut log = open(dir.path(), by_count);
        log.append(encode_batch(&[b"a", b"b"], Compression::None), 0, 0)
            .unwrap();
        assert!(!log.flush_due(0));
        log.append(encode_batch(&[b"c"], Compression::None), 0, 0)
            .unwrap();
        assert!(log.flush_due(0));
        let plan = log.flush_plan();
        log.mark_flushed(&plan, 0);
        assert!(!log.flush_due(0));

        let dir = tempfile::tempdir().unwrap();
        let by_time = LogConfig {
            flush_ms: 1000,
            ..LogConfig::default()
        };
        let mut log = open(dir.path(), by_time);
        log.append(encode_batch(&[b"a"], Compression::None), 0, 0)
            .unwrap();
        assert!(!log.flush_due(999));
        assert!(log.flush_due(1000));
        let plan = log.flush_plan();
        log.mark_flushed(&plan, 1000);
        assert!(!log.flush_due(5000), "nothing new to flush");
    }

    #[test]
    fn log_append_time_restamps_and_keeps_the_crc_valid() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            log_append_time: true,
            ..LogConfig::default()
        };
        let mut log = open(dir.path(), config);
        let info = log
            .append(encode_batch(&[b"a", b"b"], Compression::Zstd), 7, 123_456)
            .unwrap();
        assert_eq!(info.log_append_time_ms, 123_456);
        let (header, bytes) = log.read_all_batches().unwrap().remove(0);
        assert_eq!(header.max_timestamp, 123_456);
        assert_eq!(header.partition_leader_epoch, 7);
        assert!(header.is_log_append_time());
        batch::verify_crc(&bytes, &header).unwrap();
    }

    #[test]
    fn idempotent_retries_are_answered_with_the_original_offsets_across_restarts() {
        use crate::log::test_support::encode_idempotent_batch;
        use crate::producer::ProducerError;
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig {
            segment_bytes: 200,
            ..LogConfig::default()
        };
        let mut log = open(dir.path(), config.clone());
        let batch =
            |first: i32| encode_idempotent_batch(&[b"aaaaaaaaaa", b"bbbbbbbbbb"], 77, 0, first);
        let mut firsts = Vec::new();
        for i in 0..6 {
            let info = log.append(batch(i * 2), 0, 0).unwrap();
            assert!(!info.duplicate);
            firsts.push(info.base_offset);
        }
        assert!(log.segment_count() > 2, "rolled: snapshots were written");
        let retry = log.append(batch(8), 0, 0).unwrap();
        assert!(retry.duplicate);
        assert_eq!(
            (retry.base_offset, retry.last_offset),
            (firsts[4], firsts[4] + 1)
        );
        assert_eq!(log.log_end_offset(), 12, "nothing appended for the retry");
        let gap = log.append(batch(20), 0, 0).unwrap_err();
        assert!(
            matches!(
                gap,
                LogError::Producer(ProducerError::OutOfOrderSequence { expected: 12, .. })
            ),
            "{gap}"
        );

        // A crash (no close): the newest roll snapshot plus the replayed tail give the same state.
        let before = log.producer_state().clone();
        drop(log);
        let mut log = open(dir.path(), config.clone());
        assert_eq!(log.producer_state(), &before);
        assert!(log.append(batch(10), 0, 0).unwrap().duplicate);
        // A clean shutdown: the state comes from the snapshot at the log end.
        log.close(0).unwrap();
        drop(log);
        let mut log = PartitionLog::open(dir.path(), config.clone(), true, 0).unwrap();
        assert_eq!(log.producer_state(), &before);
        assert_eq!(log.append(batch(12), 0, 0).unwrap().base_offset, 12);
        // Without any snapshot the whole log is replayed.
        for offset in snapshot::list(dir.path()).unwrap() {
            snapshot::remove(dir.path(), offset).unwrap();
        }
        drop(log);
        let mut log = open(dir.path(), config);
        assert!(log.append(batch(12), 0, 0).unwrap().duplicate);
        // Truncation forgets what it removed: the producer may write those sequences again.
        log.truncate_to(12).unwrap();
        let again = log.append(batch(12), 0, 0).unwrap();
        assert!(!again.duplicate);
        assert_eq!(again.base_offset, 12);
    }
}
