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

/// How often a running job logs (info) what it committed since its last such line.
pub(super) const PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// A running job's progress lines: the first committed checkpoint at once (the job works), then
/// what was committed every [`PROGRESS_INTERVAL`] while checkpoints commit.
pub(super) struct Progress {
    since: JobStats,
    last_line: Option<std::time::Instant>,
}

impl Progress {
    pub(super) fn new() -> Progress {
        Progress {
            since: JobStats::default(),
            last_line: None,
        }
    }

    /// Counts a committed checkpoint's `done`, and logs once a line is due.
    pub(super) fn committed(&mut self, job: &str, done: &JobStats) {
        self.since.add(done);
        let due = self
            .last_line
            .is_none_or(|last| last.elapsed() >= PROGRESS_INTERVAL);
        if !due {
            return;
        }
        let what = if self.last_line.is_none() {
            "first checkpoint committed"
        } else {
            "progress"
        };
        let since = std::mem::take(&mut self.since);
        tracing::info!(
            job,
            checkpoints = since.checkpoints,
            records_in = since.records_in,
            records_out = since.records_out,
            rejected = since.records_rejected,
            late = since.records_late,
            windows_emitted = since.windows_emitted,
            "{what}"
        );
        self.last_line = Some(std::time::Instant::now());
    }
}
