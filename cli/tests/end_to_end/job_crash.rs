//! A SQL stream job (`weir job run`) as two processes sharing the input's partitions, killed with
//! -9 again and again at random points and restarted; the oracle is the input filtered directly:
//! the job's read_committed output must hold every expected row exactly once.

use crate::support::{broker, committed, jobs, produce, rng};

use std::collections::BTreeMap;
use std::thread;
use std::time::Duration;

use broker::BrokerProcess;
use jobs::JobPair;
use rdkafka::producer::{BaseRecord, Producer};
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

fn produce_input(bootstrap: &str) {
    let producer = produce::idempotent_producer(bootstrap);
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
    let _slot = crate::support::test_slot();
    let seed = Rng::seed_from_clock();
    eprintln!("job crash test seed {seed}");
    let mut rng = Rng::new(seed);
    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("clicks", 3);
    broker.create_topic("kept", 3);
    let logs = tempfile::tempdir().unwrap();
    let producing = {
        let bootstrap = bootstrap.clone();
        thread::spawn(move || produce_input(&bootstrap))
    };
    let mut jobs = JobPair::start(
        &bootstrap,
        &[
            "--name",
            "crash-job",
            "--input",
            "clicks",
            "--output",
            "kept",
            "--query",
            "SELECT _key, id, bytes FROM clicks WHERE id % 3 <> 0",
            "--checkpoint-interval-ms",
            "100",
            "--checkpoint-max-records",
            "400",
        ],
        logs.path(),
    );
    jobs.kill_again_and_again(&mut rng, KILLS, 2500);
    producing.join().unwrap();

    let want = (0..RECORDS).filter(|i| expected(*i)).count();
    let seen = committed_output(&bootstrap, want);
    jobs.stop();
    let job_logs = || jobs.logs();
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
