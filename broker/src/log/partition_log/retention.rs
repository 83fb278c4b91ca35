//! What leaves a partition log: segments below the log start offset (DeleteRecords), past
//! `retention.ms`/`retention.bytes`, and the tail cut by truncation (a follower's divergence) or
//! a reset (a replica starting over at the leader's log start).

use super::*;

impl PartitionLog {
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

    pub(super) fn delete_segments_below_log_start(&mut self, now_ms: i64) -> Result<(), LogError> {
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

    pub(super) fn delete_segments(&mut self, bases: &[i64]) -> Result<(), LogError> {
        for base in bases {
            if let Some(segment) = self.segments.remove(base) {
                let path = segment.path().to_path_buf();
                self.unflushed_sealed.retain(|(_, p)| *p != path);
                self.retired
                    .retire(&segment, self.config.file_delete_delay_ms)?;
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
                self.retired
                    .retire(&segment, self.config.file_delete_delay_ms)?;
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
                self.retired
                    .retire(&segment, self.config.file_delete_delay_ms)?;
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
}
