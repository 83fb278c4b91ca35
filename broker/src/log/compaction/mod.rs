//! Log compaction (`cleanup.policy=compact`): keep the latest record of every key.
//!
//! A log is split at its *first dirty offset* (persisted per partition in
//! `cleaner-offset-checkpoint`): below it the log was cleaned before, above it records arrived
//! since. Only sealed segments below the *first uncleanable offset* are touched — never the
//! active segment, nothing at or above the high watermark, nothing younger than
//! `min.compaction.lag.ms`. A log is cleaned when its dirty ratio (dirty bytes / cleanable bytes)
//! reaches `min.cleanable.dirty.ratio`, or when dirty data is older than `max.compaction.lag.ms`.
//!
//! One pass, in three phases:
//! 1. `plan` (under the partition lock): snapshot the cleanable segments.
//! 2. `clean` (no lock; appends and reads go on): read the dirty section into an [`OffsetMap`]
//!    (key → latest offset) bounded by `log.cleaner.dedupe.buffer.size` — when it fills, the pass
//!    covers only what was mapped — then rewrite every cleanable segment from the log start,
//!    grouped up to `segment.bytes`, into `.cleaned` files, keeping a record when no later offset
//!    of its key is known. Tombstones (null values) stay for `delete.retention.ms` after their
//!    segment was last written and only the latest one of a key; records without a key are
//!    dropped, as Kafka's cleaner does. Offsets never change; gaps appear.
//! 3. `install` (under the lock): if the segments are still the ones planned, swap each group in
//!    (see [`swap`] for crash safety) and move the first dirty offset to the end of the map.
//!
//! The last batch of each idempotent producer stays (without records if none survive), so that
//! producer state rebuilt from the log still knows its sequence.
//!
//! Transactions ([`transactions`]): nothing at or after the last stable offset is cleaned,
//! aborted records are neither mapped nor kept, markers are kept.

pub mod offset_map;
pub mod rewrite;
pub mod swap;
pub mod transactions;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::{BrokerConfig, LogConfig, MAX_DECOMPRESSED_BATCH_BYTES};
use crate::log::batch::BatchHeader;
use crate::log::error::{BatchError, LogError};
use crate::log::record::RecordIter;
use crate::log::segment::{scan_file, Segment};
use crate::log::PartitionLog;

pub use offset_map::OffsetMap;
use rewrite::{filter_batch, BatchFate};
pub use swap::SwapStep;
use transactions::AbortedRanges;

/// Broker-wide settings of the cleaner.
#[derive(Debug, Clone, Copy)]
pub struct CleanerSettings {
    pub enabled: bool,
    /// Sleep between passes when no log is dirty enough (`log.cleaner.backoff.ms`).
    pub backoff_ms: u64,
    /// Memory for the offset map (`log.cleaner.dedupe.buffer.size`).
    pub dedupe_buffer_bytes: usize,
}

impl CleanerSettings {
    /// The log cleaner: whether it runs, how long it sleeps when nothing is dirty enough and the
    /// memory its offset map may use.
    pub fn from_config(config: &BrokerConfig) -> Self {
        Self {
            enabled: config.boolean("log.cleaner.enable"),
            backoff_ms: config.long_or("log.cleaner.backoff.ms", 15_000).max(0) as u64,
            dedupe_buffer_bytes: config
                .long_or("log.cleaner.dedupe.buffer.size", 134_217_728)
                .max(1024) as usize,
        }
    }
}

/// Write buffer of a cleaned segment.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// A sealed segment as the cleaner sees it, taken under the partition lock.
#[derive(Clone)]
pub struct SegmentSnapshot {
    pub base_offset: i64,
    pub next_offset: i64,
    pub size: u64,
    pub max_timestamp: i64,
    pub modified_ms: i64,
    file: Arc<File>,
    path: PathBuf,
}

impl SegmentSnapshot {
    fn of(segment: &Segment) -> Result<Self, LogError> {
        Ok(SegmentSnapshot {
            base_offset: segment.base_offset,
            next_offset: segment.next_offset(),
            size: segment.size(),
            max_timestamp: segment.max_timestamp(),
            modified_ms: segment.modified_ms()?,
            file: segment.file(),
            path: segment.path().to_path_buf(),
        })
    }

