//! Fetch semantics: long polling, at least one batch beyond max bytes (KIP-74), whole batches
//! from mid-batch offsets, topic ids (v13), max-timestamp lookups, out-of-range offsets.

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{FetchRequest, ListOffsetsRequest, MetadataRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;
use kafka_protocol::ResponseError;
use rdkafka::producer::FutureRecord;
use rdkafka::{Message, Offset};

use crate::common::{self, TIMEOUT};
use crate::raw::RawClient;

fn fetch(
    topic: &str,
    offset: i64,
    max_bytes: i32,
    partition_max_bytes: i32,
    max_wait_ms: i32,
    min_bytes: i32,
) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(kafka_protocol::messages::BrokerId(-1))
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(min_bytes)
        .with_max_bytes(max_bytes)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(offset)
                .with_partition_max_bytes(partition_max_bytes)])])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_wakes_on_append_and_times_out_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "polled", 1, &[]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;

    let started = std::time::Instant::now();
    let response = client
        .call(12, &fetch("polled", 0, 1 << 20, 1 << 20, 300, 1))
        .await;
    let waited = started.elapsed();
    assert!(
        waited >= std::time::Duration::from_millis(250),
        "waited {waited:?} for max_wait_ms=300"
    );
    assert!(response.responses[0].partitions[0]
        .records
        .as_ref()
        .unwrap()
        .is_empty());

    // A fetch that waits up to 10 s returns as soon as a record arrives.
    let addr = broker.local_addr();
    let waiter = tokio::spawn(async move {
        let mut client = RawClient::connect(addr).await;
        let started = std::time::Instant::now();
        let response = client
            .call(12, &fetch("polled", 0, 1 << 20, 1 << 20, 10_000, 1))
            .await;
        (started.elapsed(), response)
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let producer = common::producer(&bootstrap, &[("linger.ms", "0")]);
    producer
        .send(
            FutureRecord::<(), str>::to("polled").payload("wake"),
            TIMEOUT,
        )
        .await
        .unwrap();
    let (elapsed, response) = waiter.await.unwrap();
    assert!(
        elapsed < std::time::Duration::from_secs(5),
        "woken by the append, not the timeout: {elapsed:?}"
    );
    let partition = &response.responses[0].partitions[0];
    assert_eq!(partition.high_watermark, 1);
    assert!(!partition.records.as_ref().unwrap().is_empty());
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_first_batch_is_still_returned_whole() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "big", 1, &[]).await;
    let producer = common::producer(&bootstrap, &[("linger.ms", "0")]);
    let big = "b".repeat(200_000);
    for _ in 0..3 {
        producer
            .send(FutureRecord::<(), String>::to("big").payload(&big), TIMEOUT)
            .await
            .unwrap();
    }
    let mut client = RawClient::connect(broker.local_addr()).await;
    // max_bytes of 1 KB, far below one batch: exactly one whole batch comes back.
    let response = client.call(12, &fetch("big", 1, 1024, 1024, 0, 1)).await;
    let mut records = response.responses[0].partitions[0].records.clone().unwrap();
    let batches = RecordBatchDecoder::decode_all(&mut records).unwrap();
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].records[0].offset, 1);
    assert_eq!(batches[0].records[0].value.as_ref().unwrap().len(), 200_000);

    // librdkafka with tiny fetch limits still makes progress.
    let consumer = common::assigned_consumer(
        &bootstrap,
        "big",
        0,
        Offset::Beginning,
        &[
            ("fetch.max.bytes", "1024"),
            ("max.partition.fetch.bytes", "1024"),
            ("message.max.bytes", "1000"),
        ],
    );
    for expected in 0..3 {
        let message = tokio::time::timeout(TIMEOUT, consumer.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(message.offset(), expected);
    }
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_by_topic_id_and_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "ids", 1, &[]).await;
    let producer = common::producer(&bootstrap, &[]);
    common::produce_values(&producer, "ids", 0, &["a".into(), "b".into()]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;
    let metadata = client
        .call(
            12,
            &MetadataRequest::default().with_topics(Some(vec![
                kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_static_str("ids")))),
            ])),
        )
        .await;
    let topic_id = metadata.topics[0].topic_id;
    assert!(!topic_id.is_nil());

    let mut request = fetch("", 0, 1 << 20, 1 << 20, 0, 1);
    request.topics[0].topic_id = topic_id;
    let response = client.call(13, &request).await;
    assert_eq!(response.responses[0].topic_id, topic_id);
    let partition = &response.responses[0].partitions[0];
    assert_eq!(partition.error_code, 0);
    assert_eq!(partition.high_watermark, 2);

    request.topics[0].topic_id = uuid::Uuid::new_v4();
    let response = client.call(13, &request).await;
    assert_eq!(
        response.responses[0].partitions[0].error_code,
        ResponseError::UnknownTopicId.code()
    );

    let response = client
        .call(12, &fetch("ids", 5, 1 << 20, 1 << 20, 0, 1))
        .await;
    assert_eq!(
        response.responses[0].partitions[0].error_code,
        ResponseError::OffsetOutOfRange.code()
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_max_timestamp_names_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "maxts", 1, &[]).await;
    let producer = common::producer(
        &bootstrap,
        &[("compression.type", "zstd"), ("linger.ms", "50")],
    );
    let timestamps = [5_000i64, 9_000, 7_000, 9_000, 1_000];
    let mut futures = Vec::new();
    for (i, ts) in timestamps.iter().enumerate() {
        let value = format!("v{i}");
        let record = FutureRecord::<(), String>::to("maxts")
            .partition(0)
            .payload(&value)
            .timestamp(*ts);
        futures.push(producer.send_result(record).map_err(|(e, _)| e).unwrap());
    }
    for f in futures {
        f.await.unwrap().unwrap();
    }
    let mut client = RawClient::connect(broker.local_addr()).await;
    let query = |timestamp: i64| {
        ListOffsetsRequest::default()
            .with_replica_id(kafka_protocol::messages::BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("maxts")))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(timestamp)])])
    };
    let response = client.call(7, &query(-3)).await;
    let partition = &response.topics[0].partitions[0];
    assert_eq!(
        (partition.offset, partition.timestamp),
        (1, 9_000),
        "first record with the max timestamp"
    );
    let response = client.call(7, &query(-2)).await;
    assert_eq!(response.topics[0].partitions[0].offset, 0);
    let response = client.call(7, &query(-1)).await;
    assert_eq!(response.topics[0].partitions[0].offset, 5);
    let response = client.call(1, &query(6_000)).await;
    assert_eq!(
        response.topics[0].partitions[0].offset, 1,
        "v1 by timestamp"
    );
    broker.shutdown().await.unwrap();
}
