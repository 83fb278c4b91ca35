//! Restarts: clean shutdown, crash, torn tails and damaged indexes. Nothing acknowledged before
//! the damage point is lost; what is cut is only the torn or corrupt tail.

use std::io::Write;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::Offset;

use crate::common::{self, TIMEOUT};

fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("{prefix}-{i:05}-{}", "d".repeat(i % 40)))
        .collect()
}

fn segment_files(dir: &std::path::Path, extension: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == extension))
        .collect();
    files.sort();
    files
}

async fn produce_all(bootstrap: &str, topic: &str, values: &[String]) {
    // Small batches, so that small segments fill and roll.
    let producer = common::producer(
        bootstrap,
        &[("compression.type", "snappy"), ("batch.num.messages", "20")],
    );
    common::produce_values(&producer, topic, 0, values).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_restart_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(
        &bootstrap,
        "kept",
        1,
        &[("segment.bytes", "1024"), ("retention.ms", "123456789")],
    )
    .await;
    let written = values("kept", 500);
    produce_all(&bootstrap, "kept", &written).await;
    broker.shutdown().await.unwrap();
    assert!(
        segment_files(&dir.path().join("kept-0"), "log").len() > 3,
        "several segments"
    );

    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    let messages = common::consume(&bootstrap, "kept", 0, Offset::Beginning, 500).await;
    assert_eq!(common::payloads(&messages), written);
    // Config overrides and topic id survive too; new appends continue the offsets.
    let admin = common::admin(&bootstrap);
    let described = admin
        .describe_configs(
            [&rdkafka::admin::ResourceSpecifier::Topic("kept")],
            &common::admin_options(),
        )
        .await
        .unwrap();
    assert_eq!(
        described[0]
            .as_ref()
            .unwrap()
            .get("retention.ms")
            .unwrap()
            .value
            .as_deref(),
        Some("123456789")
    );
    let producer = common::producer(&bootstrap, &[]);
    let offsets = common::produce_values(&producer, "kept", 0, &["after".into()]).await;
    assert_eq!(offsets, vec![500]);
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_then_torn_tail_is_cut_and_earlier_data_served() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "torn", 1, &[("segment.bytes", "8192")]).await;
    let written = values("torn", 300);
    produce_all(&bootstrap, "torn", &written).await;
    broker.abort().await; // as a crash: no flush, no index files, no clean-shutdown marker

    // A torn write: half a batch header and random bytes after the last good batch.
    let partition_dir = dir.path().join("torn-0");
    let active = segment_files(&partition_dir, "log").pop().unwrap();
    let good_len = std::fs::metadata(&active).unwrap().len();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&active)
        .unwrap();
    file.write_all(&[
        0, 0, 0, 0, 0, 0, 1, 44, 0, 0, 3, 0, 0xde, 0xad, 0xbe, 0xef, 2, 7, 7,
    ])
    .unwrap();
    drop(file);

    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    assert_eq!(
        std::fs::metadata(&active).unwrap().len(),
        good_len,
        "the torn tail is cut exactly"
    );
    let messages = common::consume(&bootstrap, "torn", 0, Offset::Beginning, 300).await;
    assert_eq!(common::payloads(&messages), written);
    let producer = common::producer(&bootstrap, &[]);
    assert_eq!(
        common::produce_values(&producer, "torn", 0, &["next".into()]).await,
        vec![300]
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_batch_in_the_tail_cuts_from_there() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "flipped", 1, &[]).await;
    let producer = common::producer(&bootstrap, &[("linger.ms", "0")]);
    // One batch per record, so we know where each starts.
    let mut written = Vec::new();
    for value in values("flipped", 20) {
        common::produce_values(&producer, "flipped", 0, std::slice::from_ref(&value)).await;
        written.push(value);
    }
    drop(producer);
    broker.abort().await;

    // Flip a byte in the payload of the 16th batch (CRC no longer matches).
    let active = segment_files(&dir.path().join("flipped-0"), "log")
        .pop()
        .unwrap();
    let mut bytes = std::fs::read(&active).unwrap();
    let mut position = 0usize;
    for _ in 0..15 {
        let length =
            i32::from_be_bytes(bytes[position + 8..position + 12].try_into().unwrap()) as usize;
        position += 12 + length;
    }
    let sixteenth = position;
    bytes[sixteenth + 70] ^= 0x55;
    std::fs::write(&active, &bytes).unwrap();

    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    let consumer: BaseConsumer = common::client_config(&bootstrap).create().unwrap();
    assert_eq!(
        consumer.fetch_watermarks("flipped", 0, TIMEOUT).unwrap(),
        (0, 15)
    );
    let messages = common::consume(&bootstrap, "flipped", 0, Offset::Beginning, 15).await;
    assert_eq!(common::payloads(&messages), written[..15].to_vec());
    assert_eq!(std::fs::metadata(&active).unwrap().len(), sixteenth as u64);
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_or_missing_indexes_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(
        &bootstrap,
        "indexed",
        1,
        &[("segment.bytes", "1024"), ("index.interval.bytes", "128")],
    )
    .await;
    let written = values("indexed", 400);
    produce_all(&bootstrap, "indexed", &written).await;
    broker.shutdown().await.unwrap();

    let partition_dir = dir.path().join("indexed-0");
    let indexes = segment_files(&partition_dir, "index");
    assert!(indexes.len() > 2);
    std::fs::remove_file(&indexes[0]).unwrap();
    std::fs::write(&indexes[1], [0xffu8; 13]).unwrap();
    let time_indexes = segment_files(&partition_dir, "timeindex");
    std::fs::write(&time_indexes[2], [0u8; 24]).unwrap();

    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    for start in [0i64, 37, 150, 399] {
        let expected = 400 - start as usize;
        let messages =
            common::consume(&bootstrap, "indexed", 0, Offset::Offset(start), expected).await;
        assert_eq!(
            common::payloads(&messages),
            written[start as usize..].to_vec(),
            "from {start}"
        );
    }
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_on_ack_acknowledges_after_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[("log.flush.on.ack", "true")]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "synced", 2, &[]).await;
    let producer = common::producer(&bootstrap, &[("acks", "all")]);
    let written = values("synced", 2000);
    let offsets = common::produce_values(&producer, "synced", 1, &written).await;
    assert_eq!(offsets.len(), 2000);
    let partition = broker.context().topics.partition("synced", 1).unwrap();
    // The recovery point only moves after fsyncs; acks came after the fsync covering them.
    let plan = partition.log().flush_plan();
    assert_eq!(plan.up_to_offset, 2000);
    broker.abort().await;
    let broker = common::start(dir.path(), &[]).await;
    let messages = common::consume(
        &common::bootstrap(&broker),
        "synced",
        1,
        Offset::Beginning,
        2000,
    )
    .await;
    assert_eq!(common::payloads(&messages), written);
    broker.shutdown().await.unwrap();
}
