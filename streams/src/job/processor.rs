//! What each kind of job (stateless, windowed, interval join) does per checkpoint: the one
//! interface the loop drives them through.

use super::consumer::JobConsumer;
use super::poll::Polled;
use super::stats::JobStats;
use super::transaction::Checkpoint;
use crate::error::Result;

/// One kind of job's work per checkpoint.
pub(super) trait Processor {
    /// After a rebalance or an aborted checkpoint: rebuild what the owned partitions need.
    fn reload(&mut self, consumer: &JobConsumer) -> Result<()>;
    /// Window state held: (groups and distinct values, open windows).
    fn state_size(&self) -> (usize, usize) {
        (0, 0)
    }
    /// A bounded run's input ended (everything was consumed and committed): adds what announces
    /// it to `checkpoint`.
    fn end_of_input(
        &mut self,
        _consumer: &JobConsumer,
        _checkpoint: &mut Checkpoint,
        _stats: &mut JobStats,
    ) -> Result<()> {
        Ok(())
    }
    /// Announces the owned input partitions that became idle (`--idle-timeout-ms`) to
    /// `checkpoint` — also when nothing was polled, which is when they become idle.
    fn announce_idle(
        &mut self,
        _polled: &Polled,
        _checkpoint: &mut Checkpoint,
        _stats: &mut JobStats,
    ) -> Result<()> {
        Ok(())
    }
    /// Adds what one checkpoint produces to `checkpoint` (which holds the consumed offsets);
    /// `stats` counts what it did.
    fn checkpoint(
        &mut self,
        polled: &Polled,
        checkpoint: &mut Checkpoint,
        stats: &mut JobStats,
    ) -> Result<()>;
}
