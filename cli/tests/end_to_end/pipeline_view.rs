//! A pipeline whose transform is an updating aggregate (`GROUP BY` without a window) writes a
//! materialized view into PostgreSQL: one row per group, upserted by the group's key, deleted
//! when the group leaves the view. `HAVING count(*) % 2 = 0` makes every line of a group flip
//! it in or out of the view, so the table holds exactly the groups with an even number of lines
//! — one line lost or applied twice flips its group and the table differs from the oracle
//! computed here from the generator's lines. Two copies of the job share the partitions.
//!
//! Needs PostgreSQL (`WEIR_TEST_POSTGRES_URL`, started by scripts/test.sh).

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use weir_connectors::generator::AccessLogGenerator;
use weir_connectors::weblog::{AccessLogEntry, LogFormat};

const LINES: u64 = 12_000;
const START_MS: i64 = 1_795_953_600_000;
const INTERVAL_MS: i64 = 50;

fn postgres_url() -> String {
    std::env::var("WEIR_TEST_POSTGRES_URL").expect(
        "WEIR_TEST_POSTGRES_URL is not set: this test needs PostgreSQL (scripts/postgres/start.sh)",
    )
}

/// (path, status) → (lines, bytes) of the parseable lines.
type Groups = BTreeMap<(String, i64), (i64, i64)>;

fn oracle() -> Groups {
    let generator = AccessLogGenerator {
        format: LogFormat::NginxCombined,
        seed: 9,
        start_time_ms: START_MS,
        line_interval_ms: INTERVAL_MS,
        bad_line_every: Some(500),
    };
    let mut groups = Groups::new();
    for n in 0..LINES {
        if let Ok(entry) = AccessLogEntry::parse(&generator.line(n), true) {
            let path = entry.path.map(|p| p.into_owned()).unwrap_or_default();
            let group = groups.entry((path, i64::from(entry.status))).or_default();
            group.0 += 1;
            group.1 += entry.bytes as i64;
        }
    }
    groups
}

/// The table's rows: (path, status) → (hits, bytes), each row's `_key` checked against its
/// group (the JSON array of the group's keys).
async fn table_rows(table: &str) -> Groups {
    let (client, connection) = tokio_postgres::connect(&postgres_url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let query = format!("SELECT _key, path, status, hits, bytes FROM {table}");
    let mut rows = Groups::new();
    for row in client.query(&query, &[]).await.unwrap() {
        let (key, path, status): (String, String, i64) = (row.get(0), row.get(1), row.get(2));
        assert_eq!(
            key,
            serde_json::json!([path, status]).to_string(),
            "a row's key is its group"
        );
        let before = rows.insert((path, status), (row.get(3), row.get(4)));
        assert!(before.is_none(), "one row per group");
    }
    rows
}

#[test]
fn an_updating_aggregate_lands_in_postgres_as_a_view_keyed_by_group() {
    let _slot = crate::support::test_slot();
    let dir = tempfile::tempdir().unwrap();
    let table = format!("view_{}", std::process::id());
    let config = dir.path().join("pipeline.yaml");
    std::fs::write(
        &config,
        format!(
            "name: pathview
source: {{ kind: generator, count: {LINES}, seed: 9, start_time_ms: {START_MS}, line_interval_ms: {INTERVAL_MS}, bad_line_every: 500 }}
topic: {{ partitions: 2 }}
parallelism: 2
transform:
  table: requests
  sql: >
    SELECT path, status, count(*) AS hits, sum(bytes) AS bytes FROM requests
    GROUP BY path, status HAVING count(*) % 2 = 0
sinks:
  - {{ kind: postgres, url: \"{}\", table: {table}, commit_interval_ms: 200 }}
checkpoint_interval_ms: 200
checkpoint_max_records: 700
",
            postgres_url()
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

    let groups = oracle();
    let even: Groups = groups
        .iter()
        .filter(|(_, (hits, _))| hits % 2 == 0)
        .map(|(group, totals)| (group.clone(), *totals))
        .collect();
    assert!(
        even.len() >= 10 && groups.len() - even.len() >= 10,
        "the lines leave groups both in and out of the view: {} of {}",
        even.len(),
        groups.len()
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let rows = runtime.block_on(table_rows(&table));
    let wrong: Vec<_> = even
        .iter()
        .filter(|(group, totals)| rows.get(*group) != Some(*totals))
        .map(|(group, totals)| (group, totals, rows.get(group)))
        .take(5)
        .collect();
    let unexpected: Vec<_> = rows
        .keys()
        .filter(|g| !even.contains_key(*g))
        .take(5)
        .collect();
    assert!(
        rows == even,
        "{} groups in the table, {} expected; (group, expected, got): {wrong:?}; not expected: \
         {unexpected:?}\n{log}",
        rows.len(),
        even.len()
    );
}
