//! What a job did, counted as it runs.

/// What a job did, for logs, metrics and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct JobStats {
    pub checkpoints: u64,
    pub records_in: u64,
    pub records_out: u64,
    pub records_rejected: u64,
    /// Windowed jobs: records too late for every window they fall in.
    pub records_late: u64,
    /// Windowed jobs: groups emitted (one per window and key).
    pub windows_emitted: u64,
    /// Windowed jobs: partial groups that reached their owner after the window was emitted.
    pub partials_too_late: u64,
    pub checkpoints_aborted: u64,
    pub rebalances: u64,
}

impl JobStats {
    pub(super) fn add(&mut self, other: &JobStats) {
        self.checkpoints += other.checkpoints;
        self.records_in += other.records_in;
        self.records_out += other.records_out;
        self.records_rejected += other.records_rejected;
        self.records_late += other.records_late;
        self.windows_emitted += other.windows_emitted;
        self.partials_too_late += other.partials_too_late;
    }
}
