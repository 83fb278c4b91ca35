//! The PostgreSQL sink against a real server: `WEIR_TEST_POSTGRES_URL` (scripts/test.sh starts
//! one with scripts/postgres/start.sh and sets it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Int64Array, StringArray, TimestampMillisecondArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use tokio::net::{TcpListener, TcpStream};
use weir_connectors::postgres::{PostgresSink, PostgresSinkConfig};
use weir_connectors::sink::{Changes, Sink, SinkOffsets};
use weir_connectors::ConnectorError;

fn url() -> String {
    std::env::var("WEIR_TEST_POSTGRES_URL").expect(
        "WEIR_TEST_POSTGRES_URL is not set: these tests need a PostgreSQL server \
         (scripts/postgres/start.sh starts one and prints its URL)",
    )
}

async fn client() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// A table name no other test run uses.
fn unique(prefix: &str) -> String {
    format!("{prefix}_{}_{}", std::process::id(), rand_suffix())
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        % 1_000_000_007
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            true,
        ),
        Field::new("status", DataType::Int64, true),
        Field::new("path", DataType::Utf8, true),
    ]))
}

fn rows(from: i64, count: i64) -> RecordBatch {
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(TimestampMillisecondArray::from_iter_values(
                (from..from + count).map(|i| 1_795_957_200_000 + i * 1000),
            )),
            Arc::new(Int64Array::from_iter(
                (from..from + count).map(|i| (i % 3 != 2).then_some(200 + i)),
            )),
            Arc::new(StringArray::from_iter_values(
                (from..from + count).map(|i| format!("/p/{i}\t\"quoted\"\n")),
            )),
        ],
    )
    .unwrap()
}

fn offsets(pairs: &[(i32, i64)]) -> SinkOffsets {
    pairs.iter().copied().collect()
}