    /// Calls `visit(header, batch bytes)` for every batch until it returns `Break` or an error.
    /// Corrupt data in the segment is an error.
    fn for_each_batch(
        &self,
        mut visit: impl FnMut(&BatchHeader, &[u8]) -> Result<ControlFlow<()>, LogError>,
    ) -> Result<(), LogError> {
        let mut failure = None;
        let mut stopped = false;
        let scan = scan_file(
            &self.file,
            &self.path,
            0,
            self.size,
            true,
            |_, header, bytes| {
                let bytes = bytes.expect("scanned with bytes");
                match visit(header, bytes) {
                    Ok(ControlFlow::Continue(())) => ControlFlow::Continue(()),
                    Ok(ControlFlow::Break(())) => {
                        stopped = true;
                        ControlFlow::Break(BatchError::InvalidLength(0))
                    }
                    Err(error) => {
                        failure = Some(error);
                        ControlFlow::Break(BatchError::InvalidLength(0))
                    }
                }
            },
        )?;
        match (failure, scan) {
            (Some(error), _) => Err(error),
            (None, Some(stop)) if !stopped => Err(LogError::Batch(stop.error)),
            _ => Ok(()),
        }
    }
}

/// What one pass may clean.
pub struct CleaningPlan {
    pub dir: PathBuf,
    pub config: LogConfig,
    pub first_dirty_offset: i64,
    pub first_uncleanable_offset: i64,
    /// Sealed segments from the log start up to the first uncleanable offset.
    pub segments: Vec<SegmentSnapshot>,
    pub clean_bytes: u64,
    pub dirty_bytes: u64,
    /// Timestamp of the first dirty batch, for `max.compaction.lag.ms`.
    pub first_dirty_timestamp: i64,
    /// Idempotent producers' last batch (its last offset): kept, if need be without records, so
    /// that a rebuilt producer state still knows the producer's sequence (as Kafka does).
    pub producer_last_offsets: HashMap<i64, i64>,
    /// Aborted transactions with records in the cleanable segments.
    pub aborted: AbortedRanges,
}

impl CleaningPlan {
    pub fn dirty_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.dirty_bytes;
        if total == 0 {
            return 0.0;
        }
        self.dirty_bytes as f64 / total as f64
    }

    /// Whether the log should be cleaned now.
    pub fn is_due(&self, now_ms: i64) -> bool {
        if self.dirty_bytes == 0 {
            return false;
        }
        let overdue = self.first_dirty_timestamp >= 0
            && now_ms.saturating_sub(self.first_dirty_timestamp)
                > self.config.max_compaction_lag_ms;
        overdue || self.dirty_ratio() >= self.config.min_cleanable_dirty_ratio
    }
}

/// Snapshots what a pass may clean (call under the partition lock). `None` when the log is not
/// compacted or has nothing sealed and dirty. Only what is below both the high watermark and the
/// last stable offset may be cleaned.
pub fn plan(
    log: &PartitionLog,
    high_watermark: i64,
    now_ms: i64,
) -> Result<Option<CleaningPlan>, LogError> {
    let config = log.config().clone();
    if !config.compact {
        return Ok(None);
    }
    let log_start = log.log_start_offset();
    let first_dirty = log.first_dirty_offset().max(log_start);
    let stable_end = log
        .first_unstable_offset()
        .map_or(high_watermark, |unstable| unstable.min(high_watermark));
    let mut first_uncleanable = log.active_base_offset().min(stable_end);
    let mut segments = Vec::new();
    for segment in log.sealed_segments() {
        let too_young = config.min_compaction_lag_ms > 0
            && segment.base_offset >= first_dirty
            && now_ms.saturating_sub(segment.max_timestamp()) < config.min_compaction_lag_ms;
        if segment.next_offset() > stable_end || too_young {
            first_uncleanable = first_uncleanable.min(segment.base_offset);
            break;
        }
        if segment.next_offset() <= log_start {
            continue;
        }
        segments.push(SegmentSnapshot::of(segment)?);
    }
    let (clean, dirty): (Vec<_>, Vec<_>) =
        segments.iter().partition(|s| s.next_offset <= first_dirty);
    let dirty_bytes: u64 = dirty.iter().map(|s| s.size).sum();
    if dirty_bytes == 0 {
        return Ok(None);
    }
    let first_dirty_timestamp = match log.segment_holding(first_dirty) {
        Some(segment) if config.max_compaction_lag_ms < i64::MAX => segment
            .find_batch(first_dirty)?
            .map_or(-1, |(_, header)| header.max_timestamp),
        _ => -1,
    };
    Ok(Some(CleaningPlan {
        aborted: AbortedRanges::new(&log.aborted_transactions(log_start, first_uncleanable)),
        dir: log.dir().to_path_buf(),
        clean_bytes: clean.iter().map(|s| s.size).sum(),
        dirty_bytes,
        config,
        first_dirty_offset: first_dirty,
        first_uncleanable_offset: first_uncleanable,
        segments,
        first_dirty_timestamp,
        producer_last_offsets: log
            .producer_state()
            .producers()
            .iter()
            .filter_map(|(id, entry)| Some((*id, entry.batches.back()?.last_offset)))
            .collect(),
    }))
}

