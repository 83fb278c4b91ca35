//! The main job, end to end, under kill -9: a generated nginx access log of 200,000 lines
//! (some of them garbage, rotated by rename halfway) is appended to while a `weir pipeline run`
//! process — file source → embedded broker → SQL → PostgreSQL, Parquet in a directory and
//! Parquet on an S3-compatible object store — is killed with -9 again and again and restarted.
//! At the end the PostgreSQL rows and each sink's Parquet rows must equal the parseable lines
//! exactly (line by line — each line carries its number — with its status and minute, against
//! the ground truth computed from the generator), and the dead-letter topic must hold exactly
//! the bad lines.
//!
//! Needs PostgreSQL (`WEIR_TEST_POSTGRES_URL`) and an S3-compatible server with the bucket
//! `weir-test` (`WEIR_TEST_S3_ENDPOINT`); scripts/test.sh starts both.

use crate::support::{access_log, committed, rng};

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use access_log::{differences, parquet_counts, postgres_counts, postgres_url, total, Counts};
use rng::Rng;
use weir_connectors::generator::AccessLogGenerator;

const LINES: u64 = 200_000;
const ROTATE_AT: u64 = 100_000;
const CHUNK_LINES: u64 = 2_000;
const CHUNK_PAUSE: Duration = Duration::from_millis(60);
const KILLS: usize = 6;

fn generator() -> AccessLogGenerator {
    access_log::generator(Some(997))
}

/// What the pipeline must end up with: counts of the good lines, and the bad lines.
fn ground_truth() -> (Counts, Vec<String>) {
    let (counts, bad) = access_log::ground_truth(&generator(), LINES);
    assert_eq!(
        bad.len() as u64,
        LINES / 997,
        "the generator's bad lines are the only bad ones"
    );
    (counts, bad)
}

/// Appends the log in chunks, renaming it away (and starting a new one) at `ROTATE_AT`.
fn write_log(dir: PathBuf) {
    let generator = generator();
    let live = dir.join("access.log");
    let mut file = File::create(&live).unwrap();
    let mut n = 0;
    while n < LINES {
        if n == ROTATE_AT {
            std::fs::rename(&live, dir.join("access.log.1")).unwrap();
            file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&live)
                .unwrap();
        }
        let mut chunk = String::new();
        let end = (n + CHUNK_LINES)
            .min(LINES)
            .min(if n < ROTATE_AT { ROTATE_AT } else { LINES });
        for line in n..end {
            chunk.push_str(&access_log::numbered_line(&generator, line));
            chunk.push('\n');
        }
        file.write_all(chunk.as_bytes()).unwrap();
        n = end;
        thread::sleep(CHUNK_PAUSE);
    }
}