async fn count(table: &str) -> i64 {
    client()
        .await
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn rows_and_offsets_commit_together_and_resume() {
    let table = unique("requests");
    let config = PostgresSinkConfig::new(&url(), &table);
    let mut sink = PostgresSink::new(config.clone(), &table, "weblogs").unwrap();
    assert_eq!(sink.open(schema()).await.unwrap(), SinkOffsets::new());
    sink.write(&rows(0, 5)).await.unwrap();
    assert_eq!(
        count(&table).await,
        0,
        "the table exists, rows wait for the commit"
    );
    sink.commit(&offsets(&[(0, 3), (1, 2)])).await.unwrap();
    assert_eq!(count(&table).await, 5);
    let row = client()
        .await
        .query_one(
            &format!("SELECT timestamp, status, path FROM {table} WHERE path LIKE '/p/2%'"),
            &[],
        )
        .await
        .unwrap();
    let time: std::time::SystemTime = row.get(0);
    assert_eq!(
        time.duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
        1_795_957_202_000
    );
    assert_eq!(row.get::<_, Option<i64>>(1), None);
    assert_eq!(row.get::<_, String>(2), "/p/2\t\"quoted\"\n");
    let mut reopened = PostgresSink::new(config, &table, "weblogs").unwrap();
    assert_eq!(
        reopened.open(schema()).await.unwrap(),
        offsets(&[(0, 3), (1, 2)])
    );
}

#[tokio::test]
async fn a_commit_whose_reply_was_lost_is_not_repeated_and_a_second_writer_is_refused() {
    let table = unique("requests");
    let config = PostgresSinkConfig::new(&url(), &table);
    let mut first = PostgresSink::new(config.clone(), &table, "weblogs").unwrap();
    let mut retry = PostgresSink::new(config.clone(), &table, "weblogs").unwrap();
    let mut stranger = PostgresSink::new(config, &table, "weblogs").unwrap();
    for sink in [&mut first, &mut retry, &mut stranger] {
        sink.open(schema()).await.unwrap();
    }
    first.write(&rows(0, 3)).await.unwrap();
    first.commit(&offsets(&[(0, 3)])).await.unwrap();
    // The same commit again from a sink that never heard back: recognised, nothing doubled.
    retry.write(&rows(0, 3)).await.unwrap();
    retry.commit(&offsets(&[(0, 3)])).await.unwrap();
    assert_eq!(count(&table).await, 3);
    retry.write(&rows(3, 2)).await.unwrap();
    retry.commit(&offsets(&[(0, 5)])).await.unwrap();
    assert_eq!(count(&table).await, 5);
    // A writer whose idea of the offsets is stale and differs: refused, not merged.
    stranger.write(&rows(0, 4)).await.unwrap();
    let error = stranger.commit(&offsets(&[(0, 4)])).await.unwrap_err();
    assert!(error.to_string().contains("another copy"), "{error}");
    assert_eq!(count(&table).await, 5);
}

/// Copies of a pipeline writing one table, each its own partitions (what the chart's replicas
/// do): disjoint commits both land; a copy whose partition moved to another is fenced and its
/// rows stay out; two first commits of one partition at once: exactly one lands.
#[tokio::test]
async fn copies_share_partitions_and_a_copy_that_lost_one_is_fenced() {
    let table = unique("shared");
    let config = PostgresSinkConfig::new(&url(), &table);
    let sink = || PostgresSink::new(config.clone(), &table, "weblogs").unwrap();
    let (mut a, mut b) = (sink(), sink());
    assert!(a.shares_partitions());
    a.open(schema()).await.unwrap();
    b.open(schema()).await.unwrap();
    a.write(&rows(0, 3)).await.unwrap();
    a.commit(&offsets(&[(0, 2), (1, 1)])).await.unwrap();
    b.write(&rows(100, 4)).await.unwrap();
    b.commit(&offsets(&[(2, 4), (3, 0)])).await.unwrap();
    assert_eq!(count(&table).await, 7);
    // Partition 1 moves to a new writer: it starts from a's offsets and moves them on.
    let mut moved = sink();
    let committed = moved.open(schema()).await.unwrap();
    assert_eq!(committed, offsets(&[(0, 2), (1, 1), (2, 4), (3, 0)]));
    moved.write(&rows(200, 2)).await.unwrap();
    moved.commit(&offsets(&[(1, 3)])).await.unwrap();
    // a has not heard: its commit naming partition 1 is fenced, none of its rows land.
    a.write(&rows(300, 5)).await.unwrap();
    let error = a.commit(&offsets(&[(0, 4), (1, 4)])).await.unwrap_err();
    assert!(matches!(error, ConnectorError::Fenced(_)), "{error}");
    assert_eq!(count(&table).await, 9);
    // Two writers' first commits of partition 4 at once.
    let (mut c, mut d) = (sink(), sink());
    c.open(schema()).await.unwrap();
    d.open(schema()).await.unwrap();
    c.write(&rows(400, 1)).await.unwrap();
    d.write(&rows(500, 2)).await.unwrap();
    let (to_c, to_d) = (offsets(&[(4, 1)]), offsets(&[(4, 2)]));
    let (from_c, from_d) = tokio::join!(c.commit(&to_c), d.commit(&to_d));
    let landed_rows = match (from_c, from_d) {
        (Ok(()), Err(ConnectorError::Fenced(_))) => 1,
        (Err(ConnectorError::Fenced(_)), Ok(())) => 2,
        other => panic!("not exactly one first commit landed: {other:?}"),
    };
    assert_eq!(count(&table).await, 9 + landed_rows);
}

#[tokio::test]
async fn an_existing_table_is_checked() {
    let table = unique("existing");
    client()
        .await
        .batch_execute(&format!(
            "CREATE TABLE {table} (timestamp timestamptz, status text, extra int)"
        ))
        .await
        .unwrap();
    let mut sink = PostgresSink::new(PostgresSinkConfig::new(&url(), &table), &table, "t").unwrap();
    let error = sink.open(schema()).await.unwrap_err().to_string();
    assert!(error.contains("column \"path\" does not exist"), "{error}");
    assert!(
        error.contains("the table has timestamp, status, extra"),
        "{error}"
    );
    client()
        .await
        .batch_execute(&format!("ALTER TABLE {table} ADD COLUMN path varchar(100)"))
        .await
        .unwrap();
    let error = sink.open(schema()).await.unwrap_err().to_string();
    assert!(
        error.contains("status is text in the table but Int64 in the rows"),
        "{error}"
    );
    let mut config = PostgresSinkConfig::new(&url(), &unique("absent"));
    config.create_table = false;
    let error = PostgresSink::new(config, "s", "t")
        .unwrap()
        .open(schema())
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("does not exist (and create_table is false)"),
        "{error}"
    );
}

