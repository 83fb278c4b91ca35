//! A pipeline run's Prometheus metrics, labelled by pipeline (and sink). Counters of the source
//! stage move when its checkpoint commits; those of a sink when it commits — so they agree with
//! what is durable.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};

pub struct PipelineMetrics {
    registry: Registry,
    pub source_records: IntCounterVec,
    pub records_produced: IntCounterVec,
    pub parse_errors: IntCounterVec,
    pub source_checkpoints: IntCounterVec,
    pub source_checkpoints_aborted: IntCounterVec,
    pub source_checkpoint_seconds: HistogramVec,
    pub sink_records_in: IntCounterVec,
    pub sink_rows_out: IntCounterVec,
    pub sink_records_rejected: IntCounterVec,
    pub sink_commits: IntCounterVec,
    pub sink_commit_seconds: HistogramVec,
    pub sink_lag_records: IntGaugeVec,
}

const SECONDS_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let metric = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("metric registered once");
    metric
}

fn histogram(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(SECONDS_BUCKETS.to_vec());
    let metric = HistogramVec::new(opts, labels).expect("valid metric");
    registry
        .register(Box::new(metric.clone()))
        .expect("metric registered once");
    metric
}

impl Default for PipelineMetrics {
    fn default() -> Self {
        let registry = Registry::new();
        let r = &registry;
        let p = &["pipeline"];
        let s = &["pipeline", "sink"];
        let sink_lag_records = IntGaugeVec::new(
            Opts::new(
                "weir_pipeline_sink_lag_records",
                "Records of the sink's input topic not yet read",
            ),
            s,
        )
        .expect("valid metric");
        registry
            .register(Box::new(sink_lag_records.clone()))
            .expect("metric registered once");
        PipelineMetrics {
            source_records: counter(
                r,
                "weir_pipeline_source_records_total",
                "Records read from the source",
                p,
            ),
            records_produced: counter(
                r,
                "weir_pipeline_records_produced_total",
                "Parsed records committed to the pipeline's topic",
                p,
            ),
            parse_errors: counter(
                r,
                "weir_pipeline_parse_errors_total",
                "Lines that did not parse, committed to the dead-letter topic",
                p,
            ),
            source_checkpoints: counter(
                r,
                "weir_pipeline_source_checkpoints_total",
                "Source checkpoints committed",
                p,
            ),
            source_checkpoints_aborted: counter(
                r,
                "weir_pipeline_source_checkpoints_aborted_total",
                "Source checkpoints aborted and replayed",
                p,
            ),
            source_checkpoint_seconds: histogram(
                r,
                "weir_pipeline_source_checkpoint_duration_seconds",
                "Time to produce and commit a source checkpoint",
                p,
            ),
            sink_records_in: counter(
                r,
                "weir_pipeline_sink_records_in_total",
                "Topic records committed by the sink",
                s,
            ),
            sink_rows_out: counter(
                r,
                "weir_pipeline_sink_rows_out_total",
                "Rows committed to the sink (after the transform)",
                s,
            ),
            sink_records_rejected: counter(
                r,
                "weir_pipeline_sink_records_rejected_total",
                "Topic records the sink could not decode (logged with their offsets)",
                s,
            ),
            sink_commits: counter(r, "weir_pipeline_sink_commits_total", "Sink commits", s),
            sink_commit_seconds: histogram(
                r,
                "weir_pipeline_sink_commit_duration_seconds",
                "Sink commit latency",
                s,
            ),
            sink_lag_records,
            registry,
        }
    }
}

impl PipelineMetrics {
    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}
