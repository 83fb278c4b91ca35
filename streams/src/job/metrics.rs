//! A job's Prometheus metrics (`weir job run --metrics-listen`): what its committed checkpoints
//! did, and how big its window state is. Counters move only when a checkpoint commits, so they
//! agree with the output.

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntGauge, Opts, Registry, TextEncoder,
};

use crate::job::stats::JobStats;

pub struct JobMetrics {
    registry: Registry,
    checkpoints: IntCounter,
    checkpoints_aborted: IntCounter,
    records_in: IntCounter,
    records_out: IntCounter,
    records_rejected: IntCounter,
    records_late: IntCounter,
    windows_emitted: IntCounter,
    rebalances: IntCounter,
    checkpoint_seconds: Histogram,
    state_entries: IntGauge,
    open_windows: IntGauge,
}

impl JobMetrics {
    /// Metrics labelled with the job's name and instance.
    pub fn new(job: &str, instance: &str) -> Self {
        let registry = Registry::new();
        let labels = [
            ("job".to_string(), job.to_string()),
            ("instance".to_string(), instance.to_string()),
        ];
        let opts = |name: &str, help: &str| {
            Opts::new(name, help).const_labels(labels.iter().cloned().collect())
        };
        let counter =
            |name: &str, help: &str| register(&registry, IntCounter::with_opts(opts(name, help)));
        let gauge =
            |name: &str, help: &str| register(&registry, IntGauge::with_opts(opts(name, help)));
        let checkpoint_seconds = register(
            &registry,
            Histogram::with_opts(
                HistogramOpts::new(
                    "weir_job_checkpoint_duration_seconds",
                    "Time from a checkpoint's first poll to its commit",
                )
                .const_labels(labels.iter().cloned().collect())
                .buckets(vec![0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]),
            ),
        );
        JobMetrics {
            checkpoints: counter("weir_job_checkpoints_total", "Checkpoints committed"),
            checkpoints_aborted: counter(
                "weir_job_checkpoints_aborted_total",
                "Checkpoints aborted and replayed",
            ),
            records_in: counter(
                "weir_job_records_in_total",
                "Input records in committed checkpoints",
            ),
            records_out: counter("weir_job_records_out_total", "Output records committed"),
            records_rejected: counter(
                "weir_job_records_rejected_total",
                "Input records that did not decode (dead letters)",
            ),
            records_late: counter(
                "weir_job_records_late_total",
                "Input records too late for every window",
            ),
            windows_emitted: counter("weir_job_windows_emitted_total", "Window groups emitted"),
            rebalances: counter("weir_job_rebalances_total", "Consumer group rebalances"),
            state_entries: gauge(
                "weir_job_window_state_entries",
                "Groups and distinct values held by open windows",
            ),
            open_windows: gauge("weir_job_open_windows", "Windows not yet emitted"),
            checkpoint_seconds,
            registry,
        }
    }

    pub(crate) fn committed(&self, done: &JobStats, seconds: f64) {
        self.checkpoints.inc_by(done.checkpoints);
        self.records_in.inc_by(done.records_in);
        self.records_out.inc_by(done.records_out);
        self.records_rejected.inc_by(done.records_rejected);
        self.records_late.inc_by(done.records_late);
        self.windows_emitted.inc_by(done.windows_emitted);
        self.checkpoint_seconds.observe(seconds);
    }

    pub(crate) fn aborted(&self) {
        self.checkpoints_aborted.inc();
    }

    pub(crate) fn rebalanced(&self) {
        self.rebalances.inc();
    }

    pub(crate) fn window_state(&self, entries: usize, open_windows: usize) {
        self.state_entries.set(entries as i64);
        self.open_windows.set(open_windows as i64);
    }

    /// The Prometheus text format.
    pub fn render(&self) -> String {
        let mut text = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut text)
            .expect("encoding to memory");
        String::from_utf8(text).expect("the text format is UTF-8")
    }

    /// The Prometheus text format of several jobs' metrics (a staged job's stages, each
    /// labelled with its own name): each family once, with every job's series.
    pub fn render_all(all: &[JobMetrics]) -> String {
        let mut families: Vec<prometheus::proto::MetricFamily> = Vec::new();
        for family in all.iter().flat_map(|metrics| metrics.registry.gather()) {
            match families.iter_mut().find(|f| f.name() == family.name()) {
                Some(known) => known
                    .mut_metric()
                    .extend(family.get_metric().iter().cloned()),
                None => families.push(family),
            }
        }
        let mut text = Vec::new();
        TextEncoder::new()
            .encode(&families, &mut text)
            .expect("encoding to memory");
        String::from_utf8(text).expect("the text format is UTF-8")
    }
}

/// `metric` (built from constant, valid options), registered in `registry`.
fn register<M>(registry: &Registry, metric: prometheus::Result<M>) -> M
where
    M: prometheus::core::Collector + Clone + 'static,
{
    let metric = metric.expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("registered once");
    metric
}
