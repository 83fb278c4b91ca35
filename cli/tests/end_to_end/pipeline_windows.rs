//! A pipeline with a windowed transform (`GROUP BY tumble(…)`): the generator's access log,
//! counted per minute and status by the streams engine's windowed job, lands in Parquet with
//! every window exactly once and exactly the count the generated lines give — including the
//! windows still open when the bounded run's input ended (closed by the end of input), with the
//! whole input produced at once (no later input carries the watermark forward), and two copies
//! of the windowed job sharing the partitions (`parallelism: 2`). The same for session windows
//! per status, every session checked against the sessions the lines make.

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

/// Runs a bounded pipeline over the generator's lines with `sql` as its transform; the rows
/// published to Parquet.
fn run_pipeline(sql: &str) -> Vec<datafusion::arrow::record_batch::RecordBatch> {
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
    {sql}
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
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{log}");
    let (_, batches) =
        read_published(&warehouse, 1_000_000).unwrap_or_else(|e| panic!("{e}\n{log}"));
    batches
}

fn entries(mut each: impl FnMut(AccessLogEntry)) {
    let generator = AccessLogGenerator {
        format: LogFormat::NginxCombined,
        seed: 9,
        start_time_ms: START_MS,
        line_interval_ms: INTERVAL_MS,
        bad_line_every: Some(500),
    };
    for n in 0..LINES {
        if let Ok(entry) = AccessLogEntry::parse(&generator.line(n), true) {
            each(entry);
        }
    }
}

fn column_ms(batch: &datafusion::arrow::record_batch::RecordBatch, name: &str) -> Vec<i64> {
    let times = cast(
        batch.column_by_name(name).unwrap(),
        &DataType::Timestamp(TimeUnit::Millisecond, None),
    )
    .unwrap();
    times
        .as_primitive::<TimestampMillisecondType>()
        .values()
        .to_vec()
}

fn column_i64(batch: &datafusion::arrow::record_batch::RecordBatch, name: &str) -> Vec<i64> {
    let values = cast(batch.column_by_name(name).unwrap(), &DataType::Int64).unwrap();
    values.as_primitive::<Int64Type>().values().to_vec()
}

#[test]
fn windows_per_minute_and_status_land_exactly_once() {
    let _slot = crate::support::test_slot();
    let batches = run_pipeline(
        "SELECT tumble(timestamp, INTERVAL '1 minute') AS minute, status, count(*) AS requests
    FROM requests GROUP BY tumble(timestamp, INTERVAL '1 minute'), status",
    );
    let mut truth: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    entries(|entry| {
        let minute = entry.timestamp - entry.timestamp.rem_euclid(60_000);
        *truth.entry((minute, i64::from(entry.status))).or_default() += 1;
    });
    let mut emitted: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for batch in batches {
        let (minute, status) = (column_ms(&batch, "minute"), column_i64(&batch, "status"));
        let requests = column_i64(&batch, "requests");
        for row in 0..batch.num_rows() {
            let key = (minute[row], status[row]);
            assert!(
                emitted.insert(key, requests[row]).is_none(),
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

/// Sessions per status (3 s of silence ends one) in a pipeline: every session of the lines,
/// the ones still open at the end of the bounded run's input included, exactly once.
#[test]
fn sessions_per_status_land_exactly_once() {
    let _slot = crate::support::test_slot();
    const GAP_MS: i64 = 3_000;
    let batches = run_pipeline(
        "SELECT session(timestamp, INTERVAL '3' SECOND) AS started, status, count(*) AS requests,
           max(timestamp) AS last FROM requests GROUP BY session(timestamp, INTERVAL '3' SECOND), status",
    );
    // Lines are in time order within each partition: none is late.
    let mut times: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    entries(|entry| {
        times
            .entry(i64::from(entry.status))
            .or_default()
            .push(entry.timestamp)
    });
    let mut truth: BTreeMap<(i64, i64), (i64, i64)> = BTreeMap::new();
    for (status, mut times) in times {
        times.sort_unstable();
        let mut session: Option<(i64, i64, i64)> = None;
        for time in times {
            session = match session {
                Some((start, last, count)) if time < last + GAP_MS => {
                    Some((start, time, count + 1))
                }
                Some((start, last, count)) => {
                    truth.insert((start, status), (count, last));
                    Some((time, time, 1))
                }
                None => Some((time, time, 1)),
            };
        }
        if let Some((start, last, count)) = session {
            truth.insert((start, status), (count, last));
        }
    }
    let mut emitted: BTreeMap<(i64, i64), (i64, i64)> = BTreeMap::new();
    for batch in batches {
        let (started, status) = (column_ms(&batch, "started"), column_i64(&batch, "status"));
        let (requests, last) = (column_i64(&batch, "requests"), column_ms(&batch, "last"));
        for row in 0..batch.num_rows() {
            let key = (started[row], status[row]);
            assert!(
                emitted.insert(key, (requests[row], last[row])).is_none(),
                "session {key:?} emitted twice"
            );
        }
    }
    assert!(truth.len() > 20, "the lines make sessions: {}", truth.len());
    assert_eq!(emitted, truth);
}
