//! A pipeline joining its topic with another stream within a time bound (`transform.streams`,
//! an interval join): the generator's access log, each request LEFT JOINed with the deploys of
//! its path in the 45 s before it — none (nulls, emitted once the bound has passed or the
//! bounded run's input ended), one, or two — lands in Parquet exactly as an oracle computed here
//! from the same lines and deploys says: the rows compared as a multiset, so a lost row and a
//! duplicate cannot cancel out. Two copies of the job share the partitions.

use crate::support::broker;

use std::collections::{BTreeMap, BTreeSet};
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
const BOUND_MS: i64 = 45_000;
const DEPLOY_EVERY_MS: i64 = 37_000;

/// (time, path, status) of each line.
fn lines() -> Vec<(i64, String, i64)> {
    let generator = AccessLogGenerator {
        format: LogFormat::NginxCombined,
        seed: 4,
        start_time_ms: START_MS,
        line_interval_ms: INTERVAL_MS,
        bad_line_every: None,
    };
    (0..LINES)
        .map(|n| {
            let line = generator.line(n);
            let entry = AccessLogEntry::parse(&line, true).unwrap();
            let path = entry.path.map(|p| p.into_owned()).unwrap_or_default();
            (entry.timestamp, path, i64::from(entry.status))
        })
        .collect()
}

/// (path, time, version) of each deploy, in time order: every other path of the log, every
/// 37 s through the log's 200 s.
fn deploys(lines: &[(i64, String, i64)]) -> Vec<(String, i64, String)> {
    let paths: BTreeSet<&String> = lines.iter().map(|(_, path, _)| path).collect();
    let mut deploys = Vec::new();
    for step in 0..6 {
        for path in paths.iter().step_by(2) {
            let at = START_MS + step * DEPLOY_EVERY_MS + 500;
            deploys.push((path.to_string(), at, format!("v{step}")));
        }
    }
    deploys
}

fn produce(bootstrap: &str, deploys: &[(String, i64, String)]) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .create()
        .unwrap();
    for (path, at, version) in deploys {
        let value = serde_json::json!({"path": path, "at": at, "version": version}).to_string();
        let record = BaseRecord::<str, str>::to("deploys")
            .key(path)
            .payload(&value);
        producer.send(record).map_err(|(e, _)| e).unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
}

/// (time, path, status, version) → how many rows.
type Rows = BTreeMap<(i64, String, i64, Option<String>), usize>;

fn oracle(lines: &[(i64, String, i64)], deploys: &[(String, i64, String)]) -> Rows {
    let mut rows = Rows::new();
    for (time, path, status) in lines {
        let mut matched = false;
        for (deployed, at, version) in deploys {
            if deployed == path && (time - BOUND_MS..=*time).contains(at) {
                let row = (*time, path.clone(), *status, Some(version.clone()));
                *rows.entry(row).or_default() += 1;
                matched = true;
            }
        }
        if !matched {
            *rows
                .entry((*time, path.clone(), *status, None))
                .or_default() += 1;
        }
    }
    rows
}

fn published(warehouse: &std::path::Path, log: &str) -> Rows {
    let (_, batches) =
        read_published(warehouse, 1_000_000).unwrap_or_else(|e| panic!("{e}\n{log}"));
    let mut rows = Rows::new();
    for batch in batches {
        let time = cast(
            batch.column_by_name("timestamp").unwrap(),
            &DataType::Timestamp(TimeUnit::Millisecond, None),
        )
        .unwrap();
        let time = time.as_primitive::<TimestampMillisecondType>();
        let path = cast(batch.column_by_name("path").unwrap(), &DataType::Utf8).unwrap();
        let path = path.as_string::<i32>();
        let status = batch
            .column_by_name("status")
            .unwrap()
            .as_primitive::<Int64Type>();
        let version = cast(batch.column_by_name("version").unwrap(), &DataType::Utf8).unwrap();
        let version = version.as_string::<i32>();
        for row in 0..batch.num_rows() {
            let deployed = version
                .is_valid(row)
                .then(|| version.value(row).to_string());
            let key = (
                time.value(row),
                path.value(row).to_string(),
                status.value(row),
                deployed,
            );
            *rows.entry(key).or_default() += 1;
        }
    }
    rows
}

#[test]
fn requests_are_joined_with_the_deploys_of_their_path_just_before_them() {
    let _slot = crate::support::test_slot();
    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("deploys", 2);
    let lines = lines();
    let deploys = deploys(&lines);
    produce(&bootstrap, &deploys);
    let dir = tempfile::tempdir().unwrap();
    let warehouse = dir.path().join("warehouse");
    let config = dir.path().join("pipeline.yaml");
    std::fs::write(
        &config,
        format!(
            "name: deployed
bootstrap: {bootstrap}
source: {{ kind: generator, count: {LINES}, seed: 4, start_time_ms: {START_MS}, line_interval_ms: {INTERVAL_MS} }}
topic: {{ partitions: 2 }}
parallelism: 2
transform:
  table: requests
  sql: >
    SELECT r.timestamp, r.path, r.status, d.version
    FROM requests r LEFT JOIN deploys d ON r.path = d.path
     AND d.at BETWEEN r.timestamp - INTERVAL '{BOUND_MS}' MILLISECOND AND r.timestamp
  streams:
    - {{ name: deploys, topic: deploys, schema: \"path:string,at:timestamp,version:string\" }}
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

    let truth = oracle(&lines, &deploys);
    let with = |matches: usize| {
        let mut per_line: BTreeMap<(i64, &str, i64), usize> = BTreeMap::new();
        for ((time, path, status, version), count) in &truth {
            *per_line.entry((*time, path, *status)).or_default() +=
                if version.is_some() { *count } else { 0 };
        }
        per_line.values().filter(|n| **n == matches).count()
    };
    assert!(
        with(0) > 100 && with(1) > 100 && with(2) > 10,
        "requests with no, one and two deploys: {}, {}, {}",
        with(0),
        with(1),
        with(2)
    );
    let rows = published(&warehouse, &log);
    let wrong: Vec<_> = truth
        .iter()
        .filter(|(row, count)| rows.get(*row) != Some(*count))
        .take(5)
        .map(|(row, count)| (row, count, rows.get(row)))
        .collect();
    let unexpected: Vec<_> = rows
        .keys()
        .filter(|r| !truth.contains_key(*r))
        .take(5)
        .collect();
    assert!(
        rows == truth,
        "{} rows expected, {} written; (row, expected, got): {wrong:?}; not expected: \
         {unexpected:?}\n{log}",
        truth.values().sum::<usize>(),
        rows.values().sum::<usize>()
    );
}
