//! A generated nginx access log and what a pipeline must make of it: each line carries its
//! number (its user field is `line-<n>`), so the rows a sink holds are compared with the
//! generator's (the ground truth) line by line — a lost line and a duplicated one cannot cancel
//! out. Pipelines select `remote_user AS line`, the minute and the status.

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, TimeUnit, TimestampMillisecondType};
use weir_connectors::generator::AccessLogGenerator;
use weir_connectors::parquet::read_published_at;
use weir_connectors::weblog::{AccessLogEntry, LogFormat};

/// (line, status, minute in epoch ms) → how many rows (1 for each line, exactly once).
pub(crate) type Counts = BTreeMap<(String, i64, i64), u64>;

/// Lines 50 ms apart from a fixed start; every `bad_line_every`th line garbage.
pub(crate) fn generator(bad_line_every: Option<u64>) -> AccessLogGenerator {
    AccessLogGenerator {
        format: LogFormat::NginxCombined,
        seed: 42,
        start_time_ms: 1_795_953_600_000,
        line_interval_ms: 50,
        bad_line_every,
    }
}

/// Line `n` of the generator with its user field naming it (`line-<n>`); bad lines as they are.
pub(crate) fn numbered_line(generator: &AccessLogGenerator, n: u64) -> String {
    let line = generator.line(n);
    if generator.is_bad(n) {
        return line;
    }
    let (head, rest) = line.split_once(" [").expect("a good line has a time");
    let client = head.split(" - ").next().expect("a good line has a client");
    format!("{client} - line-{n} [{rest}")
}

/// The rows the parseable lines among the first `lines` make, and the lines that do not parse.
pub(crate) fn ground_truth(generator: &AccessLogGenerator, lines: u64) -> (Counts, Vec<String>) {
    let mut counts = Counts::new();
    let mut bad = Vec::new();
    for n in 0..lines {
        let line = numbered_line(generator, n);
        match AccessLogEntry::parse(&line, true) {
            Ok(entry) => {
                let minute = entry.timestamp - entry.timestamp.rem_euclid(60_000);
                let id = entry
                    .remote_user
                    .map(|u| u.into_owned())
                    .unwrap_or_default();
                *counts
                    .entry((id, i64::from(entry.status), minute))
                    .or_default() += 1;
            }
            Err(_) => bad.push(line),
        }
    }
    (counts, bad)
}

/// Where the rows differ from the ground truth, e.g. for a failure message: (lines missing,
/// lines more than once or not expected), at most five of each.
pub(crate) fn differences(rows: &Counts, truth: &Counts) -> (Vec<String>, Vec<String>) {
    let missing = truth
        .keys()
        .filter(|k| !rows.contains_key(*k))
        .take(5)
        .map(|k| format!("{k:?}"))
        .collect();
    let extra = rows
        .iter()
        .filter(|(k, n)| truth.get(*k) != Some(*n))
        .take(5)
        .map(|(k, n)| format!("{k:?} ×{n}"))
        .collect();
    (missing, extra)
}

pub(crate) fn total(counts: &Counts) -> u64 {
    counts.values().sum()
}

pub(crate) fn postgres_url() -> String {
    std::env::var("WEIR_TEST_POSTGRES_URL").expect(
        "WEIR_TEST_POSTGRES_URL is not set: this test needs PostgreSQL (scripts/postgres/start.sh)",
    )
}

/// The rows of `table` (columns `line`, `status` and `minute`) counted like [`ground_truth`];
/// empty while the table does not exist.
pub(crate) async fn postgres_counts(table: &str) -> Counts {
    let (client, connection) = tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let query = format!(
        "SELECT line, status, (extract(epoch FROM minute) * 1000)::bigint AS m, count(*) FROM {table} GROUP BY line, status, m"
    );
    let Ok(rows) = client.query(&query, &[]).await else {
        return Counts::new();
    };
    rows.iter()
        .map(|row| {
            (
                (
                    row.get::<_, Option<String>>(0).unwrap_or_default(),
                    row.get::<_, i64>(1),
                    row.get::<_, i64>(2),
                ),
                row.get::<_, i64>(3) as u64,
            )
        })
        .collect()
}

/// The rows a Parquet sink published at `location` (columns `line`, `status` and `minute`),
/// counted like [`ground_truth`].
pub(crate) async fn parquet_counts(location: &str, options: &BTreeMap<String, String>) -> Counts {
    let (_, batches) = read_published_at(location, options, 10_000_000)
        .await
        .unwrap();
    let mut counts = Counts::new();
    for batch in batches {
        let status = batch
            .column_by_name("status")
            .unwrap()
            .as_primitive::<Int64Type>()
            .clone();
        let minute = cast(
            batch.column_by_name("minute").unwrap(),
            &DataType::Timestamp(TimeUnit::Millisecond, None),
        )
        .unwrap();
        let minute = minute.as_primitive::<TimestampMillisecondType>();
        let line = cast(batch.column_by_name("line").unwrap(), &DataType::Utf8).unwrap();
        let line = line.as_string::<i32>();
        for row in 0..batch.num_rows() {
            assert!(line.is_valid(row) && status.is_valid(row) && minute.is_valid(row));
            let key = (
                line.value(row).to_string(),
                status.value(row),
                minute.value(row),
            );
            *counts.entry(key).or_default() += 1;
        }
    }
    counts
}
