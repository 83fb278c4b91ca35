//! Pipeline files with mistakes: each is reported with its file, line, column and a hint.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

use std::path::PathBuf;

use crate::load::load;
use crate::validate::{check, validate};

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const GOOD: &str = "name: weblogs
source:
  kind: file
  paths: [/var/log/nginx/access.log*]
  format: nginx_combined
transform:
  table: requests
  sql: SELECT status, path FROM requests WHERE status >= 500
sinks:
  - kind: parquet
    path: /tmp/warehouse
";

/// The problems of `text` as printed, loading and validating offline.
async fn problems(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "pipeline.yaml", text);
    match check(&path, true).await {
        Err(diagnostics) => diagnostics
            .to_string()
            .replace(&dir.path().display().to_string(), "DIR"),
        Ok(_) => String::new(),
    }
}

#[tokio::test]
async fn a_good_pipeline_has_no_problems() {
    assert_eq!(problems(GOOD).await, "");
}

#[tokio::test]
async fn unknown_fields_are_pointed_at_even_inside_a_connector() {
    let text = GOOD.replace(
        "  format: nginx_combined\n",
        "  format: nginx_combined\n  pathz: [x]\n",
    );
    let found = problems(&text).await;
    assert!(
        found.starts_with("DIR/pipeline.yaml:6:3: source: unknown field `pathz`"),
        "{found}"
    );
    let text = GOOD.replace("transform:", "transfrom:");
    let found = problems(&text).await;
    assert!(found.starts_with("DIR/pipeline.yaml:6:1"), "{found}");
    assert!(
        found.contains("unknown field `transfrom`, expected one of"),
        "{found}"
    );
}

#[tokio::test]
async fn wrong_types_and_unknown_kinds() {
    let found = problems(&GOOD.replace(
        "sinks:\n  - kind: parquet",
        "parallelism: many\nsinks:\n  - kind: parquet",
    ))
    .await;
    assert!(
        found.starts_with("DIR/pipeline.yaml:9:14: parallelism: invalid type: string \"many\""),
        "{found}"
    );
    let found = problems(&GOOD.replace("kind: parquet", "kind: s3")).await;
    assert!(
        found.contains(
            "pipeline.yaml:10:11: sinks[0].kind: unknown variant `s3`, expected one of `parquet`"
        ),
        "{found}"
    );
    assert!(found.contains("hint: `kind` names a connector"), "{found}");
}

#[tokio::test]
async fn sql_errors_name_the_columns() {
    let found = problems(&GOOD.replace("WHERE status >= 500", "WHERE staus >= 500")).await;
    assert!(
        found.starts_with("DIR/pipeline.yaml:8:8: transform.sql: SQL:"),
        "{found}"
    );
    assert!(found.contains("staus"), "{found}");
    assert!(
        found.contains("hint: table `requests` has columns timestamp, remote_addr"),
        "{found}"
    );
}

#[tokio::test]
async fn a_with_of_stages_is_refused_with_where_it_runs() {
    let staged = "WITH per_path AS (SELECT path, count(*) AS n FROM requests \
                  GROUP BY path, tumble(timestamp, INTERVAL '1' MINUTE)) \
                  SELECT path, max(n) AS peak FROM per_path GROUP BY path";
    let found = problems(&GOOD.replace(
        "SELECT status, path FROM requests WHERE status >= 500",
        staged,
    ))
    .await;
    assert!(found.contains("transform.sql: "), "{found}");
    assert!(
        found.contains("runs as stages in `weir job run` only"),
        "{found}"
    );
    // A WITH that neither groups nor joins is one job, planned as before: no such hint.
    let plain = "WITH errors AS (SELECT path, status FROM requests WHERE status >= 500) \
                 SELECT path FROM errors";
    let found = problems(&GOOD.replace(
        "SELECT status, path FROM requests WHERE status >= 500",
        plain,
    ))
    .await;
    assert_eq!(found, "");
}

