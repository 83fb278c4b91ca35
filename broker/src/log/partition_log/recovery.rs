//! Opening a partition log after a crash or a clean stop: its segments (a torn tail cut at the
//! first bad batch), the leader epoch cache (rebuilt from the batches when its checkpoint is
//! lost) and the producer state (replayed from the last snapshot).

use super::*;

impl PartitionLog {
    /// The saved leader epoch cache, fitted to the recovered log; rebuilt from the batches when
    /// missing (a log from before clusters) or unreadable.
    pub(super) fn load_leader_epochs(&mut self) -> Result<(), LogError> {
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

    pub(super) fn scan_leader_epochs(&self) -> Result<LeaderEpochCache, LogError> {
        let mut epochs = LeaderEpochCache::empty(&self.dir);
        for segment in self.segments.values() {
            segment.scan(0, segment.size(), false, |_, header, _| {
                epochs.assign(header.partition_leader_epoch, header.base_offset);
                std::ops::ControlFlow::Continue(())
            })?;
        }
        Ok(epochs)
    }

    pub(super) fn load_segments(
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

    /// Producer state = the newest snapshot not beyond the log end + the batches after it.
    pub(super) fn rebuild_producer_state(&mut self, now_ms: i64) -> Result<(), LogError> {
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
                        std::ops::ControlFlow::Break(crate::log::error::BatchError::InvalidLength(
                            0,
                        ))
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
}

pub(super) fn read_offset_file(path: &Path) -> Option<i64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}
