//! Crash tests with the broker as a separate process: the `weir` binary is killed with -9 again
//! and again while transactional producers (committing and aborting) and an idempotent producer
//! write through rdkafka; everything the clients were told and everything readers saw goes into
//! a history that the Jepsen-style checker (`crash/history.rs`) judges: no lost writes, no
//! aborted reads, no torn transactions, no duplicates, no offset that changes its value, no
//! record read that later disappears.

use crate::support::{broker, history, rng, workload};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use broker::BrokerProcess;
use history::History;
use rng::Rng;
use workload::{read_all, TOPIC};

const TRANSACTIONAL_WRITERS: usize = 3;
const KILLS: usize = 6;

#[test]
fn kill_9_during_transactions_and_idempotent_writes_loses_and_duplicates_nothing() {
    let _slot = crate::support::test_slot();
    let seed = Rng::seed_from_clock();
    eprintln!("crash test seed {seed}");
    let mut rng = Rng::new(seed);
    let mut broker = BrokerProcess::start();
    broker.create_topic(TOPIC, 3);
    let bootstrap = broker.bootstrap();

    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for writer in 0..TRANSACTIONAL_WRITERS {
        let (bootstrap, stop) = (bootstrap.clone(), Arc::clone(&stop));
        let seed = seed.wrapping_add(writer as u64 + 1);
        writers.push(thread::spawn(move || {
            workload::transactional_writer(&bootstrap, writer, seed, &stop)
        }));
    }
    let idempotent = {
        let (bootstrap, stop) = (bootstrap.clone(), Arc::clone(&stop));
        thread::spawn(move || workload::idempotent_writer(&bootstrap, &stop))
    };

    let mut history = History::default();
    for kill in 0..KILLS {
        thread::sleep(Duration::from_millis(rng.between(400, 1500)));
        broker.kill_9();
        thread::sleep(Duration::from_millis(rng.between(0, 300)));
        broker.restart();
        eprintln!("kill {} of {KILLS}: broker restarted", kill + 1);
        history.reads.push(read_all(&bootstrap, false));
    }
    thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        history.txns.extend(writer.join().expect("writer thread"));
    }
    history
        .txns
        .extend(idempotent.join().expect("idempotent writer"));
    let last_uncommitted = read_all(&bootstrap, false);
    history.reads.push(last_uncommitted.clone());
    let final_read = read_all(&bootstrap, true);

    let committed = history
        .txns
        .iter()
        .filter(|t| t.outcome == history::Outcome::Committed)
        .count();
    let aborted = history
        .txns
        .iter()
        .filter(|t| t.outcome == history::Outcome::Aborted)
        .count();
    eprintln!(
        "{} transactions/writes ({committed} committed, {aborted} aborted, {} unknown), {} records read committed",
        history.txns.len(),
        history.txns.len() - committed - aborted,
        final_read.records.len()
    );
    assert!(committed > 20, "the workload made progress: {committed}");
    assert!(aborted > 0, "some transactions were aborted");
    let anomalies = history.check(&final_read);
    assert!(
        anomalies.is_empty(),
        "seed {seed}: {anomalies:#?}\nbroker log:\n{}",
        broker.log_tail()
    );
    let vanished = history.vanished(&last_uncommitted);
    assert!(vanished.is_empty(), "seed {seed}: {vanished:#?}");
}

/// Start-up on a data directory the broker cannot use: one line naming the path and the reason,
/// and a non-zero exit — never a panic or a half-started broker.
#[test]
fn an_unusable_data_directory_is_one_line_and_a_failed_exit() {
    let _slot = crate::support::test_slot();
    let dir = tempfile::tempdir().unwrap();
    let read_only = dir.path().join("read-only");
    std::fs::create_dir(&read_only).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs"])
        .arg(&read_only)
        .output()
        .unwrap();
    assert!(
        mounted.status.success(),
        "mounting a read-only tmpfs needs root (the test command runs as root): {}",
        String::from_utf8_lossy(&mounted.stderr)
    );
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let cases = [
        (read_only.join("data"), "Read-only file system"),
        (read_only.clone(), "Read-only file system"),
        (file.join("data"), "Not a directory"),
    ];
    for (data_dir, reason) in cases {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
            .args([
                "broker",
                "--listen",
                "127.0.0.1:0",
                "--metrics-listen",
                "off",
            ])
            .arg("--data-dir")
            .arg(&data_dir)
            .env("RUST_LOG", "off")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{}: {stderr}",
            data_dir.display()
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        let path = data_dir.display().to_string();
        assert!(
            stderr.contains(&path) && stderr.contains(reason),
            "{stderr}"
        );
        assert_eq!(
            stderr.matches(reason).count(),
            1,
            "the reason is repeated: {stderr}"
        );
    }
    let _ = std::process::Command::new("umount")
        .arg(&read_only)
        .status();
}