#[tokio::test]
async fn connector_settings_are_checked_where_they_are() {
    let text = GOOD.replace(
        "    path: /tmp/warehouse\n",
        "    path: /tmp/warehouse\n    partition_by: [\"hour(\"]\n",
    );
    let found = problems(&text).await;
    assert!(
        found.starts_with("DIR/pipeline.yaml:12:19: sinks[0].partition_by:"),
        "{found}"
    );
    let found = problems(&GOOD.replace(
        "  - kind: parquet\n    path: /tmp/warehouse\n",
        "  - kind: postgres\n    url: \"nonsense=\"\n    table: a.b.c\n",
    ))
    .await;
    assert!(
        found.contains("sinks[0].url: not a PostgreSQL connection string"),
        "{found}"
    );
    assert!(
        found.contains("sinks[0].table: 'a.b.c' is not `table` or `schema.table`"),
        "{found}"
    );
}

#[tokio::test]
async fn missing_variables_and_bad_yaml() {
    let found = problems(&GOOD.replace("/tmp/warehouse", "${WEIR_TEST_SURELY_UNSET}")).await;
    assert!(
        found.starts_with(
            "DIR/pipeline.yaml:11:11: environment variable WEIR_TEST_SURELY_UNSET is not set"
        ),
        "{found}"
    );
    let found = problems("name: [unclosed\n").await;
    assert!(found.starts_with("DIR/pipeline.yaml:2:1:"), "{found}");
    // serde_yaml places the end of a file without a final newline on the line after the last;
    // the diagnostic stays inside the file (found by fuzz/pipeline_yaml).
    let found = problems("# only a comment").await;
    assert_eq!(
        found,
        "DIR/pipeline.yaml:1:17: missing field `name`\nDIR/pipeline.yaml:1:17: missing field `source`"
    );
    let found = problems("name: x\nsource: [unclosed").await;
    assert!(found.starts_with("DIR/pipeline.yaml:2:"), "{found}");
    let found = problems("a` b:").await;
    assert!(
        found.starts_with("DIR/pipeline.yaml:1:6: a` b: unknown field"),
        "{found}"
    );
}

/// Files that cannot be pipelines are refused at a bound, not read until memory runs out.
#[tokio::test]
async fn oversized_files_are_refused_before_they_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let size = crate::load::MAX_PIPELINE_FILE_BYTES as usize + 1;
    let big = write(
        &dir,
        "big.yaml",
        &format!("name: x\n#{}\n", "x".repeat(size)),
    );
    let found = load(&big).unwrap_err().to_string();
    assert!(found.contains("larger than 16777216 bytes"), "{found}");
    let found = load(std::path::Path::new("/dev/zero"))
        .unwrap_err()
        .to_string();
    assert!(found.contains("larger than"), "{found}");
}

#[tokio::test]
async fn several_pipelines_in_a_file_and_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let indented = GOOD.replace('\n', "\n    ");
    let two = format!(
        "pipelines:\n  - {}\n  - {}\n",
        indented.trim_end(),
        indented.trim_end().replace("weblogs", "other")
    );
    write(&dir, "a.yaml", &two);
    write(&dir, "b.yml", &GOOD.replace("weblogs", "third"));
    write(&dir, "notes.txt", "not a pipeline");
    let pipelines = load(dir.path()).unwrap();
    let names: Vec<&str> = pipelines.iter().map(|p| p.config.name.as_str()).collect();
    assert_eq!(names, ["weblogs", "other", "third"]);
    write(&dir, "c.yaml", GOOD);
    let pipelines = load(dir.path()).unwrap();
    let found: Vec<String> = validate(&pipelines, true)
        .await
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("c.yaml:1:7: name: a second pipeline is named weblogs"),
        "{found:?}"
    );
}

/// The problems of pipeline file `p.yaml` holding `text` when validated online (it must have
/// none offline).
async fn online_problems(text: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let pipelines = load(&write(&dir, "p.yaml", text)).unwrap();
    assert!(validate(&pipelines, true).await.is_empty());
    validate(&pipelines, false)
        .await
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_databases_are_reported_unless_offline() {
    let text = GOOD.replace(
        "  - kind: parquet\n    path: /tmp/warehouse\n",
        "  - kind: postgres\n    url: \"postgres://weir@127.0.0.1:1/db\"\n    table: requests\n",
    );
    let found = online_problems(&text).await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("p.yaml:11:10: sinks[0].url: PostgreSQL does not answer"),
        "{found:?}"
    );
}

