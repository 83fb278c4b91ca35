//! A generated nginx access log and what a pipeline must make of it: rows counted per status
//! and minute, from the generator (the ground truth) and from a PostgreSQL table.

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, TimeUnit, TimestampMillisecondType};
use weir_connectors::generator::AccessLogGenerator;
use weir_connectors::parquet::read_published_at;
use weir_connectors::weblog::{AccessLogEntry, LogFormat};

/// (status, minute in epoch ms) → lines.
pub(crate) type Counts = BTreeMap<(i64, i64), u64>;

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

/// The counts of the parseable lines among the first `lines`, and the lines that do not parse.
pub(crate) fn ground_truth(generator: &AccessLogGenerator, lines: u64) -> (Counts, Vec<String>) {
    let mut counts = Counts::new();
    let mut bad = Vec::new();
    for n in 0..lines {
        let line = generator.line(n);
        match AccessLogEntry::parse(&line, true) {
            Ok(entry) => {
                let minute = entry.timestamp - entry.timestamp.rem_euclid(60_000);
                *counts.entry((i64::from(entry.status), minute)).or_default() += 1;
            }
            Err(_) => bad.push(line),
        }
    }
    (counts, bad)
}

pub(crate) fn total(counts: &Counts) -> u64 {
    counts.values().sum()
}

pub(crate) fn postgres_url() -> String {
    std::env::var("WEIR_TEST_POSTGRES_URL").expect(
        "WEIR_TEST_POSTGRES_URL is not set: this test needs PostgreSQL (scripts/postgres/start.sh)",
    )
}

/// The rows of `table` (columns `status` and `minute`) counted like [`ground_truth`]; empty
/// while the table does not exist.
pub(crate) async fn postgres_counts(table: &str) -> Counts {
    let (client, connection) = tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let query = format!(
        "SELECT status, (extract(epoch FROM minute) * 1000)::bigint AS m, count(*) FROM {table} GROUP BY status, m"
    );
    let Ok(rows) = client.query(&query, &[]).await else {
        return Counts::new();
    };
    rows.iter()
        .map(|row| {
            (
                (row.get::<_, i64>(0), row.get::<_, i64>(1)),
                row.get::<_, i64>(2) as u64,
            )
        })
        .collect()
}

/// The rows a Parquet sink published at `location` (columns `status` and `minute`), counted
/// like [`ground_truth`].
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
        for row in 0..batch.num_rows() {
            assert!(status.is_valid(row) && minute.is_valid(row));
            *counts
                .entry((status.value(row), minute.value(row)))
                .or_default() += 1;
        }
    }
    counts
}
