//! `weir job run --metrics-listen`: a windowed job's Prometheus metrics over HTTP count what its
//! committed checkpoints read, and show the window state it holds.

use crate::support::{broker, scrape};

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use broker::BrokerProcess;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use scrape::get_metrics;

/// An integer sample of the job's metrics.
fn metric(text: &str, name: &str) -> Option<i64> {
    scrape::metric(text, name).map(|value| value as i64)
}

#[test]
fn a_job_serves_its_metrics() {
    let _slot = crate::support::test_slot();
    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("clicks", 2);
    broker.create_topic("per-minute", 1);
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .create()
        .unwrap();
    for i in 0..40i64 {
        let value = format!(r#"{{"user": "u{}"}}"#, i % 4);
        let record = BaseRecord::<(), _>::to("clicks")
            .partition((i % 2) as i32)
            .timestamp(1_700_000_000_000 + i * 1000)
            .payload(&value);
        producer.send(record).map_err(|(e, _)| e).unwrap();
    }
    producer.flush(Duration::from_secs(30)).unwrap();

    let addr = {
        let free = TcpListener::bind("127.0.0.1:0").unwrap();
        free.local_addr().unwrap().to_string()
    };
    let mut job = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["job", "-b", &bootstrap, "run", "--name", "minutes"])
        .args(["--input", "clicks", "--output", "per-minute"])
        .args([
            "--query",
            "SELECT tumble(_timestamp, INTERVAL '1 minute') AS minute, user, count(*) AS n \
             FROM clicks GROUP BY tumble(_timestamp, INTERVAL '1 minute'), user",
        ])
        .args(["--checkpoint-interval-ms", "200", "--metrics-listen", &addr])
        .args(["--schema", "user:string"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("weir job run starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Some(text) = get_metrics(&addr) {
            last = text;
            // 40 records over 40 s of event time, all in one minute that no partition has
            // passed: one open window holding a group per user.
            if metric(&last, "weir_job_records_in_total") == Some(40)
                && metric(&last, "weir_job_window_state_entries") == Some(4)
            {
                break;
            }
        }
        thread::sleep(Duration::from_millis(200));
    }
    let _ = job.kill();
    let _ = job.wait();
    assert_eq!(
        metric(&last, "weir_job_records_in_total"),
        Some(40),
        "{last}"
    );
    assert_eq!(metric(&last, "weir_job_open_windows"), Some(1), "{last}");
    assert_eq!(
        metric(&last, "weir_job_window_state_entries"),
        Some(4),
        "{last}"
    );
    assert_eq!(
        metric(&last, "weir_job_windows_emitted_total"),
        Some(0),
        "{last}"
    );
    assert!(last.contains(r#"job="minutes""#), "{last}");
}
