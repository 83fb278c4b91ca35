//! A SQL stream job (`weir job run`) as two processes sharing the input's partitions, killed with
//! -9 again and again at random points and restarted; the oracle is the input filtered directly:
//! the job's read_committed output must hold every expected row exactly once.

#[path = "crash/broker.rs"]
#[allow(dead_code)]
mod broker;
#[path = "crash/committed.rs"]
mod committed;
#[path = "crash/rng.rs"]
mod rng;

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use broker::BrokerProcess;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rng::Rng;

const RECORDS: usize = 20_000;
const KILLS: usize = 6;
const TIMEOUT: Duration = Duration::from_secs(120);

fn input_value(i: usize) -> String {
    format!(r#"{{"id": {i}, "bytes": {}}}"#, i * 7 % 1000)
}

/// The oracle: what the query keeps.
fn expected(i: usize) -> bool {
    !i.is_multiple_of(3)
}

fn start_job(bootstrap: &str, instance: &str, log: &std::path::Path) -> Child {
    let log = std::fs::File::options()
        .create(true)
        .append(true)
        .open(log)
        .expect("job log");
    Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["job", "-b", bootstrap, "run", "--name", "crash-job"])
        .args([
            "--instance",
            instance,
            "--input",
            "clicks",
            "--output",
            "kept",
        ])
        .args([
            "--query",
            "SELECT _key, id, bytes FROM clicks WHERE id % 3 <> 0",
        ])
        .args(["--checkpoint-interval-ms", "100"])
        .args(["--checkpoint-max-records", "400"])
        .args([
            "-X",
            "session.timeout.ms=6000",
            "-X",
            "heartbeat.interval.ms=500",
        ])
        .env("RUST_LOG", "warn")
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .expect("weir job run starts")
}

fn produce_input(bootstrap: &str) {
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .create()
        .unwrap();
    for i in 0..RECORDS {
        let key = i.to_string();
        let value = input_value(i);
        loop {
            match producer.send(BaseRecord::to("clicks").key(&key).payload(&value)) {
                Ok(()) => break,
                Err(_) => thread::sleep(Duration::from_millis(5)),
            }
        }
    }
    producer.flush(Duration::from_secs(60)).unwrap();
}

/// id → how many times it is in the committed output, once `want` records arrived (or the
/// timeout passed).
fn committed_output(bootstrap: &str, want: usize) -> BTreeMap<u64, usize> {
    let mut seen = BTreeMap::new();
    for value in committed::values(bootstrap, "kept", 3, want, TIMEOUT) {
        let row: serde_json::Value = serde_json::from_slice(&value).unwrap();
        *seen.entry(row["id"].as_u64().unwrap()).or_insert(0) += 1;
    }
    seen
}

#[test]
fn a_sql_job_killed_9_again_and_again_writes_each_row_exactly_once() {
    let seed = Rng::seed_from_clock();
    eprintln!("job crash test seed {seed}");
    let mut rng = Rng::new(seed);
    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("clicks", 3);
    broker.create_topic("kept", 3);
    let logs = tempfile::tempdir().unwrap();
    let log_of = |instance: &str| logs.path().join(format!("job-{instance}.log"));
    let producing = {
        let bootstrap = bootstrap.clone();
        thread::spawn(move || produce_input(&bootstrap))
    };
    let mut jobs = [
        start_job(&bootstrap, "0", &log_of("0")),
        start_job(&bootstrap, "1", &log_of("1")),
    ];
    for kill in 0..KILLS {
        thread::sleep(Duration::from_millis(rng.between(500, 2500)));
        let victim = rng.between(0, 2) as usize;
        jobs[victim].kill().expect("kill -9");
        jobs[victim].wait().expect("reaped");
        eprintln!("kill {} of {KILLS}: job instance {victim}", kill + 1);
        thread::sleep(Duration::from_millis(rng.between(0, 500)));
        jobs[victim] = start_job(
            &bootstrap,
            &victim.to_string(),
            &log_of(&victim.to_string()),
        );
    }
    producing.join().unwrap();

    let want = (0..RECORDS).filter(|i| expected(*i)).count();
    let seen = committed_output(&bootstrap, want);
    for job in &mut jobs {
        let _ = job.kill();
        let _ = job.wait();
    }
    let job_logs = || {
        ["0", "1"]
            .map(|i| std::fs::read_to_string(log_of(i)).unwrap_or_default())
            .join("\n---\n")
    };
    let duplicated: Vec<(&u64, &usize)> = seen.iter().filter(|(_, n)| **n > 1).take(10).collect();
    assert!(
        duplicated.is_empty(),
        "seed {seed}: duplicates {duplicated:?}\n{}",
        job_logs()
    );
    let unexpected: Vec<&u64> = seen
        .keys()
        .filter(|id| !expected(**id as usize))
        .take(10)
        .collect();
    assert!(
        unexpected.is_empty(),
        "seed {seed}: rows the query drops: {unexpected:?}"
    );
    let missing: Vec<usize> = (0..RECORDS)
        .filter(|i| expected(*i) && !seen.contains_key(&(*i as u64)))
        .take(10)
        .collect();
    assert!(
        missing.is_empty(),
        "seed {seed}: {} of {want} rows missing, e.g. {missing:?}\n{}\nbroker:\n{}",
        want - seen.len(),
        job_logs(),
        broker.log_tail()
    );
}