struct PipelineProcess {
    config: PathBuf,
    data_dir: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl PipelineProcess {
    fn start(&mut self, until_caught_up: bool) {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
        command
            .args(["pipeline", "run"])
            .arg(&self.config)
            .arg("--data-dir")
            .arg(&self.data_dir);
        if until_caught_up {
            command.arg("--until-caught-up");
        }
        let child = command
            .env("RUST_LOG", "info")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    fn kill(&mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    fn wait(&mut self, timeout: Duration) {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "the final run failed:\n{}",
                    tail(&self.log)
                );
                return;
            }
            if Instant::now() > deadline {
                child.kill().unwrap();
                panic!(
                    "the final run did not finish in {timeout:?}:\n{}",
                    tail(&self.log)
                );
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

fn s3_endpoint() -> String {
    std::env::var("WEIR_TEST_S3_ENDPOINT").expect(
        "WEIR_TEST_S3_ENDPOINT is not set: this test needs an S3-compatible server (scripts/s3/start.sh)",
    )
}

/// The object store's settings, as YAML (a flow mapping) and as a map.
fn s3_options() -> BTreeMap<String, String> {
    [
        ("aws_endpoint", s3_endpoint()),
        ("aws_allow_http", "true".into()),
        ("aws_region", "us-east-1".into()),
        ("aws_access_key_id", "weir".into()),
        ("aws_secret_access_key", "weir-secret".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The dead letters, read back through a broker started on the pipeline's data directory.
fn dead_letters(data_dir: &Path, want: usize) -> Vec<String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bootstrap = format!("127.0.0.1:{port}");
    let mut broker = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args([
            "broker",
            "--listen",
            &bootstrap,
            "--metrics-listen",
            "off",
            "--data-dir",
        ])
        .arg(data_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let values = committed::values(
        &bootstrap,
        "weblogs-raw-dead-letters",
        1,
        want,
        Duration::from_secs(60),
    );
    broker.kill().unwrap();
    broker.wait().unwrap();
    let mut lines: Vec<String> = values
        .into_iter()
        .map(|v| String::from_utf8(v).unwrap())
        .collect();
    lines.sort();
    lines
}

#[test]
fn file_to_postgres_and_parquet_exactly_once_across_kills() {
    let _slot = crate::support::test_slot();
    let seed = Rng::seed_from_clock();
    println!("seed {seed}");
    let mut rng = Rng::new(seed);
    // Kept when the test fails (its logs and data tell why); removed at the end otherwise.
    let kept = tempfile::tempdir().unwrap().keep();
    println!("working directory {}", kept.display());
    let dir = KeptDir(kept);
    let table = format!("requests_{}", std::process::id());
    let warehouse = dir.path().join("warehouse");
    let bucket_warehouse = format!(
        "s3://weir-test/pipeline-crash-{}-{}/warehouse",
        std::process::id(),
        seed
    );
    let storage_options = s3_options()
        .iter()
        .map(|(k, v)| format!("{k}: \"{v}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let config = dir.path().join("pipeline.yaml");
    std::fs::write(
        &config,
        format!(
            r#"name: weblogs
source:
  kind: file
  paths: ["{logs}/access.log*"]
  format: nginx_combined
  rotate_wait_ms: 1000
  scan_interval_ms: 200
topic: {{ name: weblogs-raw, partitions: 2 }}
parallelism: 2
checkpoint_interval_ms: 300
transform:
  table: requests
  sql: SELECT remote_user AS line, date_trunc('minute', timestamp) AS minute, status, path, bytes FROM requests
sinks:
  - kind: postgres
    url: "{postgres}"
    table: {table}
    commit_interval_ms: 300
  - kind: parquet
    path: {warehouse}
    partition_by: ["hour(minute)"]
    max_file_age_ms: 700
  - kind: parquet
    path: {bucket_warehouse}
    storage_options: {{ {storage_options} }}
    partition_by: ["date(minute)"]
    max_file_age_ms: 900
"#,
            logs = dir.path().display(),
            postgres = postgres_url(),
            warehouse = warehouse.display(),
        ),
    )
    .unwrap();
    let (truth, mut bad_lines) = ground_truth();
    bad_lines.sort();
    let writer = {
        let dir = dir.path().to_path_buf();
        thread::spawn(move || write_log(dir))
    };
    let mut pipeline = PipelineProcess {
        config,
        data_dir: dir.path().join("data"),
        log: dir.path().join("pipeline.log"),
        child: None,
    };
    for kill in 0..KILLS {
        pipeline.start(false);
        let pause = rng.between(2000, 6000);
        thread::sleep(Duration::from_millis(pause));
        pipeline.kill();
        println!("kill {} after {pause} ms", kill + 1);
    }
    writer.join().unwrap();
    pipeline.start(true);
    pipeline.wait(Duration::from_secs(300));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let in_postgres = runtime.block_on(postgres_counts(&table));
    assert_eq!(
        total(&in_postgres),
        total(&truth),
        "PostgreSQL rows vs parseable lines"
    );
    assert!(
        in_postgres == truth,
        "PostgreSQL rows line by line: (missing, repeated or unexpected) {:?}",
        differences(&in_postgres, &truth)
    );
    for location in [warehouse.display().to_string(), bucket_warehouse] {
        let in_parquet = runtime.block_on(parquet_counts(&location, &s3_options()));
        assert_eq!(
            total(&in_parquet),
            total(&truth),
            "Parquet rows vs parseable lines in {location}"
        );
        assert!(
            in_parquet == truth,
            "Parquet rows line by line in {location}: (missing, repeated or unexpected) {:?}",
            differences(&in_parquet, &truth)
        );
    }
    let dead = dead_letters(&pipeline.data_dir, bad_lines.len());
    assert_eq!(dead.len(), bad_lines.len(), "dead letters vs bad lines");
    assert_eq!(dead, bad_lines);
    std::fs::remove_dir_all(dir.path()).unwrap();
}

struct KeptDir(PathBuf);

impl KeptDir {
    fn path(&self) -> &Path {
        &self.0
    }
}