/// One cleaned file and the old segments it replaces.
#[derive(Debug)]
pub struct CleanedGroup {
    pub base_offset: i64,
    /// Exclusive end: the next segment's base offset.
    pub end_offset: i64,
    /// (base offset, size) of each replaced segment, to check nothing changed meanwhile.
    pub replaced: Vec<(i64, u64)>,
    pub size: u64,
}

/// Counters of one pass.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CleaningStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_removed: u64,
    pub tombstones_removed: u64,
    pub keyless_removed: u64,
}

/// The output of `clean`, to be installed.
#[derive(Debug)]
pub struct CleaningOutcome {
    pub groups: Vec<CleanedGroup>,
    /// Everything below this offset was compared with the map; the next pass starts here.
    pub next_first_dirty_offset: i64,
    pub stats: CleaningStats,
}

/// Phase 2: maps the dirty section and writes cleaned segments. `None` when the map cannot hold
/// even one batch's keys.
pub fn clean(
    plan: &CleaningPlan,
    memory_bytes: usize,
    now_ms: i64,
) -> Result<Option<CleaningOutcome>, LogError> {
    let dirty_keys = count_dirty_records(plan)?;
    let mut map = OffsetMap::new(memory_bytes, dirty_keys);
    let map_end = build_offset_map(plan, &mut map)?;
    if map_end <= plan.first_dirty_offset {
        tracing::warn!(
            dir = %plan.dir.display(),
            memory_bytes,
            "log.cleaner.dedupe.buffer.size is too small for one batch of this log; not cleaning"
        );
        return Ok(None);
    }
    let to_clean: Vec<&SegmentSnapshot> = plan
        .segments
        .iter()
        .filter(|s| s.base_offset < map_end)
        .collect();
    let mut outcome = CleaningOutcome {
        groups: Vec::new(),
        next_first_dirty_offset: map_end,
        stats: CleaningStats::default(),
    };
    for group in group_segments(&to_clean, plan.config.segment_bytes) {
        match write_group(plan, &group, &map, map_end, now_ms, &mut outcome.stats) {
            Ok(cleaned) => outcome.groups.push(cleaned),
            Err(error) => {
                discard(&plan.dir, &outcome.groups);
                let _ = std::fs::remove_file(swap::cleaned_path(&plan.dir, group[0].base_offset));
                return Err(error);
            }
        }
    }
    Ok(Some(outcome))
}

/// Deletes the cleaned files of an outcome that will not be installed.
pub fn discard(dir: &Path, groups: &[CleanedGroup]) {
    for group in groups {
        let _ = std::fs::remove_file(swap::cleaned_path(dir, group.base_offset));
    }
}

fn dirty_segments(plan: &CleaningPlan) -> impl Iterator<Item = &SegmentSnapshot> {
    plan.segments
        .iter()
        .filter(move |s| s.next_offset > plan.first_dirty_offset)
}

/// An upper bound on the keys of the dirty section, to size the map.
fn count_dirty_records(plan: &CleaningPlan) -> Result<usize, LogError> {
    let mut records = 0usize;
    for segment in dirty_segments(plan) {
        segment.for_each_batch(|header, _| {
            if header.last_offset() >= plan.first_dirty_offset && !header.is_control() {
                records += header.records_count.max(0) as usize;
            }
            Ok(ControlFlow::Continue(()))
        })?;
    }
    Ok(records)
}

