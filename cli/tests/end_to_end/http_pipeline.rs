//! The `http` source end to end: concurrent clients POST nginx lines (some garbage) to a
//! `weir pipeline run` process; every request is answered 200 only once its lines are durable,
//! and the Parquet sink ends up with exactly the good lines — no loss, no duplicates: each line
//! carries its number in its user field, and the warehouse's rows are compared line by line.

use crate::support::access_log;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use weir_connectors::generator::AccessLogGenerator;
use weir_connectors::parquet::read_published;
use weir_connectors::weblog::LogFormat;

const CLIENTS: u64 = 8;
const REQUESTS: u64 = 25;
const LINES: u64 = 200;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Status and body of a POST; None while nothing listens yet.
fn post(port: u16, body: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    let head = format!("POST /ingest/web HTTP/1.1\r\nHost: test\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    stream.write_all(head.as_bytes()).ok()?;
    stream.write_all(body.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.get(9..12)?.parse().ok()?;
    Some((status, response.split_once("\r\n\r\n")?.1.to_string()))
}

/// How many rows name each line (`remote_user`).
fn rows_by_line(batches: &[RecordBatch]) -> BTreeMap<String, usize> {
    let mut rows = BTreeMap::new();
    for batch in batches {
        let column = batch
            .column_by_name("remote_user")
            .expect("a remote_user column");
        let users = cast(column, &DataType::Utf8).unwrap();
        let users = users.as_string::<i32>();
        for row in 0..users.len() {
            let user = if users.is_null(row) {
                "(null)"
            } else {
                users.value(row)
            };
            *rows.entry(user.to_string()).or_insert(0) += 1;
        }
    }
    rows
}

#[test]
fn concurrent_clients_get_their_lines_written_exactly_once() {
    let _slot = crate::support::test_slot();
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let warehouse = dir.path().join("warehouse");
    let config = dir.path().join("pipeline.yaml");
    std::fs::write(
        &config,
        format!(
            "name: web
source: {{ kind: http, listen: \"127.0.0.1:{port}\", format: nginx_combined }}
topic: {{ partitions: 3 }}
sinks:
  - {{ kind: parquet, path: {}, max_file_age_ms: 300 }}
",
            warehouse.display()
        ),
    )
    .unwrap();
    let mut pipeline = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["pipeline", "run"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("pipeline.log")).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while post(port, "").is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the endpoint never came up"
        );
        thread::sleep(Duration::from_millis(100));
    }
    let generator = AccessLogGenerator {
        format: LogFormat::NginxCombined,
        seed: 3,
        start_time_ms: 1_795_953_600_000,
        line_interval_ms: 10,
        bad_line_every: Some(97),
    };
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let generator = generator.clone();
            thread::spawn(move || {
                let (mut accepted, mut dead) = (0, 0);
                for request in 0..REQUESTS {
                    let first = (client * REQUESTS + request) * LINES;
                    let body: String = (first..first + LINES)
                        .map(|n| access_log::numbered_line(&generator, n) + "\n")
                        .collect();
                    let (status, answer) = post(port, &body).expect("an answer");
                    assert_eq!(status, 200, "{answer}");
                    let report: serde_json::Value = serde_json::from_str(&answer).unwrap();
                    accepted += report["accepted"].as_u64().unwrap();
                    dead += report["dead_letters"].as_u64().unwrap();
                }
                (accepted, dead)
            })
        })
        .collect();
    let (mut accepted, mut dead) = (0, 0);
    for client in clients {
        let (a, d) = client.join().unwrap();
        accepted += a;
        dead += d;
    }
    let total = CLIENTS * REQUESTS * LINES;
    let bad = (0..total).filter(|n| generator.is_bad(*n)).count() as u64;
    assert_eq!((accepted, dead), (total - bad, bad));
    let expected: BTreeMap<String, usize> = (0..total)
        .filter(|n| !generator.is_bad(*n))
        .map(|n| (format!("line-{n}"), 1))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let rows = loop {
        let rows: u64 = read_published(&warehouse, 10_000_000)
            .map(|(_, batches)| batches.iter().map(|b| b.num_rows() as u64).sum())
            .unwrap_or(0);
        if rows >= accepted || Instant::now() > deadline {
            break rows;
        }
        thread::sleep(Duration::from_millis(200));
    };
    // Rows arriving after all were there would be duplicates: look again a second later.
    thread::sleep(Duration::from_millis(1000));
    let (_, batches) = read_published(&warehouse, 10_000_000).unwrap();
    pipeline.kill().unwrap();
    pipeline.wait().unwrap();
    assert_eq!(rows, accepted, "rows in Parquet vs lines accepted");
    let written = rows_by_line(&batches);
    let missing: Vec<_> = expected
        .keys()
        .filter(|l| !written.contains_key(*l))
        .take(5)
        .collect();
    let twice: Vec<_> = written.iter().filter(|(_, n)| **n > 1).take(5).collect();
    assert!(
        written == expected,
        "the warehouse holds each good line once: {} rows for {} lines, missing e.g. {missing:?}, \
         more than once e.g. {twice:?}",
        written.values().sum::<usize>(),
        expected.len()
    );
}
