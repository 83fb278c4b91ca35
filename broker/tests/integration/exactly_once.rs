//! Exactly-once consume-transform-produce through broker crashes: an rdkafka ETL loop (one
//! transaction per batch: output records plus the consumed offsets) runs while the broker is
//! killed (no flush, no clean shutdown) and restarted again and again, and the application
//! itself dies mid-transaction now and then (a new incarnation fences it). Afterwards the
//! read_committed output is the input transformed exactly once: nothing lost, nothing doubled,
//! in order.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Message, Offset, TopicPartitionList};

use crate::common::{self, TIMEOUT};

const RECORDS: usize = 3000;
const CRASHES: usize = 5;
/// Records per transaction.
const BATCH: usize = 20;

fn client(bootstrap: &str) -> rdkafka::ClientConfig {
    let mut config = common::client_config(bootstrap);
    config
        .set("socket.timeout.ms", "3000")
        .set("reconnect.backoff.max.ms", "200");
    config
}

/// One incarnation of the ETL worker: runs transactions until all input is committed or a
/// client error ends it (the caller then starts a new incarnation, which fences this one).
fn incarnation(bootstrap: &str, done: &AtomicBool, kill: &AtomicBool) -> Result<(), String> {
    let mut config = client(bootstrap);
    config
        .set("transactional.id", "exactly-once-etl")
        .set("transaction.timeout.ms", "10000")
        .set("linger.ms", "1");
    let producer: BaseProducer = config.create().map_err(|e| e.to_string())?;
    let producer = scopeguard(producer);
    producer
        .init_transactions(Duration::from_secs(10))
        .map_err(|e| format!("init: {e}"))?;
    let mut config = client(bootstrap);
    config
        .set("group.id", "exactly-once")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("isolation.level", "read_committed")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "500")
        // A leaked incarnation's consumer must not hold rebalances for the default 5 minutes.
        .set("max.poll.interval.ms", "8000");
    let consumer: BaseConsumer = config.create().map_err(|e| e.to_string())?;
    let consumer = scopeguard(consumer);
    consumer.subscribe(&["eos-in"]).map_err(|e| e.to_string())?;
    loop {
        let mut batch = Vec::new();
        let started = Instant::now();
        while batch.len() < BATCH && started.elapsed() < Duration::from_millis(300) {
            match consumer.poll(Duration::from_millis(50)) {
                Some(Ok(message)) => batch.push((
                    message.offset(),
                    String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned(),
                )),
                // Transport errors while the broker restarts: librdkafka reconnects by itself.
                Some(Err(_)) => std::thread::sleep(Duration::from_millis(50)),
                None => {}
            }
        }
        let Some(&(last_offset, _)) = batch.last() else {
            let mut query = TopicPartitionList::new();
            query.add_partition("eos-in", 0);
            let committed = consumer.committed_offsets(query, Duration::from_secs(5));
            if let Ok(list) = committed {
                if list.find_partition("eos-in", 0).map(|e| e.offset())
                    == Some(Offset::Offset(RECORDS as i64))
                {
                    done.store(true, Ordering::SeqCst);
                    return Ok(());
                }
            }
            continue;
        };
        let transaction = || -> Result<(), String> {
            producer
                .begin_transaction()
                .map_err(|e| format!("begin: {e}"))?;
            for (_, value) in &batch {
                let out = value.to_uppercase();
                producer
                    .send(
                        BaseRecord::<(), String>::to("eos-out")
                            .partition(0)
                            .payload(&out),
                    )
                    .map_err(|(e, _)| format!("send: {e}"))?;
            }
            if kill.swap(false, Ordering::SeqCst) {
                // The application dies here: output sent, nothing committed, no abort, its
                // clients left behind. The next incarnation must fence it.
                return Err("killed".into());
            }
            let mut offsets = TopicPartitionList::new();
            offsets
                .add_partition_offset("eos-in", 0, Offset::Offset(last_offset + 1))
                .map_err(|e| e.to_string())?;
            let metadata = consumer.group_metadata().ok_or("no group metadata")?;
            producer
                .send_offsets_to_transaction(&offsets, &metadata, Duration::from_secs(10))
                .map_err(|e| format!("offsets: {e}"))?;
            producer
                .commit_transaction(Duration::from_secs(10))
                .map_err(|e| format!("commit: {e}"))
        };
        if let Err(error) = transaction() {
            if error == "killed" {
                return Err(error);
            }
            let _ = producer.abort_transaction(Duration::from_secs(5));
            // Leave the group so that the next incarnation's consumer takes over at once.
            consumer.unsubscribe();
            let _ = consumer.poll(Duration::from_millis(100));
            return Err(error);
        }
    }
}