/// `(key, hits)` changes: `None` deletes the key.
fn changes(rows: &[(&str, Option<i64>)]) -> Changes {
    let schema = Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, true),
        Field::new("hits", DataType::Int64, true),
    ]));
    let paths = StringArray::from_iter(rows.iter().map(|(key, hits)| hits.map(|_| *key)));
    let hits = Int64Array::from_iter(rows.iter().map(|(_, hits)| *hits));
    Changes {
        keys: rows.iter().map(|(key, _)| key.to_string()).collect(),
        rows: RecordBatch::try_new(schema, vec![Arc::new(paths), Arc::new(hits)]).unwrap(),
        deleted: rows.iter().map(|(_, hits)| hits.is_none()).collect(),
    }
}

async fn view(table: &str) -> Vec<(String, String, i64)> {
    client()
        .await
        .query(
            &format!("SELECT _key, path, hits FROM {table} ORDER BY _key"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect()
}

/// An updating aggregate's changes: upserted by key and deleted by tombstone, the latest
/// change of each key winning, committed with the offsets; a reopened sink resumes.
#[tokio::test]
async fn changes_upsert_and_delete_rows_by_key() {
    let table = unique("view");
    let config = PostgresSinkConfig::new(&url(), &table);
    let mut sink = PostgresSink::new(config.clone(), &table, "view").unwrap();
    sink.expect_changes().unwrap();
    let schema = changes(&[]).rows.schema();
    assert_eq!(sink.open(schema.clone()).await.unwrap(), SinkOffsets::new());
    sink.apply(&changes(&[
        ("/a", Some(1)),
        ("/b", Some(1)),
        ("/a", Some(2)),
    ]))
    .await
    .unwrap();
    sink.apply(&changes(&[("/c", Some(5)), ("/b", None)]))
        .await
        .unwrap();
    assert_eq!(view(&table).await, vec![], "changes wait for the commit");
    sink.commit(&offsets(&[(0, 5)])).await.unwrap();
    let row = |key: &str, hits| (key.to_string(), key.to_string(), hits);
    assert_eq!(view(&table).await, vec![row("/a", 2), row("/c", 5)]);
    // Deleted then back, updated, deleted: across one commit and into the next.
    sink.apply(&changes(&[("/b", Some(7)), ("/a", Some(3)), ("/c", None)]))
        .await
        .unwrap();
    sink.commit(&offsets(&[(0, 8)])).await.unwrap();
    assert_eq!(view(&table).await, vec![row("/a", 3), row("/b", 7)]);
    let mut reopened = PostgresSink::new(config, &table, "view").unwrap();
    reopened.expect_changes().unwrap();
    assert_eq!(
        reopened.open(schema.clone()).await.unwrap(),
        offsets(&[(0, 8)])
    );
    reopened
        .apply(&changes(&[("/a", None), ("/d", Some(1))]))
        .await
        .unwrap();
    reopened.commit(&offsets(&[(0, 10)])).await.unwrap();
    assert_eq!(view(&table).await, vec![row("/b", 7), row("/d", 1)]);
    let key_type: String = client()
        .await
        .query_one(
            "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_index i JOIN pg_attribute a \
             ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
             WHERE i.indrelid = to_regclass($1) AND i.indisprimary",
            &[&table],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(key_type, "text", "the created table's primary key is _key");
}

/// An existing table must be keyed by the key column; rows with a column of the key's name
/// need another name; appending sinks refuse changes.
#[tokio::test]
async fn changes_need_a_table_keyed_by_the_key_column() {
    let table = unique("unkeyed");
    client()
        .await
        .batch_execute(&format!(
            "CREATE TABLE {table} (_key text, path text, hits bigint)"
        ))
        .await
        .unwrap();
    let schema = changes(&[]).rows.schema();
    let mut sink = PostgresSink::new(PostgresSinkConfig::new(&url(), &table), &table, "t").unwrap();
    sink.expect_changes().unwrap();
    let error = sink.open(schema.clone()).await.unwrap_err().to_string();
    assert!(
        error.contains("no primary key or unique index on _key alone"),
        "{error}"
    );
    client()
        .await
        .batch_execute(&format!("CREATE UNIQUE INDEX ON {table} (_key)"))
        .await
        .unwrap();
    sink.open(schema.clone()).await.unwrap();
    sink.apply(&changes(&[("/x", Some(4))])).await.unwrap();
    sink.commit(&offsets(&[(0, 1)])).await.unwrap();
    assert_eq!(view(&table).await, vec![("/x".into(), "/x".into(), 4)]);

    let mut config = PostgresSinkConfig::new(&url(), &unique("clash"));
    config.key_column = "path".into();
    let mut sink = PostgresSink::new(config, "s", "t").unwrap();
    sink.expect_changes().unwrap();
    let error = sink.open(schema).await.unwrap_err().to_string();
    assert!(
        error.contains("the rows have a column path already"),
        "{error}"
    );
}

/// A TCP proxy to the database that can refuse and cut connections.
struct Proxy {
    port: u16,
    up: Arc<AtomicBool>,
}

impl Proxy {
    async fn start(target: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(false));
        let accepting = Arc::clone(&up);
        tokio::spawn(async move {
            loop {
                let (mut client, _) = listener.accept().await.unwrap();
                if !accepting.load(Ordering::SeqCst) {
                    continue; // dropped: the database is "down"
                }
                let mut server = TcpStream::connect(&target).await.unwrap();
                let alive = Arc::clone(&accepting);
                tokio::spawn(async move {
                    let copy = tokio::io::copy_bidirectional(&mut client, &mut server);
                    tokio::pin!(copy);
                    loop {
                        tokio::select! {
                            _ = &mut copy => return,
                            _ = tokio::time::sleep(Duration::from_millis(20)) => {
                                if !alive.load(Ordering::SeqCst) { return; }
                            }
                        }
                    }
                });
            }
        });
        Proxy { port, up }
    }
}

#[tokio::test]
async fn the_database_going_away_is_retried_without_loss() {
    let target_config: tokio_postgres::Config = url().parse().unwrap();
    let host = match &target_config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(host) => host.clone(),
        other => panic!("the test database must be reached over TCP, not {other:?}"),
    };
    let port = target_config.get_ports().first().copied().unwrap_or(5432);
    let proxy = Proxy::start(format!("{host}:{port}")).await;
    let proxied = format!("postgres://postgres@127.0.0.1:{}/postgres", proxy.port);
    let table = unique("flaky");
    let mut config = PostgresSinkConfig::new(&proxied, &table);
    config.retry_backoff_ms = 50;
    config.retry_backoff_max_ms = 200;
    config.connect_timeout_ms = 500;
    let mut sink = PostgresSink::new(config, &table, "weblogs").unwrap();
    // Down at the start: open waits for it.
    let up = Arc::clone(&proxy.up);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        up.store(true, Ordering::SeqCst);
    });
    sink.open(schema()).await.unwrap();
    // Down at a commit: the batch is kept and committed once it is back.
    sink.write(&rows(0, 1000)).await.unwrap();
    proxy.up.store(false, Ordering::SeqCst);
    let up = Arc::clone(&proxy.up);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        up.store(true, Ordering::SeqCst);
    });
    sink.commit(&offsets(&[(0, 1000)])).await.unwrap();
    assert_eq!(count(&table).await, 1000);
    let mut reopened =
        PostgresSink::new(PostgresSinkConfig::new(&url(), &table), &table, "weblogs").unwrap();
    assert_eq!(
        reopened.open(schema()).await.unwrap(),
        offsets(&[(0, 1000)])
    );
}

