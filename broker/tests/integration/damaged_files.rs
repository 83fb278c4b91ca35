//! Start-up with damaged or hostile bytes in what it reads back: records of
//! `__consumer_offsets` that do not decode, a compressed batch, garbage after the last batch and
//! topic metadata files that could not have been written by a broker. Each is skipped with a
//! logged reason; start-up goes on, and what was good is still there.

use std::io::Write;

use bytes::Bytes;
use kafka_protocol::records::Compression;
use rdkafka::consumer::Consumer;
use rdkafka::{Offset, TopicPartitionList};
use weir_broker::group::offsets;
use weir_broker::topic::internal::key_value_batch;

use crate::common;

const OFFSETS_TOPIC: &str = "__consumer_offsets";

fn committed(bootstrap: &str, group: &str, topic: &str) -> Offset {
    let reader = common::assigned_consumer(
        bootstrap,
        topic,
        0,
        Offset::Beginning,
        &[("group.id", group)],
    );
    let mut query = TopicPartitionList::new();
    query.add_partition(topic, 0);
    let committed = reader.committed_offsets(query, common::TIMEOUT).unwrap();
    committed.find_partition(topic, 0).unwrap().offset()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_internal_records_and_topic_metadata_are_skipped_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "kept", 1, &[]).await;
    let producer = common::producer(&bootstrap, &[]);
    let values: Vec<String> = (0..10).map(|i| format!("value-{i}")).collect();
    common::produce_values(&producer, "kept", 0, &values).await;
    common::commit(&bootstrap, "readers", "kept", &[(0, 7)]);

    // Hostile records where the group's commits live: a key that decodes as nothing, an offset
    // key whose value does not decode (must not act as a tombstone), and a compressed batch.
    let index = offsets::partition_for("readers", 50);
    let partition = broker
        .context()
        .topics
        .partition(OFFSETS_TOPIC, index)
        .unwrap();
    let garbage = Bytes::from_static(&[0xff; 40]);
    let hostile = key_value_batch(
        vec![
            (garbage.clone(), Some(garbage.clone())),
            (
                offsets::encode_key("readers", "kept", 0),
                Some(garbage.clone()),
            ),
        ],
        None,
        1_700_000_000_000,
    )
    .unwrap();
    partition.append_from_coordinator(hostile).unwrap();
    let compressed = crate::records::encode_keyed_batch(
        &[(Some(b"key".as_slice()), Some(b"value".as_slice()))],
        Compression::Gzip,
        1_700_000_000_000,
    );
    partition.append_from_coordinator(compressed).unwrap();
    let segment = partition.log().dir().join("00000000000000000000.log");
    broker.shutdown().await.unwrap();

    // Garbage after the last batch: a header that claims 1 GiB.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&segment)
        .unwrap();
    let mut fake = vec![0u8; 8];
    fake.extend_from_slice(&(1i32 << 30).to_be_bytes());
    fake.extend_from_slice(&[0x55; 60]);
    file.write_all(&fake).unwrap();
    drop(file);
    // Topic metadata no broker writes: 2^31-1 partitions, bytes that are not JSON, a name that is
    // not a topic name.
    let meta = dir.path().join("meta").join("topics");
    let id = "\"00000000-0000-0000-0000-000000000001\"";
    std::fs::write(
        meta.join("huge.json"),
        format!("{{\"id\": {id}, \"partitions\": 2147483647}}"),
    )
    .unwrap();
    std::fs::write(meta.join("garbage.json"), b"\x00\x01 not json").unwrap();
    std::fs::write(
        meta.join("a b.json"),
        format!("{{\"id\": {id}, \"partitions\": 1}}"),
    )
    .unwrap();

    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    assert_eq!(
        committed(&bootstrap, "readers", "kept"),
        Offset::Offset(7),
        "the commit survives a damaged value after it"
    );
    let consumed = common::consume(&bootstrap, "kept", 0, Offset::Beginning, 10).await;
    assert_eq!(common::payloads(&consumed), values);
    let mut names: Vec<String> = broker
        .context()
        .topics
        .all()
        .iter()
        .map(|topic| topic.name.to_string())
        .filter(|name| !name.starts_with("__"))
        .collect();
    names.sort();
    assert_eq!(names, vec!["kept".to_string()]);
    // The group coordinator works on: a new commit lands and is read back.
    common::commit(&bootstrap, "readers", "kept", &[(0, 9)]);
    assert_eq!(committed(&bootstrap, "readers", "kept"), Offset::Offset(9));
    drop(producer);
    broker.shutdown().await.unwrap();
}
