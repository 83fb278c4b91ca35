//! `weir pipeline run --metrics-listen`: a generator pipeline's Prometheus metrics agree with
//! what it did — records in and out per stage, parse errors, checkpoints, sink commits and
//! their latency, and a lag that reaches zero.

use crate::support::scrape;

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use scrape::{get_metrics, metric};

#[test]
fn a_pipeline_serves_its_metrics() {
    let _slot = crate::support::test_slot();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pipeline.yaml");
    std::fs::write(
        &config,
        format!(
            "name: gen
source: {{ kind: generator, count: 5000, bad_line_every: 100 }}
transform: {{ sql: \"SELECT status, path FROM input WHERE status >= 400\" }}
sinks:
  - {{ kind: parquet, path: {}, max_file_age_ms: 200 }}
checkpoint_interval_ms: 200
",
            dir.path().join("warehouse").display()
        ),
    )
    .unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut pipeline = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["pipeline", "run"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--metrics-listen", &addr])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sink = "pipeline=\"gen\",sink=\"parquet-0\"";
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        let text = get_metrics(&addr).unwrap_or_default();
        let records_in = metric(
            &text,
            &format!("weir_pipeline_sink_records_in_total{{{sink}}}"),
        );
        if records_in == Some(4950.0)
            && metric(&text, &format!("weir_pipeline_sink_lag_records{{{sink}}}")) == Some(0.0)
        {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "metrics never showed the whole run:\n{text}"
        );
        thread::sleep(Duration::from_millis(200));
    };
    pipeline.kill().unwrap();
    pipeline.wait().unwrap();
    let p = "pipeline=\"gen\"";
    assert_eq!(
        metric(&text, &format!("weir_pipeline_source_records_total{{{p}}}")),
        Some(5000.0)
    );
    assert_eq!(
        metric(
            &text,
            &format!("weir_pipeline_records_produced_total{{{p}}}")
        ),
        Some(4950.0)
    );
    assert_eq!(
        metric(&text, &format!("weir_pipeline_parse_errors_total{{{p}}}")),
        Some(50.0)
    );
    assert!(
        metric(
            &text,
            &format!("weir_pipeline_source_checkpoints_total{{{p}}}")
        )
        .unwrap()
            >= 1.0
    );
    assert!(
        metric(
            &text,
            &format!("weir_pipeline_source_checkpoint_duration_seconds_count{{{p}}}")
        )
        .unwrap()
            >= 1.0
    );
    // Rows out: the generator's 4xx and 5xx lines (the transform keeps those).
    let rows_out = metric(
        &text,
        &format!("weir_pipeline_sink_rows_out_total{{{sink}}}"),
    )
    .unwrap();
    assert!(rows_out > 300.0 && rows_out < 4950.0, "{rows_out}");
    assert!(
        metric(
            &text,
            &format!("weir_pipeline_sink_commits_total{{{sink}}}")
        )
        .unwrap()
            >= 1.0
    );
    assert!(
        metric(
            &text,
            &format!("weir_pipeline_sink_commit_duration_seconds_count{{{sink}}}")
        )
        .unwrap()
            >= 1.0
    );
    assert_eq!(
        metric(
            &text,
            &format!("weir_pipeline_sink_records_rejected_total{{{sink}}}")
        ),
        Some(0.0)
    );
}
