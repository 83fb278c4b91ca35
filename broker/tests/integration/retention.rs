//! Retention by time and size deletes whole old segments and advances the log start offset.

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::FutureRecord;
use rdkafka::Offset;

use crate::common::{self, TIMEOUT};

async fn wait_for_log_start(consumer: &BaseConsumer, topic: &str, at_least: i64) -> (i64, i64) {
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let watermarks = consumer.fetch_watermarks(topic, 0, TIMEOUT).unwrap();
        if watermarks.0 >= at_least || std::time::Instant::now() > deadline {
            return watermarks;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_retention_deletes_expired_segments() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[("log.retention.check.interval.ms", "100")]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(
        &bootstrap,
        "expiring",
        1,
        &[("segment.bytes", "1024"), ("retention.ms", "3600000")],
    )
    .await;
    let producer = common::producer(&bootstrap, &[("linger.ms", "0")]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    // 100 records stamped two hours ago, then 10 fresh ones.
    for i in 0..110 {
        let timestamp = if i < 100 { now - 7_200_000 } else { now };
        let value = format!("r{i:03}-{}", "p".repeat(60));
        let record = FutureRecord::<(), String>::to("expiring")
            .partition(0)
            .payload(&value)
            .timestamp(timestamp);
        producer.send(record, TIMEOUT).await.unwrap();
    }
    let consumer: BaseConsumer = common::client_config(&bootstrap).create().unwrap();
    let (low, high) = wait_for_log_start(&consumer, "expiring", 100).await;
    assert_eq!(high, 110);
    assert!(
        (90..=100).contains(&low),
        "old segments gone, fresh records kept: log start {low}"
    );
    let remaining = (high - low) as usize;
    let messages = common::consume(&bootstrap, "expiring", 0, Offset::Beginning, remaining).await;
    assert_eq!(
        common::payloads(&messages).last().unwrap(),
        &format!("r109-{}", "p".repeat(60))
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn size_retention_keeps_the_newest_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[("log.retention.check.interval.ms", "100")]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(
        &bootstrap,
        "capped",
        1,
        &[("segment.bytes", "1024"), ("retention.bytes", "4096")],
    )
    .await;
    let producer = common::producer(&bootstrap, &[("linger.ms", "0")]);
    for i in 0..200 {
        let value = format!("r{i:03}-{}", "p".repeat(60));
        common::produce_values(&producer, "capped", 0, &[value]).await;
    }
    let consumer: BaseConsumer = common::client_config(&bootstrap).create().unwrap();
    let log_bytes = || -> u64 {
        std::fs::read_dir(dir.path().join("capped-0"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum()
    };
    // Retention runs every 100 ms while the producer writes: wait for a pass after the last write.
    let deadline = std::time::Instant::now() + TIMEOUT;
    let mut size = log_bytes();
    while size > 4096 + 1024 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        size = log_bytes();
    }
    // Deletion keeps the newest segments whose total stays within retention.bytes plus the
    // oldest kept segment (at most segment.bytes).
    assert!(
        size <= 4096 + 1024,
        "at most retention.bytes plus one segment: {size}"
    );
    let (low, high) = wait_for_log_start(&consumer, "capped", 100).await;
    assert_eq!(high, 200);
    assert!(low > 100, "old segments deleted: log start {low}");
    let kept = common::consume(
        &bootstrap,
        "capped",
        0,
        Offset::Beginning,
        (high - low) as usize,
    )
    .await;
    assert_eq!(
        common::payloads(&kept).last().unwrap(),
        &format!("r199-{}", "p".repeat(60))
    );
    broker.shutdown().await.unwrap();
}