/// Clients are leaked rather than dropped: rust-rdkafka's drop can block for a long time while
/// the broker is down (and forever for group consumers, see the groups tests).
fn scopeguard<T>(client: T) -> std::mem::ManuallyDrop<T> {
    std::mem::ManuallyDrop::new(client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_transform_produce_is_exactly_once_through_broker_crashes() {
    let dir = tempfile::tempdir().unwrap();
    let listen = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let properties = [
        ("group.initial.rebalance.delay.ms", "0"),
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "200",
        ),
    ];
    let start = |dir: std::path::PathBuf| async move {
        let mut config = common::config(&dir, &properties);
        config.listen = listen;
        weir_broker::Broker::start(config)
            .await
            .expect("broker starts")
    };
    let mut broker = start(dir.path().to_path_buf()).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "eos-in", 1, &[]).await;
    common::create_topic(&bootstrap, "eos-out", 1, &[]).await;
    let input: Vec<String> = (0..RECORDS).map(|i| format!("record-{i:05}")).collect();
    let producer = common::producer(&bootstrap, &[]);
    common::produce_values(&producer, "eos-in", 0, &input).await;
    drop(producer);

    let done = Arc::new(AtomicBool::new(false));
    let kill = Arc::new(AtomicBool::new(false));
    let worker = {
        let done = Arc::clone(&done);
        let kill = Arc::clone(&kill);
        let bootstrap = bootstrap.clone();
        tokio::task::spawn_blocking(move || {
            let deadline = Instant::now() + Duration::from_secs(240);
            let mut incarnations = 0;
            while !done.load(Ordering::SeqCst) && Instant::now() < deadline {
                incarnations += 1;
                if let Err(error) = incarnation(&bootstrap, &done, &kill) {
                    eprintln!("incarnation {incarnations} ended: {error}");
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
            incarnations
        })
    };
    let mut crashes = 0;
    for crash in 0..CRASHES {
        tokio::time::sleep(Duration::from_millis(700 + 300 * crash as u64)).await;
        if done.load(Ordering::SeqCst) {
            break;
        }
        broker.abort().await; // kill -9: no flush, no clean-shutdown marker
        broker = start(dir.path().to_path_buf()).await;
        crashes += 1;
        if crash % 2 == 1 {
            // The application dies mid-transaction too.
            kill.store(true, Ordering::SeqCst);
        }
    }
    let incarnations = worker.await.unwrap();
    assert_eq!(crashes, CRASHES, "every crash hit the ETL while it ran");
    assert!(
        done.load(Ordering::SeqCst),
        "the ETL never finished ({incarnations} incarnations)"
    );

    let bootstrap_for_read = bootstrap.clone();
    let output = tokio::task::spawn_blocking(move || {
        let mut config = common::client_config(&bootstrap_for_read);
        config
            .set("group.id", "eos-checker")
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed");
        let consumer: BaseConsumer = config.create().unwrap();
        let mut assignment = TopicPartitionList::new();
        assignment
            .add_partition_offset("eos-out", 0, Offset::Beginning)
            .unwrap();
        consumer.assign(&assignment).unwrap();
        let mut values = Vec::new();
        let deadline = Instant::now() + TIMEOUT;
        let mut idle = Instant::now();
        while Instant::now() < deadline && idle.elapsed() < Duration::from_secs(2) {
            if let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) {
                values.push(String::from_utf8_lossy(message.payload().unwrap()).into_owned());
                idle = Instant::now();
            }
        }
        values
    })
    .await
    .unwrap();
    let expected: Vec<String> = input.iter().map(|v| v.to_uppercase()).collect();
    assert_eq!(
        output.len(),
        expected.len(),
        "every input once ({incarnations} incarnations)"
    );
    assert_eq!(output, expected, "exactly once and in order");
    broker.shutdown().await.unwrap();
}