/// Phase 2a: key → latest offset for the dirty section, until the map is full. Returns the end
/// (exclusive) of the mapped range, always at a batch boundary.
fn build_offset_map(plan: &CleaningPlan, map: &mut OffsetMap) -> Result<i64, LogError> {
    let mut end = plan.first_dirty_offset;
    let mut full = false;
    for segment in dirty_segments(plan) {
        segment.for_each_batch(|header, bytes| {
            if header.last_offset() < plan.first_dirty_offset {
                return Ok(ControlFlow::Continue(()));
            }
            if !header.is_control() && !plan.aborted.holds(header) {
                if !map.has_room_for(header.records_count.max(0) as usize) {
                    full = true;
                    return Ok(ControlFlow::Break(()));
                }
                map_batch(bytes, header, map)?;
            }
            end = header.next_offset();
            Ok(ControlFlow::Continue(()))
        })?;
        if full {
            return Ok(end);
        }
        end = end.max(segment.next_offset);
    }
    Ok(end)
}

fn map_batch(bytes: &[u8], header: &BatchHeader, map: &mut OffsetMap) -> Result<(), BatchError> {
    let codec = header.compression()?;
    let body = &bytes[crate::log::batch::BATCH_HEADER_BYTES..];
    let plain;
    let records = match codec {
        crate::log::compression::CompressionCodec::None => body,
        codec => {
            plain = crate::log::compression::decompress_bounded(
                codec,
                body,
                MAX_DECOMPRESSED_BATCH_BYTES,
            )?;
            &plain[..]
        }
    };
    for record in RecordIter::new(records, header.records_count) {
        let record = record?;
        if let Some(key) = record.key {
            map.put(key, header.base_offset + record.offset_delta);
        }
    }
    Ok(())
}

/// Consecutive segments whose total size fits in one segment and whose offsets fit the index.
fn group_segments<'a>(
    segments: &[&'a SegmentSnapshot],
    segment_bytes: u64,
) -> Vec<Vec<&'a SegmentSnapshot>> {
    let mut groups: Vec<Vec<&SegmentSnapshot>> = Vec::new();
    let mut size = 0;
    for &segment in segments {
        let fits = groups.last().is_some_and(|group| {
            size + segment.size <= segment_bytes
                && segment.next_offset - group[0].base_offset < i32::MAX as i64
        });
        if fits {
            groups.last_mut().expect("checked").push(segment);
            size += segment.size;
        } else {
            groups.push(vec![segment]);
            size = segment.size;
        }
    }
    groups
}

/// Phase 2b: writes the records of `group` that survive into `<base>.cleaned`.
fn write_group(
    plan: &CleaningPlan,
    group: &[&SegmentSnapshot],
    map: &OffsetMap,
    map_end: i64,
    now_ms: i64,
    stats: &mut CleaningStats,
) -> Result<CleanedGroup, LogError> {
    let base_offset = group[0].base_offset;
    let path = swap::cleaned_path(&plan.dir, base_offset);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .map_err(|e| LogError::io(&path, e))?;
    let mut writer = BufWriter::with_capacity(WRITE_BUFFER_BYTES, &file);
    let mut written = 0u64;
    for segment in group {
        let retain_tombstones =
            now_ms.saturating_sub(segment.modified_ms) < plan.config.delete_retention_ms;
        segment.for_each_batch(|header, bytes| {
            let last_of_producer = header.producer_id >= 0
                && plan.producer_last_offsets.get(&header.producer_id)
                    == Some(&header.last_offset());
            let mut fate = if plan.aborted.holds(header) {
                stats.records_removed += header.records_count.max(0) as u64;
                BatchFate::Drop
            } else {
                clean_batch(bytes, header, map, map_end, retain_tombstones, stats)?
            };
            if last_of_producer && fate == BatchFate::Drop {
                fate = BatchFate::Rewrite(rewrite::empty_batch(bytes, header)?);
            }
            let out: &[u8] = match &fate {
                BatchFate::Keep => bytes,
                BatchFate::Drop => return Ok(ControlFlow::Continue(())),
                BatchFate::Rewrite(new) => new,
            };
            written += out.len() as u64;
            writer.write_all(out).map_err(|e| LogError::io(&path, e))?;
            Ok(ControlFlow::Continue(()))
        })?;
        stats.bytes_read += segment.size;
    }
    writer.flush().map_err(|e| LogError::io(&path, e))?;
    drop(writer);
    file.sync_data().map_err(|e| LogError::io(&path, e))?;
    // The cleaned segment is as old as the newest data it holds: retention and the tombstone
    // horizon go by this time.
    let newest_ms = group.iter().map(|s| s.modified_ms).max().unwrap_or(now_ms);
    let modified =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(newest_ms.max(0) as u64);
    file.set_modified(modified)
        .map_err(|e| LogError::io(&path, e))?;
    stats.bytes_written += written;
    Ok(CleanedGroup {
        base_offset,
        end_offset: group.last().expect("groups are not empty").next_offset,
        replaced: group.iter().map(|s| (s.base_offset, s.size)).collect(),
        size: written,
    })
}

