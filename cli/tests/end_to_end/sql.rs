//! `weir sql` as a process against a broker process: topics are tables (values, `_partition`, …),
//! output as JSON lines, CSV or a table; an unknown topic is a clear error.

use crate::support::broker;

use std::process::Command;
use std::time::Duration;

use broker::BrokerProcess;
use rdkafka::config::ClientConfig;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

fn produce_weblogs(bootstrap: &str) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    for i in 0..30 {
        let status = [200, 404, 500][i % 3];
        let value = format!(
            r#"{{"path": "/p{i}", "status": {status}, "bytes": {}}}"#,
            i * 10
        );
        let key = i.to_string();
        producer
            .send(BaseRecord::to("weblogs").key(&key).payload(&value))
            .unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
}

/// 30 records in one partition, one a second from 2023-11-14T22:13:20Z (1,700,000,000,000 ms).
fn produce_timed(bootstrap: &str) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    for id in 0..30i64 {
        let value = format!(r#"{{"id": {id}}}"#);
        let trace = format!("t{id}");
        let headers = OwnedHeaders::new().insert(Header {
            key: "trace",
            value: Some(&trace),
        });
        let record = BaseRecord::<(), _>::to("timed")
            .headers(headers)
            .partition(0)
            .timestamp(1_700_000_000_000 + id * 1000)
            .payload(&value);
        producer.send(record).map_err(|(e, _)| e).unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
}

fn weir_sql(bootstrap: &str, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["sql", "-b", bootstrap])
        .args(args)
        .output()
        .expect("weir sql runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn topics_are_tables_for_ad_hoc_queries() {
    let _slot = crate::support::test_slot();
    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("weblogs", 2);
    broker.create_topic("timed", 1);
    produce_weblogs(&bootstrap);

    let query = "SELECT status, count(*) AS n, sum(bytes) AS bytes FROM weblogs \
                 GROUP BY status ORDER BY status";
    let (ok, stdout, stderr) = weir_sql(&bootstrap, &["--format", "json", query]);
    assert!(ok, "{stderr}");
    let rows: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let expected = [(200, 1350), (404, 1450), (500, 1550)]
        .map(|(status, bytes)| serde_json::json!({"status": status, "n": 10, "bytes": bytes}));
    assert_eq!(rows, expected);

    let (ok, stdout, stderr) = weir_sql(
        &bootstrap,
        &["--format", "csv", "SELECT count(DISTINCT _partition) AS partitions, max(_offset) >= 0 AS offsets FROM weblogs"],
    );
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "partitions,offsets\n2,true");

    let (ok, stdout, _) = weir_sql(&bootstrap, &["SELECT path FROM weblogs WHERE _key = '7'"]);
    assert!(ok);
    assert!(
        stdout.contains("| path") && stdout.contains("/p7"),
        "{stdout}"
    );

    // Filters on _partition, _offset and _timestamp limit what is read: with at most 10 records
    // read per topic, a whole-topic scan fails and the narrowed ones succeed.
    let (ok, _, stderr) = weir_sql(
        &bootstrap,
        &["--max-records", "10", "SELECT count(*) FROM weblogs"],
    );
    assert!(!ok && stderr.contains("more than 10 records"), "{stderr}");
    let narrowed =
        "SELECT count(*) AS n, min(_offset) AS first, max(_offset) AS last FROM weblogs \
                    WHERE _partition = 0 AND _offset >= 2 AND _offset < 7";
    let (ok, stdout, stderr) = weir_sql(
        &bootstrap,
        &["--max-records", "10", "--format", "csv", narrowed],
    );
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "n,first,last\n5,2,6");
    produce_timed(&bootstrap);
    let recent = "SELECT count(*) AS n, min(id) AS first FROM timed \
                  WHERE _timestamp >= TIMESTAMP '2023-11-14T22:13:45'";
    let (ok, stdout, stderr) = weir_sql(
        &bootstrap,
        &["--max-records", "10", "--format", "csv", recent],
    );
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "n,first\n5,25");
    // Headers are a JSON object text.
    let traced = r#"SELECT id, _headers FROM timed WHERE _headers LIKE '%"trace":"t7"%'"#;
    let (ok, stdout, stderr) = weir_sql(&bootstrap, &["--format", "json", traced]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), r#"{"id":7,"_headers":"{\"trace\":\"t7\"}"}"#);
    // tumble() is a plain function in ad-hoc queries: 30 records a second apart, 10 a window.
    let windows =
        "SELECT CAST(tumble(_timestamp, INTERVAL '10 seconds') AS BIGINT) AS w, count(*) AS n \
                   FROM timed GROUP BY 1 ORDER BY 1";
    let (ok, stdout, stderr) = weir_sql(&bootstrap, &["--format", "csv", windows]);
    assert!(ok, "{stderr}");
    assert_eq!(
        stdout.trim(),
        "w,n\n1700000000000,10\n1700000010000,10\n1700000020000,10"
    );

    let (ok, _, stderr) = weir_sql(&bootstrap, &["SELECT * FROM nothing_here"]);
    assert!(!ok);
    assert!(stderr.contains("no topic named nothing_here"), "{stderr}");
    the_prompt_is_one_session_that_only_reads(&bootstrap);
}