/// A file of the TLS set scripts/postgres/start.sh made for the server at `url()`.
fn tls_file(name: &str) -> String {
    let config: tokio_postgres::Config = url().parse().unwrap();
    let port = config.get_ports()[0];
    let path = format!("/tmp/weir-postgres-{port}/tls/{name}");
    assert!(
        std::path::Path::new(&path).exists(),
        "{path} is missing: scripts/postgres/start.sh makes it"
    );
    path
}

fn tls_url(user: &str, host: &str, parameters: &str) -> String {
    let config: tokio_postgres::Config = url().parse().unwrap();
    let port = config.get_ports()[0];
    format!("postgres://{user}@{host}:{port}/postgres?{parameters}")
}

async fn reach(url: &str) -> Result<(), weir_connectors::registry::Unreachable> {
    use weir_connectors::registry::SinkConnector;
    let config = PostgresSinkConfig::new(url, "unused");
    assert_eq!(config.problems(), Vec::<String>::new(), "{url}");
    SinkConnector::reach(&config, Duration::from_secs(10)).await
}

#[tokio::test]
async fn the_sink_writes_over_verified_tls_and_says_why_a_connection_is_refused() {
    let ca = tls_file("ca.pem");
    // weir_tls_only may not log in without TLS: rows committed through it went over TLS.
    let verified = tls_url(
        "weir_tls_only",
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let table = unique("tls_requests");
    let mut sink = PostgresSink::new(
        PostgresSinkConfig::new(&verified, &table),
        &table,
        "weblogs",
    )
    .unwrap();
    sink.open(schema()).await.unwrap();
    sink.write(&rows(0, 7)).await.unwrap();
    sink.commit(&offsets(&[(0, 7)])).await.unwrap();
    let paths: Vec<String> = client()
        .await
        .query(&format!("SELECT path FROM {table} ORDER BY path"), &[])
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let mut expected: Vec<String> = (0..7).map(|i| format!("/p/{i}\t\"quoted\"\n")).collect();
    expected.sort();
    assert_eq!(paths, expected);

    // libpq's default (prefer) takes TLS when the server offers it; verify-ca checks the chain
    // but not the name, so 127.0.0.1 passes with a certificate that names only localhost.
    reach(&tls_url("weir_tls_only", "localhost", ""))
        .await
        .unwrap();
    reach(&tls_url(
        "weir_tls_only",
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={ca}"),
    ))
    .await
    .unwrap();
    let client_cert = format!(
        "sslmode=verify-full&sslrootcert={ca}&sslcert={}&sslkey={}",
        tls_file("client.pem"),
        tls_file("client.key")
    );
    reach(&tls_url("weir_cert", "localhost", &client_cert))
        .await
        .unwrap();

    let refusals = [
        (
            tls_url("weir_tls_only", "127.0.0.1", "sslmode=disable"),
            "no encryption",
            "sslmode=verify-full",
        ),
        (
            tls_url(
                "weir_tls_only",
                "127.0.0.1",
                &format!("sslmode=verify-full&sslrootcert={ca}"),
            ),
            "not valid for name",
            "verify-ca",
        ),
        (
            tls_url(
                "weir_tls_only",
                "localhost",
                &format!(
                    "sslmode=verify-full&sslrootcert={}",
                    tls_file("other-ca.pem")
                ),
            ),
            "UnknownIssuer",
            "not signed by a CA in sslrootcert",
        ),
        (
            tls_url(
                "weir_cert",
                "localhost",
                &format!("sslmode=verify-full&sslrootcert={ca}"),
            ),
            "certificate",
            "sslcert=PATH",
        ),
    ];
    for (url, message, hint) in refusals {
        let refusal = reach(&url).await.unwrap_err();
        assert!(refusal.message.contains(message), "{url}: {refusal:?}");
        assert!(
            refusal.hint.as_deref().unwrap_or("").contains(hint),
            "{url}: {refusal:?}"
        );
    }
}

#[test]
fn tls_files_that_cannot_be_used_are_configuration_problems() {
    use weir_connectors::registry::SinkConnector;
    let config = PostgresSinkConfig::new(
        "postgres://weir@db/x?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
        "t",
    );
    let problems = SinkConnector::problems(&config);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("sslrootcert") && problems[0].contains("/nonexistent/ca.pem"));
    let config = PostgresSinkConfig::new("postgres://weir@db/x?sslmode=sometimes", "t");
    assert!(SinkConnector::problems(&config)[0].contains("sslmode=sometimes"));
}