/// The retention rule for one batch.
fn clean_batch(
    bytes: &[u8],
    header: &BatchHeader,
    map: &OffsetMap,
    map_end: i64,
    retain_tombstones: bool,
    stats: &mut CleaningStats,
) -> Result<BatchFate, BatchError> {
    if header.is_control() {
        return Ok(BatchFate::Keep);
    }
    let mut tombstones_removed = 0;
    let mut keyless_removed = 0;
    let (fate, removed) = filter_batch(
        bytes,
        header,
        MAX_DECOMPRESSED_BATCH_BYTES,
        |record, offset| {
            let Some(key) = record.key else {
                keyless_removed += 1;
                return false;
            };
            if map.get(key).is_some_and(|latest| offset < latest) {
                return false;
            }
            // Past the mapped range a later record of the key may exist unseen: keep tombstones.
            if record.value_is_null && !retain_tombstones && offset < map_end {
                tombstones_removed += 1;
                return false;
            }
            true
        },
    )?;
    stats.records_removed += removed as u64;
    stats.tombstones_removed += tombstones_removed;
    stats.keyless_removed += keyless_removed;
    Ok(fate)
}

/// Phase 3: puts the cleaned segments in place (call under the partition lock). Returns false,
/// discarding the output, when the log changed meanwhile (retention, truncation) in a way that
/// touches the cleaned segments. `crash_after` lets tests stop at a step as a crash would.
pub fn install(
    log: &mut PartitionLog,
    outcome: CleaningOutcome,
    crash_after: &dyn Fn(SwapStep) -> bool,
) -> Result<bool, LogError> {
    let dir = log.dir().to_path_buf();
    let unchanged = outcome.groups.iter().all(|group| {
        group.replaced.iter().all(|&(base, size)| {
            base < log.active_base_offset()
                && log.segment_at(base).is_some_and(|s| s.size() == size)
        })
    });
    if !unchanged {
        tracing::info!(dir = %dir.display(), "log changed during cleaning; discarding the output");
        discard(&dir, &outcome.groups);
        return Ok(false);
    }
    let interval = log.config().index_interval_bytes;
    for group in &outcome.groups {
        swap::commit(&dir, group.base_offset, group.end_offset)?;
        if crash_after(SwapStep::Committed) {
            return Err(simulated_crash(SwapStep::Committed));
        }
        let bases: Vec<i64> = group.replaced.iter().map(|(base, _)| *base).collect();
        log.remove_segments(&bases)?;
        swap::sync_dir(&dir)?;
        if crash_after(SwapStep::OldSegmentsDeleted) {
            return Err(simulated_crash(SwapStep::OldSegmentsDeleted));
        }
        swap::finish(&dir, group.base_offset, group.end_offset)?;
        let mut segment =
            Segment::open_sealed(&dir, group.base_offset, group.end_offset, interval)?;
        segment.write_indexes()?;
        log.insert_segment(segment);
    }
    log.set_first_dirty_offset(outcome.next_first_dirty_offset)?;
    Ok(true)
}

fn simulated_crash(step: SwapStep) -> LogError {
    LogError::io(
        PathBuf::new(),
        std::io::Error::other(format!("simulated crash after {step:?}")),
    )
}

#[cfg(test)]
mod tests;
