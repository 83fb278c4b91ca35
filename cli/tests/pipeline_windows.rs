//! A pipeline with a windowed transform (`GROUP BY tumble(…)`): the generator's access log,
//! counted per minute and status by the streams engine's windowed job, lands in Parquet with
//! every window exactly once and exactly the count the generated lines give — including the
//! windows still open when the bounded run's input ended (closed by the end of input), with the
//! whole input produced at once (no later input carries the watermark forward), and two copies
//! of the windowed job sharing the partitions (`parallelism: 2`).

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, TimeUnit, TimestampMillisecondType};
use weir_connectors::generator::AccessLogGenerator;
use weir_connectors::parquet::read_published;
use weir_connectors::weblog::{AccessLogEntry, LogFormat};

const LINES: u64 = 12_000;
const START_MS: i64 = 1_795_953_600_000;
const INTERVAL_MS: i64 = 50;

#[test]
fn windows_per_minute_and_status_land_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("warehouse");
    let config = dir.path().join("pipeline.yaml");
    std::fs::write(
        &config,
        format!(
            "name: perminute
source: {{ kind: generator, count: {LINES}, seed: 9, start_time_ms: {START_MS}, line_interval_ms: {INTERVAL_MS}, bad_line_every: 500 }}
topic: {{ partitions: 2 }}
parallelism: 2
transform:
  table: requests
  sql: >
    SELECT tumble(timestamp, INTERVAL '1 minute') AS minute, status, count(*) AS requests
    FROM requests GROUP BY tumble(timestamp, INTERVAL '1 minute'), status
sinks:
  - {{ kind: parquet, path: {}, max_file_age_ms: 300 }}
checkpoint_interval_ms: 300
",
            warehouse.display()
        ),
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["pipeline", "run"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--until-caught-up")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let generator = AccessLogGenerator {
        format: LogFormat::NginxCombined,
        seed: 9,
        start_time_ms: START_MS,
        line_interval_ms: INTERVAL_MS,
        bad_line_every: Some(500),
    };
    let mut truth: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for n in 0..LINES {
        if let Ok(entry) = AccessLogEntry::parse(&generator.line(n), true) {
            let minute = entry.timestamp - entry.timestamp.rem_euclid(60_000);
            *truth.entry((minute, i64::from(entry.status))).or_default() += 1;
        }
    }
    let log = String::from_utf8_lossy(&output.stderr);
    let (_, batches) =
        read_published(&warehouse, 1_000_000).unwrap_or_else(|e| panic!("{e}\n{log}"));
    let mut emitted: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for batch in batches {
        let minute = cast(
            batch.column_by_name("minute").unwrap(),
            &DataType::Timestamp(TimeUnit::Millisecond, None),
        )
        .unwrap();
        let minute = minute.as_primitive::<TimestampMillisecondType>();
        let status = batch
            .column_by_name("status")
            .unwrap()
            .as_primitive::<Int64Type>();
        let requests = batch
            .column_by_name("requests")
            .unwrap()
            .as_primitive::<Int64Type>();
        for row in 0..batch.num_rows() {
            let key = (minute.value(row), status.value(row));
            assert!(
                emitted.insert(key, requests.value(row)).is_none(),
                "window {key:?} emitted twice"
            );
        }
    }
    assert_eq!(
        emitted.len(),
        truth.len(),
        "windows emitted vs windows with lines"
    );
    assert_eq!(emitted, truth);
}
