//! Disk faults: a full disk refuses appends with KAFKA_STORAGE_ERROR, keeps serving reads and
//! takes writes again once space is freed, without a restart and without a torn batch; an I/O
//! error (EIO) takes only its partition offline, and a restart recovers what was acknowledged.

use std::path::PathBuf;
use std::process::Command;

use kafka_protocol::records::Compression;
use kafka_protocol::ResponseError;
use rdkafka::Offset;
use weir_broker::partition::storage_health::DiskOp;

use crate::bad_input::produce_error;
use crate::common;
use crate::raw::RawClient;

const EIO: i32 = 5;

/// A small tmpfs mounted for the test's life (the test command runs as root, as CI does).
struct SmallDisk {
    path: PathBuf,
    _parent: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let parent = tempfile::tempdir().unwrap();
        let path = parent.path().join("disk");
        std::fs::create_dir(&path).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output()
            .expect("run mount");
        assert!(
            mounted.status.success(),
            "the disk-full test mounts a {size} tmpfs and needs root for it: {}",
            String::from_utf8_lossy(&mounted.stderr)
        );
        SmallDisk {
            path,
            _parent: parent,
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

fn value(i: usize, size: usize) -> String {
    format!("{i:08}-{}", "x".repeat(size))
}

fn numbered(messages: &[rdkafka::message::OwnedMessage]) -> Vec<String> {
    common::payloads(messages)
        .into_iter()
        .map(|value| value[..8].to_string())
        .collect()
}

/// Produces one record per request with a raw client until the broker refuses one; returns the
/// acknowledged values' numbers and the error code of the refusal.
async fn produce_until_refused(
    client: &mut RawClient,
    topic: &str,
    from: usize,
    size: usize,
) -> (Vec<usize>, i16) {
    let mut acked = Vec::new();
    for i in from.. {
        let record = value(i, size);
        let batch = crate::records::encode_batch(&[record.as_bytes()], Compression::None);
        let (code, _) = produce_error(client, topic, batch.freeze()).await;
        if code != 0 {
            return (acked, code);
        }
        acked.push(i);
        assert!(acked.len() < 100_000, "the small disk never filled");
    }
    unreachable!()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_appends_serves_reads_and_recovers_without_restart() {
    let disk = SmallDisk::mount("8m");
    let filler = disk.path.join("filler");
    std::fs::write(&filler, vec![0u8; 2 << 20]).unwrap();
    let data = disk.path.join("data");
    let broker = common::start(&data, &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "full", 1, &[]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;

    let (acked, code) = produce_until_refused(&mut client, "full", 0, 50_000).await;
    assert_eq!(code, ResponseError::KafkaStorageError.code());
    assert!(acked.len() > 20, "only {} records fit", acked.len());
    // Reads go on while the disk is full: exactly the acknowledged records.
    let consumed = common::consume(&bootstrap, "full", 0, Offset::Beginning, acked.len()).await;
    let expected: Vec<String> = acked.iter().map(|i| format!("{i:08}")).collect();
    assert_eq!(numbered(&consumed), expected);
    assert_eq!(
        broker
            .context()
            .topics
            .partition("full", 0)
            .unwrap()
            .offline_reason(),
        None,
        "a full disk does not take the partition offline"
    );

    // Space is freed: appends succeed again, with no torn batch between old and new records.
    std::fs::remove_file(&filler).unwrap();
    let next = acked.len() + 1000;
    let (more, code) = produce_until_refused(&mut client, "full", next, 50_000).await;
    assert_eq!(code, ResponseError::KafkaStorageError.code());
    assert!(
        more.len() > 20,
        "only {} records after freeing space",
        more.len()
    );
    let all: Vec<String> = acked
        .iter()
        .chain(&more)
        .map(|i| format!("{i:08}"))
        .collect();
    let consumed = common::consume(&bootstrap, "full", 0, Offset::Beginning, all.len()).await;
    assert_eq!(numbered(&consumed), all);

    // After a restart the log holds exactly what was acknowledged.
    // Closing may fail on the full disk (index and checkpoint files): then no clean-shutdown
    // marker is left and the next start recovers the logs, which must hold the same records.
    if let Err(error) = broker.shutdown().await {
        eprintln!("shutdown on a full disk: {error}");
    }
    let broker = common::start(&data, &[]).await;
    let bootstrap = common::bootstrap(&broker);
    let consumed = common::consume(&bootstrap, "full", 0, Offset::Beginning, all.len()).await;
    assert_eq!(numbered(&consumed), all);
    broker.shutdown().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_io_error_takes_only_its_partition_offline_and_a_restart_recovers_it() {
    let dir = tempfile::tempdir().unwrap();
    let properties = [("log.flush.on.ack", "true")];
    let broker = common::start(dir.path(), &properties).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "failing", 1, &[]).await;
    common::create_topic(&bootstrap, "healthy", 1, &[]).await;
    let producer = common::producer(&bootstrap, &[("acks", "all")]);
    let before: Vec<String> = (0..50).map(|i| value(i, 10)).collect();
    common::produce_values(&producer, "failing", 0, &before).await;

    let failing = broker.context().topics.partition("failing", 0).unwrap();
    failing.inject_disk_fault(Some((DiskOp::Sync, EIO)));
    let mut client = RawClient::connect(broker.local_addr()).await;
    let batch = crate::records::encode_batch(&[b"after-the-fault"], Compression::None);
    let (code, _) = produce_error(&mut client, "failing", batch.freeze()).await;
    assert_eq!(code, ResponseError::KafkaStorageError.code());
    let reason = failing
        .offline_reason()
        .expect("offline after EIO on fsync");
    assert!(reason.contains("Input/output error"), "{reason}");
    // Offline: later appends and reads are refused too, though the fault is gone.
    failing.inject_disk_fault(None);
    let batch = crate::records::encode_batch(&[b"still-offline"], Compression::None);
    let (code, _) = produce_error(&mut client, "failing", batch.freeze()).await;
    assert_eq!(code, ResponseError::KafkaStorageError.code());
    assert!(failing.read(0, 1 << 20, true).is_err());
    let metrics =
        broker
            .context()
            .metrics
            .render(&broker.context().topics, &broker.context().groups, None);
    assert!(metrics.contains("log_offline_partitions 1"), "{metrics}");

    // The other partition is served as before.
    let healthy: Vec<String> = (0..50).map(|i| value(i, 20)).collect();
    common::produce_values(&producer, "healthy", 0, &healthy).await;
    let consumed = common::consume(&bootstrap, "healthy", 0, Offset::Beginning, 50).await;
    assert_eq!(common::payloads(&consumed), healthy);

    // A restart recovers the failed partition with everything acknowledged before the fault.
    broker.shutdown().await.unwrap();
    assert!(
        !dir.path().join(".clean-shutdown").exists(),
        "a broker with an offline partition must not claim a clean shutdown"
    );
    let broker = common::start(dir.path(), &properties).await;
    let bootstrap = common::bootstrap(&broker);
    let consumed = common::consume(&bootstrap, "failing", 0, Offset::Beginning, 50).await;
    assert_eq!(common::payloads(&consumed), before);
    let log_end = broker
        .context()
        .topics
        .partition("failing", 0)
        .unwrap()
        .offsets()
        .log_end_offset;
    // The refused record may have reached the disk before the fsync failed; nothing else can.
    assert!((50..=51).contains(&log_end), "log end {log_end}");
    let producer = common::producer(&bootstrap, &[]);
    common::produce_values(&producer, "failing", 0, &["again".to_string()]).await;
    broker.shutdown().await.unwrap();
}
