//! Copies of one pipeline sharing its work, as the Helm chart's `replicas` runs them: two
//! `weir pipeline run` processes (file source → a `weir broker` process → SQL → PostgreSQL)
//! while the log is appended to. The sink's partitions must be split between the copies
//! through its consumer group and one copy at a time must read the source; then the copy
//! reading the source is killed with -9 and a third joins: another takes the source over, the
//! partitions move, and PostgreSQL must end up with exactly the log's lines (counts per status
//! and minute against the generator) — nothing lost to the kill, nothing written twice by two
//! copies. A Parquet sink of the same pipeline (one writer at a time, on a lease) must end up
//! with exactly the lines too.
//!
//! Needs PostgreSQL (`WEIR_TEST_POSTGRES_URL`); scripts/test.sh starts it.

use crate::support::{access_log, broker};

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use access_log::{parquet_counts, postgres_counts, postgres_url, total};
use broker::BrokerProcess;
use weir_connectors::parquet::published_files;

const LINES: u64 = 60_000;
const CHUNK_LINES: u64 = 500;
const CHUNK_PAUSE: Duration = Duration::from_millis(100);
const PARTITIONS: usize = 4;
const SINK_OWNS: &str = "sink stage owns its partitions";
const SOURCE_STARTED: &str = "source stage started";
/// Logged by a copy that lost the source's lease (or was fenced) and stands by.
const SOURCE_LEFT: &str = "owns the source now; standing by";

/// One `weir pipeline run` process, named by its `--instance`.
struct Copy {
    instance: String,
    log: PathBuf,
    child: Option<Child>,
}

