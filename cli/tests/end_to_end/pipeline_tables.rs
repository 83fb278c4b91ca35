//! A pipeline joining its topic with a declared table (`transform.tables`): the generator's
//! access log, each line enriched with its status's description from a keyed topic — updated
//! (the latest value counts) and with a key deleted by a tombstone (LEFT JOIN: NULL) before the
//! run — lands in Parquet exactly once per line, every line with exactly the description the
//! table held. Two copies of the job share the topic's partitions (`parallelism: 2`), each
//! reading the whole table.

use crate::support::broker;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Duration;

use broker::BrokerProcess;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, TimeUnit, TimestampMillisecondType};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use weir_connectors::generator::AccessLogGenerator;
use weir_connectors::parquet::read_published;
use weir_connectors::weblog::{AccessLogEntry, LogFormat};

const LINES: u64 = 4_000;
const START_MS: i64 = 1_795_953_600_000;
const INTERVAL_MS: i64 = 50;

/// The table's records in order: 404 is updated, 500 deleted, 304 never described.
const TABLE: [(&str, Option<&str>); 6] = [
    ("200", Some(r#"{"meaning": "OK"}"#)),
    ("404", Some(r#"{"meaning": "Not Found"}"#)),
    ("301", Some(r#"{"meaning": "Moved Permanently"}"#)),
    ("500", Some(r#"{"meaning": "Internal Server Error"}"#)),
    ("404", Some(r#"{"meaning": "Missing"}"#)),
    ("500", None),
];

fn produce_table(bootstrap: &str) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .create()
        .unwrap();
    for (key, value) in TABLE {
        let record = BaseRecord::<str, str>::to("statuses").key(key);
        let record = match value {
            Some(value) => record.payload(value),
            None => record,
        };
        producer.send(record).map_err(|(e, _)| e).unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
}

#[test]
fn every_line_is_joined_once_with_the_tables_latest_value() {
    let _slot = crate::support::test_slot();
    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("statuses", 1);
    produce_table(&bootstrap);
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("warehouse");
    let config = dir.path().join("pipeline.yaml");
    std::fs::write(
        &config,
        format!(
            "name: described
bootstrap: {bootstrap}
source: {{ kind: generator, count: {LINES}, seed: 4, start_time_ms: {START_MS}, line_interval_ms: {INTERVAL_MS} }}
topic: {{ partitions: 2 }}
parallelism: 2
transform:
  table: requests
  sql: >
    SELECT r.timestamp, r.status, s.meaning
    FROM requests r LEFT JOIN statuses s ON CAST(r.status AS VARCHAR) = s._key
  tables:
    - {{ name: statuses, topic: statuses, schema: \"meaning:string\" }}
sinks:
  - {{ kind: parquet, path: {}, max_file_age_ms: 300 }}
checkpoint_interval_ms: 300
",
            warehouse.display()
        ),
    )
    .unwrap();
    let validated = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["pipeline", "validate"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        validated.status.success(),
        "{}{}",
        String::from_utf8_lossy(&validated.stdout),
        String::from_utf8_lossy(&validated.stderr)
    );
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

    let mut latest: BTreeMap<i64, Option<String>> = BTreeMap::new();
    for (key, value) in TABLE {
        let meaning = value.map(|v| {
            let value: serde_json::Value = serde_json::from_str(v).unwrap();
            value["meaning"].as_str().unwrap().to_string()
        });
        latest.insert(key.parse().unwrap(), meaning);
    }
    let generator = AccessLogGenerator {
        format: LogFormat::NginxCombined,
        seed: 4,
        start_time_ms: START_MS,
        line_interval_ms: INTERVAL_MS,
        bad_line_every: None,
    };
    // The lines as a multiset of (time, status, description): nginx times are whole seconds.
    type Lines = BTreeMap<(i64, i64, Option<String>), usize>;
    let mut truth = Lines::new();
    for n in 0..LINES {
        let line = generator.line(n);
        let entry = AccessLogEntry::parse(&line, true).unwrap();
        let status = i64::from(entry.status);
        let meaning = latest.get(&status).cloned().flatten();
        *truth.entry((entry.timestamp, status, meaning)).or_default() += 1;
    }
    let described = |m: Option<&str>| -> usize {
        truth
            .iter()
            .filter(|((_, _, meaning), _)| meaning.as_deref() == m)
            .map(|(_, count)| count)
            .sum()
    };
    assert!(
        described(Some("OK")) > 1000 && described(Some("Missing")) > 0 && described(None) > 0,
        "the log exercises found, updated and missing keys"
    );

    let (_, batches) =
        read_published(&warehouse, 1_000_000).unwrap_or_else(|e| panic!("{e}\n{log}"));
    let mut joined = Lines::new();
    let mut rows = 0;
    for batch in batches {
        let time = cast(
            batch.column_by_name("timestamp").unwrap(),
            &DataType::Timestamp(TimeUnit::Millisecond, None),
        )
        .unwrap();
        let time = time.as_primitive::<TimestampMillisecondType>();
        let status = batch
            .column_by_name("status")
            .unwrap()
            .as_primitive::<Int64Type>();
        let meaning = cast(batch.column_by_name("meaning").unwrap(), &DataType::Utf8).unwrap();
        let meaning = meaning.as_string::<i32>();
        for row in 0..batch.num_rows() {
            let value = meaning
                .is_valid(row)
                .then(|| meaning.value(row).to_string());
            *joined
                .entry((time.value(row), status.value(row), value))
                .or_default() += 1;
            rows += 1;
        }
    }
    let wrong: Vec<_> = truth
        .iter()
        .filter(|(line, count)| joined.get(*line) != Some(*count))
        .take(5)
        .map(|(line, count)| (line, count, joined.get(line)))
        .collect();
    assert!(
        wrong.is_empty() && joined == truth,
        "{LINES} lines, {rows} rows written; (line, expected count, got): {wrong:?}\n{log}"
    );
}