/// `weir sql` reading its statements from stdin, as a prompt.
fn weir_sql_prompt(bootstrap: &str, statements: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["sql", "-b", bootstrap, "--format", "csv"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("weir sql runs");
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, statements.as_bytes()).unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A view and a setting made at the prompt last for the statements after them; a statement that
/// would write a file is refused, and no file is written.
fn the_prompt_is_one_session_that_only_reads(bootstrap: &str) {
    let dir = tempfile::tempdir().unwrap();
    let copied = dir.path().join("copied.csv");
    let statements = format!(
        "CREATE VIEW failures AS SELECT path FROM weblogs WHERE status >= 500;\n\
         SET datafusion.execution.batch_size = 7;\n\
         SELECT count(*) AS failures FROM failures;\n\
         SHOW datafusion.execution.batch_size;\n\
         COPY (SELECT * FROM weblogs) TO '{}';\n\
         SELECT 1 AS still_here;\n",
        copied.display()
    );
    let (ok, stdout, stderr) = weir_sql_prompt(bootstrap, &statements);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("failures\n10\n"), "the view: {stdout}");
    assert!(
        stdout.contains("datafusion.execution.batch_size,7"),
        "the setting: {stdout}"
    );
    assert!(stdout.contains("still_here\n1\n"), "{stdout}");
    assert!(
        stderr.contains("COPY is refused: weir sql only reads"),
        "{stderr}"
    );
    assert!(!copied.exists(), "COPY wrote {}", copied.display());
}

/// A keyed topic of upserts and tombstones, as a job's updating aggregate writes it.
fn produce_view(bootstrap: &str) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .create()
        .unwrap();
    let records: [(Option<&str>, Option<&str>); 6] = [
        (Some("/a"), Some(r#"{"path": "/a", "hits": 1}"#)),
        (Some("/b"), Some(r#"{"path": "/b", "hits": 1}"#)),
        (Some("/a"), Some(r#"{"path": "/a", "hits": 2}"#)),
        (Some("/c"), Some(r#"{"path": "/c", "hits": 7}"#)),
        (Some("/b"), None),
        (None, Some(r#"{"path": "/unkeyed", "hits": 9}"#)),
    ];
    for (key, value) in records {
        let mut record = BaseRecord::<str, str>::to("hits").partition(0);
        if let Some(key) = key {
            record = record.key(key);
        }
        if let Some(value) = value {
            record = record.payload(value);
        }
        producer.send(record).map_err(|(e, _)| e).unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();
}

#[test]
fn a_topic_read_as_a_table_holds_the_latest_value_of_each_key() {
    let _slot = crate::support::test_slot();
    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("hits", 1);
    produce_view(&bootstrap);
    let query = "SELECT _key, path, hits FROM hits ORDER BY _key";
    // As a stream: every record with a value.
    let (ok, stdout, stderr) = weir_sql(&bootstrap, &["--format", "csv", query]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim().lines().count(), 1 + 5, "{stdout}");
    // As a table: /a's latest value, /b deleted by its tombstone, the unkeyed record left out.
    let (ok, stdout, stderr) = weir_sql(&bootstrap, &["--table", "hits", "--format", "csv", query]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "_key,path,hits\n/a,/a,2\n/c,/c,7");
    // Named otherwise; a filter on offsets applies to the table's rows and does not narrow what
    // is read (read up to offset 3 only, /b's tombstone at 4 would be missed and /b shown).
    let named = "SELECT path, hits FROM view WHERE _offset < 3 ORDER BY path";
    let (ok, stdout, stderr) = weir_sql(
        &bootstrap,
        &["--table", "view=hits", "--format", "csv", named],
    );
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "path,hits\n/a,2");
    // Ad-hoc joins: every record of the topic with the table's current value of its key.
    let joined = "SELECT h.path, h.hits, v.hits AS now FROM hits h JOIN view v ON h._key = v._key \
                  ORDER BY h._offset";
    let (ok, stdout, stderr) = weir_sql(
        &bootstrap,
        &["--table", "view=hits", "--format", "csv", joined],
    );
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "path,hits,now\n/a,1,2\n/a,2,2\n/c,7,7");
}