/// Hostile pipeline files — nesting far past any real file (5,000 levels of block mappings
/// overflowed the stack of the YAML locator, aborting the process), an alias bomb, a huge
/// document of keys, control characters around valid YAML, broken interpolation — are errors
/// with a diagnostic, never a panic, a stack overflow or unbounded memory.
#[tokio::test]
async fn hostile_yaml_is_a_diagnostic_not_a_crash() {
    let deep_flow = format!("name: {}x{}\n", "[".repeat(10_000), "]".repeat(10_000));
    let deep_block: String = (0..5_000)
        .map(|depth| format!("{}k{depth}:\n", " ".repeat(depth)))
        .collect();
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..12 {
        let previous = format!("*a{}", level - 1);
        bomb.push_str(&format!(
            "a{level}: &a{level} [{}]\n",
            vec![previous; 10].join(", ")
        ));
    }
    bomb.push_str("name: *a11\n");
    let many_keys: String = (0..20_000).map(|i| format!("k{i}: {i}\n")).collect();
    let cases = [
        deep_flow,
        deep_block,
        bomb,
        many_keys,
        format!("{GOOD}\u{0}\u{feff}\n  - ]: [\n"),
        GOOD.replace("kind: file", "kind: &k file\n  <<: *k"),
        "${UNSET_WEIR_VARIABLE_FOR_TEST}".into(),
        "name: ${".into(),
    ];
    for (index, text) in cases.iter().enumerate() {
        let printed = tokio::time::timeout(std::time::Duration::from_secs(60), problems(text))
            .await
            .unwrap_or_else(|_| panic!("case {index} took over 60 s"));
        assert!(!printed.is_empty(), "case {index} was accepted");
    }
}

/// Every problem in one run, each at its own line and column with a hint about its field: a
/// misspelt format (at `format`, not at `source` with a hint about `kind`), an unknown field,
/// a wrong type, and a column the SQL names that the (intended) format does not have.
#[tokio::test]
async fn every_problem_of_a_file_is_reported_at_its_own_field() {
    let text = GOOD
        .replace("format: nginx_combined", "format: ngnix_combined")
        .replace("WHERE status >= 500", "WHERE staus >= 500")
        .replace(
            "    path: /tmp/warehouse\n",
            "    path: /tmp/warehouse\n    compresion: zstd\n    row_group_rows: lots\n",
        );
    let found = problems(&text).await;
    let lines: Vec<&str> = found.lines().collect();
    let expected_starts = [
        "DIR/pipeline.yaml:5:11: source.format: unknown variant `ngnix_combined`, expected one of",
        "  hint: did you mean `nginx_combined`?",
        "DIR/pipeline.yaml:8:8: transform.sql: SQL:",
    ];
    for (line, expected) in lines.iter().zip(expected_starts) {
        assert!(
            line.starts_with(expected),
            "{line:?} should start {expected:?} in\n{found}"
        );
    }
    assert!(
        found.contains("hint: table `requests` has columns timestamp, remote_addr"),
        "the columns of the format meant (nginx_combined):\n{found}"
    );
    assert!(
        found.contains("DIR/pipeline.yaml:12:5: sinks[0]: unknown field `compresion`"),
        "{found}"
    );
    assert!(
        found.contains("hint: did you mean `compression`?"),
        "{found}"
    );
    assert!(
        found.contains(
            "DIR/pipeline.yaml:13:21: sinks[0].row_group_rows: invalid type: string \"lots\""
        ),
        "{found}"
    );
    let count = found.lines().filter(|l| l.starts_with("DIR/")).count();
    assert_eq!(count, 4, "four problems, each once:\n{found}");
}