impl Copy {
    fn start(dir: &Path, config: &Path, instance: &str) -> Copy {
        let log_path = dir.join(format!("copy-{instance}.log"));
        let log = File::create(&log_path).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(["pipeline", "run"])
            .arg(config)
            .arg("--data-dir")
            .arg(dir.join(format!("data-{instance}")))
            .args(["--instance", instance])
            .env("RUST_LOG", "info")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        Copy {
            instance: instance.into(),
            log: log_path,
            child: Some(child),
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The partitions of the PostgreSQL sink's latest "owns its partitions" line, if any.
    fn sink_partitions(&self) -> Option<Vec<i32>> {
        let text = self.log_text();
        let line = text
            .lines()
            .rev()
            .find(|l| l.contains(SINK_OWNS) && l.contains("sink=postgres-0"))?;
        let list = line.split("partitions=[").nth(1)?.split(']').next()?;
        Some(
            list.split(',')
                .filter(|p| !p.trim().is_empty())
                .map(|p| p.trim().parse().unwrap())
                .collect(),
        )
    }

    /// Whether the copy's latest word on the source is that it reads it (not that it stands
    /// by or was fenced).
    fn reads_source(&self) -> bool {
        let text = self.log_text();
        let last = text
            .lines()
            .rev()
            .find(|l| l.contains(SOURCE_STARTED) || l.contains(SOURCE_LEFT));
        last.is_some_and(|l| l.contains(SOURCE_STARTED))
    }

    fn alive(&mut self) -> bool {
        let child = self.child.as_mut().expect("started");
        child.try_wait().unwrap().is_none()
    }

    fn kill_9(&mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// SIGTERM: the copy commits what it read and exits.
    fn stop(&mut self) {
        let mut child = self.child.take().unwrap();
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "copy {} did not stop within 60 s of SIGTERM:\n{}",
                self.instance,
                self.log_text()
            );
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn logs(copies: &[Copy]) -> String {
    copies
        .iter()
        .map(|c| {
            let text = c.log_text();
            let lines: Vec<&str> = text.lines().collect();
            format!(
                "--- copy {}:\n{}",
                c.instance,
                lines[lines.len().saturating_sub(40)..].join("\n")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn wait_for(what: &str, copies: &mut [Copy], timeout: Duration, done: impl Fn(&[Copy]) -> bool) {
    let deadline = Instant::now() + timeout;
    while !done(copies) {
        let exited: Vec<String> = copies
            .iter_mut()
            .filter_map(|c| (c.child.is_some() && !c.alive()).then(|| c.instance.clone()))
            .collect();
        assert!(
            exited.is_empty(),
            "copies {exited:?} exited while waiting for {what}:\n{}",
            logs(copies)
        );
        assert!(
            Instant::now() < deadline,
            "no {what} within {timeout:?}:\n{}",
            logs(copies)
        );
        thread::sleep(Duration::from_millis(200));
    }
}

fn write_log(path: PathBuf) {
    let generator = access_log::generator(None);
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    let mut n = 0;
    while n < LINES {
        let end = (n + CHUNK_LINES).min(LINES);
        let chunk: String = (n..end)
            .map(|i| access_log::numbered_line(&generator, i) + "\n")
            .collect();
        file.write_all(chunk.as_bytes()).unwrap();
        n = end;
        thread::sleep(CHUNK_PAUSE);
    }
}

/// Two copies own disjoint, non-empty parts of the sink's partitions that cover all of them.
fn shared(copies: &[&Copy]) -> bool {
    let owned: Vec<Vec<i32>> = copies.iter().filter_map(|c| c.sink_partitions()).collect();
    let mut all: Vec<i32> = owned.iter().flatten().copied().collect();
    all.sort_unstable();
    owned.len() == copies.len()
        && owned.iter().all(|p| !p.is_empty())
        && all == (0..PARTITIONS as i32).collect::<Vec<_>>()
}

#[test]
fn copies_share_a_pipeline_and_survive_a_kill_without_losing_or_repeating() {
    let _slot = crate::support::test_slot();
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start();
    let table = format!("copies_{}", std::process::id());
    let warehouse = dir.path().join("warehouse");
    let config = dir.path().join("pipeline.yaml");
    std::fs::write(
        &config,
        format!(
            r#"name: copies
bootstrap: "{bootstrap}"
source:
  kind: file
  paths: ["{log}"]
  format: nginx_combined
  scan_interval_ms: 200
topic: {{ name: copies-raw, partitions: {PARTITIONS} }}
checkpoint_interval_ms: 300
transform:
  table: requests
  sql: SELECT remote_user AS line, date_trunc('minute', timestamp) AS minute, status FROM requests
sinks:
  - kind: postgres
    url: "{postgres}"
    table: {table}
    commit_interval_ms: 300
  - kind: parquet
    path: {warehouse}
    max_file_age_ms: 500
"#,
            bootstrap = broker.bootstrap(),
            log = dir.path().join("access.log").display(),
            postgres = postgres_url(),
            warehouse = warehouse.display(),
        ),
    )
    .unwrap();
    let (truth, bad) = access_log::ground_truth(&access_log::generator(None), LINES);
    assert!(bad.is_empty());
    let writer = {
        let path = dir.path().join("access.log");
        thread::spawn(move || write_log(path))
    };
    let mut copies = vec![
        Copy::start(dir.path(), &config, "a"),
        Copy::start(dir.path(), &config, "b"),
    ];
    wait_for(
        "sink partitions shared by copies a and b",
        &mut copies,
        Duration::from_secs(60),
        |c| shared(&[&c[0], &c[1]]),
    );
    // One copy reads the source once the group settled (its lease may move while they join).
    wait_for(
        "exactly one copy reading the source",
        &mut copies,
        Duration::from_secs(60),
        |c| c.iter().filter(|c| c.reads_source()).count() == 1,
    );
    let reader = (0..2).find(|i| copies[*i].reads_source()).unwrap();
    let standby = 1 - reader;
    println!(
        "copy {} reads the source; killing it",
        copies[reader].instance
    );
    copies[reader].kill_9();
    copies.push(Copy::start(dir.path(), &config, "c"));
    wait_for(
        "source taken over after the kill",
        &mut copies,
        Duration::from_secs(60),
        |c| c[standby].reads_source() || c[2].reads_source(),
    );
    wait_for(
        "sink partitions shared by the two live copies",
        &mut copies,
        Duration::from_secs(60),
        |c| shared(&[&c[standby], &c[2]]),
    );
    writer.join().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let location = warehouse.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let rows = total(&runtime.block_on(postgres_counts(&table)));
        // `_weir/` appears with the first staged file; reading needs a published one.
        let files = if !published_files(&warehouse).is_empty() {
            total(&runtime.block_on(parquet_counts(&location, &Default::default())))
        } else {
            0
        };
        if rows >= total(&truth) && files >= total(&truth) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "PostgreSQL has {rows} and Parquet {files} of {} rows after 120 s:\n{}",
            total(&truth),
            logs(&copies)
        );
        thread::sleep(Duration::from_millis(500));
    }
    for copy in copies.iter_mut().filter(|c| c.child.is_some()) {
        copy.stop();
    }
    let in_postgres = runtime.block_on(postgres_counts(&table));
    assert_eq!(
        total(&in_postgres),
        total(&truth),
        "PostgreSQL rows vs lines:\n{}",
        logs(&copies)
    );
    assert!(
        in_postgres == truth,
        "PostgreSQL rows line by line: (missing, repeated or unexpected) {:?}",
        access_log::differences(&in_postgres, &truth)
    );
    // The Parquet sink has one writer at a time: the lease moved with the copies.
    let in_parquet = runtime.block_on(parquet_counts(&location, &Default::default()));
    assert_eq!(total(&in_parquet), total(&truth), "Parquet rows vs lines");
    assert!(
        in_parquet == truth,
        "Parquet rows line by line: (missing, repeated or unexpected) {:?}",
        access_log::differences(&in_parquet, &truth)
    );
    drop(broker);
}