/// A kafka source's far cluster is checked too: nothing listening there is reported at the
/// source's `bootstrap`, with the hint, unless offline.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_kafka_source_is_reported_at_its_bootstrap() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    let text = GOOD.replace(
        "  kind: file\n  paths: [/var/log/nginx/access.log*]\n",
        &format!("  kind: kafka\n  bootstrap: \"{address}\"\n  topic: web-logs\n"),
    );
    let found = online_problems(&text).await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains(&format!(
            "p.yaml:4:14: source.bootstrap: cluster {address} cannot be used: nothing accepts connections"
        )),
        "{found:?}"
    );
    assert!(found[0].contains("hint: "), "{found:?}");
}

const WITH_TABLE: &str = "  sql: >
    SELECT r.status, s.meaning FROM requests r
    LEFT JOIN statuses s ON CAST(r.status AS VARCHAR) = s._key
  tables:
    - { name: statuses, topic: http-statuses, schema: \"meaning:string\" }
";

#[tokio::test]
async fn declared_tables_are_planned_with_the_query_offline() {
    let good = GOOD.replace(
        "  sql: SELECT status, path FROM requests WHERE status >= 500\n",
        WITH_TABLE,
    );
    assert_eq!(problems(&good).await, "");
    // A column the table does not have: the hint lists the table's columns.
    let found = problems(&good.replace("s.meaning", "s.reason")).await;
    assert!(found.contains("transform.sql"), "{found}");
    assert!(found.contains("table `statuses` has _key, _timestamp and meaning"), "{found}");
    // A table the query does not join.
    let unjoined = good
        .replace("LEFT JOIN statuses s ON CAST(r.status AS VARCHAR) = s._key", "")
        .replace("s.meaning", "r.path");
    let found = problems(&unjoined).await;
    assert!(
        found.contains("tables are declared but the query joins none"),
        "{found}"
    );
    // A schema that does not parse, a topic that cannot be one, a name taken twice.
    let found = problems(&good.replace("meaning:string", "meaning:text")).await;
    assert!(found.contains("transform.tables: table statuses:"), "{found}");
    let found = problems(&good.replace("topic: http-statuses", "topic: \"bad topic\"")).await;
    assert!(found.contains("transform.tables[0].topic"), "{found}");
    let found = problems(&good.replace("name: statuses", "name: requests")).await;
    assert!(found.contains("transform.tables[0].name"), "{found}");
}

#[tokio::test]
async fn an_updating_aggregate_needs_sinks_that_apply_upserts() {
    let text = GOOD.replace(
        "SELECT status, path FROM requests WHERE status >= 500",
        "SELECT path, count(*) AS hits FROM requests GROUP BY path",
    );
    // Parquet files are append-only: refused, naming the sink and the ones that can.
    let found = problems(&text).await;
    assert!(found.contains("transform.sql"), "{found}");
    assert!(found.contains("updating aggregate"), "{found}");
    assert!(found.contains("sinks[0] (parquet)"), "{found}");
    assert!(found.contains("postgres sink"), "{found}");
    // A table keyed by the group, a compacted topic, or stdout apply them.
    let postgres = "  - kind: postgres\n    url: postgres://weir@127.0.0.1/weir\n    table: hits\n";
    let kafka = "  - kind: kafka\n    bootstrap: 127.0.0.1:9092\n    topic: hits\n";
    for sinks in [postgres, kafka, "  - kind: stdout\n"] {
        let text = text.replace("  - kind: parquet\n    path: /tmp/warehouse\n", sinks);
        assert_eq!(problems(&text).await, "", "{sinks}");
    }
}

#[tokio::test]
async fn a_sink_key_column_is_checked_against_the_rows_the_query_gives() {
    let kafka = |key_column: &str| {
        format!("  - kind: kafka\n    bootstrap: 127.0.0.1:9092\n    topic: hits\n    key_column: {key_column}\n")
    };
    let with_sink = |text: &str, sink: &str| text.replace("  - kind: parquet\n    path: /tmp/warehouse\n", sink);
    // A stream's rows keyed by one of their columns: fine; by one they lack: pointed at.
    assert_eq!(problems(&with_sink(GOOD, &kafka("path"))).await, "");
    let found = problems(&with_sink(GOOD, &kafka("host"))).await;
    assert!(found.contains("sinks[0].key_column: no column 'host' in the rows (they have status, path)"), "{found}");
    // Without a transform the rows are the topic's columns.
    let untransformed = with_sink(GOOD, &kafka("no_such_column")).replace(
        "transform:\n  table: requests\n  sql: SELECT status, path FROM requests WHERE status >= 500\n",
        "",
    );
    let found = problems(&untransformed).await;
    assert!(found.contains("sinks[0].key_column: no column 'no_such_column'"), "{found}");
    // An updating aggregate is keyed by its group: a kafka sink's key_column is refused, a
    // postgres sink's must not be one of the row's columns.
    let updating = GOOD.replace(
        "SELECT status, path FROM requests WHERE status >= 500",
        "SELECT path, count(*) AS hits FROM requests GROUP BY path",
    );
    let found = problems(&with_sink(&updating, &kafka("path"))).await;
    assert!(found.contains("sinks[0].key_column: an updating aggregate's records are keyed by their group"), "{found}");
    let postgres = |key_column: &str| {
        format!("  - kind: postgres\n    url: postgres://weir@127.0.0.1/weir\n    table: hits\n    key_column: {key_column}\n")
    };
    let found = problems(&with_sink(&updating, &postgres("hits"))).await;
    assert!(found.contains("sinks[0].key_column: the rows have a column hits already"), "{found}");
    assert_eq!(problems(&with_sink(&updating, &postgres("page"))).await, "");
}

const WITH_STREAM: &str = "  sql: >
    SELECT r.path, d.version FROM requests r JOIN deploys d ON r.path = d.path
     AND d.at BETWEEN r.timestamp - INTERVAL '1' MINUTE AND r.timestamp
  streams:
    - { name: deploys, topic: deploys, schema: \"path:string,at:timestamp,version:string\" }
";

#[tokio::test]
async fn declared_streams_are_planned_with_the_query_offline() {
    let good = GOOD.replace(
        "  sql: SELECT status, path FROM requests WHERE status >= 500\n",
        WITH_STREAM,
    );
    assert_eq!(problems(&good).await, "");
    // A column the stream does not have: the hint lists the stream's columns.
    let found = problems(&good.replace("d.version FROM", "d.release FROM")).await;
    assert!(found.contains("transform.sql"), "{found}");
    assert!(
        found.contains("stream `deploys` has _key, _timestamp and path, at, version"),
        "{found}"
    );
    // Joined without a time bound: not an interval join.
    let unbounded = good.replace(
        "\n     AND d.at BETWEEN r.timestamp - INTERVAL '1' MINUTE AND r.timestamp",
        "",
    );
    let found = problems(&unbounded).await;
    assert!(found.contains("transform.sql"), "{found}");
    // A name or topic taken twice, a schema that does not parse.
    let found = problems(&good.replace("name: deploys", "name: requests")).await;
    assert!(found.contains("transform.streams[0].name"), "{found}");
    let found = problems(&good.replace("topic: deploys", "topic: weblogs-raw")).await;
    assert!(found.contains("transform.streams[0].topic"), "{found}");
    let found = problems(&good.replace("version:string", "version:text")).await;
    assert!(found.contains("transform.streams: stream deploys:"), "{found}");
    // Raw lines have no columns to join on.
    let found = problems(&good.replace("format: nginx_combined", "format: raw")).await;
    assert!(found.contains("not raw lines"), "{found}");
}

#[tokio::test]
async fn a_pipeline_without_sinks_is_told_every_kind_of_sink() {
    let text = GOOD.replace(
        "sinks:\n  - kind: parquet\n    path: /tmp/warehouse\n",
        "sinks: []\n",
    );
    let found = problems(&text).await;
    assert!(found.contains("the pipeline has no sinks"), "{found}");
    // The hint lists the registry's kinds, the `kafka` sink among them.
    assert!(
        found.contains("add `sinks:` with at least one of parquet, postgres, kafka, stdout"),
        "{found}"
    );
}
