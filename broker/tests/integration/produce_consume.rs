//! Produce and consume with librdkafka: every codec, keys, headers, timestamps, offsets.

use rdkafka::consumer::Consumer;
use rdkafka::message::{Header, Headers, OwnedHeaders};
use rdkafka::producer::FutureRecord;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Message, Offset, Timestamp, TopicPartitionList};

use crate::common::{self, TIMEOUT};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_codec_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("codec-{codec}");
        common::create_topic(&bootstrap, &topic, 1, &[]).await;
        let producer = common::producer(
            &bootstrap,
            &[("compression.type", codec), ("batch.num.messages", "100")],
        );
        let values: Vec<String> = (0..1000)
            .map(|i| format!("{codec} record {i} {}", "payload ".repeat(i % 7)))
            .collect();
        let offsets = common::produce_values(&producer, &topic, 0, &values).await;
        assert_eq!(
            offsets,
            (0..1000).collect::<Vec<i64>>(),
            "{codec}: dense offsets"
        );
        let messages = common::consume(&bootstrap, &topic, 0, Offset::Beginning, 1000).await;
        assert_eq!(
            common::payloads(&messages),
            values,
            "{codec}: values round trip"
        );
        // Start in the middle of a batch: the consumer still gets exactly the records it asked for.
        let messages = common::consume(&bootstrap, &topic, 0, Offset::Offset(555), 445).await;
        assert_eq!(messages[0].offset(), 555, "{codec}");
        assert_eq!(
            common::payloads(&messages),
            values[555..].to_vec(),
            "{codec}"
        );
    }
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_headers_and_create_time_survive() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "keyed", 4, &[]).await;
    let producer = common::producer(&bootstrap, &[("partitioner", "murmur2_random")]);
    let mut partition_of_key = std::collections::HashMap::new();
    for i in 0..200 {
        let key = format!("user-{}", i % 10);
        let headers = OwnedHeaders::new()
            .insert(Header {
                key: "trace",
                value: Some(&format!("t{i}")),
            })
            .insert(Header {
                key: "empty",
                value: None::<&str>,
            });
        let value = format!("value-{i}");
        let record = FutureRecord::to("keyed")
            .key(&key)
            .payload(&value)
            .headers(headers)
            .timestamp(1_600_000_000_000 + i);
        let delivery = producer.send(record, TIMEOUT).await.expect("delivered");
        let previous = partition_of_key.insert(key.clone(), delivery.partition);
        if let Some(previous) = previous {
            assert_eq!(previous, delivery.partition, "same key, same partition");
        }
    }
    let used: std::collections::HashSet<_> = partition_of_key.values().collect();
    assert!(
        used.len() > 1,
        "10 keys spread over more than one of 4 partitions"
    );
    let mut seen = 0;
    for partition in 0..4 {
        let consumer =
            common::assigned_consumer(&bootstrap, "keyed", partition, Offset::Beginning, &[]);
        let (_, high) = consumer
            .fetch_watermarks("keyed", partition, TIMEOUT)
            .unwrap();
        for _ in 0..high {
            let message = consumer.recv().await.unwrap();
            let key = std::str::from_utf8(message.key().unwrap())
                .unwrap()
                .to_string();
            assert_eq!(partition_of_key[&key], partition);
            let value = std::str::from_utf8(message.payload().unwrap()).unwrap();
            let i: i64 = value.strip_prefix("value-").unwrap().parse().unwrap();
            assert_eq!(
                message.timestamp(),
                Timestamp::CreateTime(1_600_000_000_000 + i)
            );
            let headers = message.headers().expect("headers");
            assert_eq!(headers.count(), 2);
            assert_eq!(headers.get(0).key, "trace");
            assert_eq!(headers.get(0).value, Some(format!("t{i}").as_bytes()));
            assert_eq!(headers.get(1).value, None);
            seen += 1;
        }
    }
    assert_eq!(seen, 200);
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_append_time_topics_stamp_the_broker_time() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(
        &bootstrap,
        "appended",
        1,
        &[("message.timestamp.type", "LogAppendTime")],
    )
    .await;
    let producer = common::producer(&bootstrap, &[("compression.type", "lz4")]);
    let before = now_ms();
    for i in 0..10 {
        let value = format!("v{i}");
        let record = FutureRecord::<(), String>::to("appended")
            .payload(&value)
            .timestamp(1_000);
        producer.send(record, TIMEOUT).await.expect("delivered");
    }
    let after = now_ms();
    for message in common::consume(&bootstrap, "appended", 0, Offset::Beginning, 10).await {
        match message.timestamp() {
            Timestamp::LogAppendTime(t) => {
                assert!(t >= before && t <= after, "{t} in [{before}, {after}]")
            }
            other => panic!("expected LogAppendTime, got {other:?}"),
        }
    }
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_times_beyond_the_topics_timestamp_bounds_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    // Kafka 4's defaults: at most an hour ahead, any age.
    common::create_topic(&bootstrap, "bounded", 1, &[]).await;
    common::create_topic(
        &bootstrap,
        "recent-only",
        1,
        &[("message.timestamp.before.max.ms", "86400000")],
    )
    .await;
    let producer = common::producer(&bootstrap, &[("retries", "0")]);
    let send = |topic: &'static str, value: &'static str, timestamp: i64| {
        let producer = producer.clone();
        async move {
            let record = FutureRecord::<(), str>::to(topic)
                .payload(value)
                .timestamp(timestamp);
            producer
                .send(record, TIMEOUT)
                .await
                .map(|_| ())
                .map_err(|(error, _)| error)
        }
    };
    let (hour, day) = (3_600_000, 86_400_000);
    let refused = send("bounded", "two hours ahead", now_ms() + 2 * hour).await;
    assert_eq!(
        refused.unwrap_err().rdkafka_error_code(),
        Some(RDKafkaErrorCode::InvalidTimestamp)
    );
    send("bounded", "ten years old", now_ms() - 3650 * day)
        .await
        .unwrap();
    send("bounded", "now", now_ms()).await.unwrap();
    let refused = send("recent-only", "two days old", now_ms() - 2 * day).await;
    assert_eq!(
        refused.unwrap_err().rdkafka_error_code(),
        Some(RDKafkaErrorCode::InvalidTimestamp)
    );
    send("recent-only", "an hour old", now_ms() - hour)
        .await
        .unwrap();
    let kept = common::consume(&bootstrap, "bounded", 0, Offset::Beginning, 2).await;
    assert_eq!(common::payloads(&kept), ["ten years old", "now"]);
    let kept = common::consume(&bootstrap, "recent-only", 0, Offset::Beginning, 1).await;
    assert_eq!(common::payloads(&kept), ["an hour old"]);
    broker.shutdown().await.unwrap();
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_by_time_is_exact_to_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    // Small segments and index interval so the search crosses segments and index entries.
    common::create_topic(
        &bootstrap,
        "timed",
        1,
        &[("segment.bytes", "2000"), ("index.interval.bytes", "100")],
    )
    .await;
    let producer = common::producer(
        &bootstrap,
        &[("compression.type", "gzip"), ("linger.ms", "20")],
    );
    // Timestamps 10_000, 10_010, … so every target between records has one right answer.
    let mut futures = Vec::new();
    for i in 0..300i64 {
        let value = format!("r{i}");
        let record = FutureRecord::<(), String>::to("timed")
            .partition(0)
            .payload(&value)
            .timestamp(10_000 + i * 10);
        futures.push(producer.send_result(record).map_err(|(e, _)| e).unwrap());
    }
    for f in futures {
        f.await.unwrap().unwrap();
    }
    let consumer = common::assigned_consumer(&bootstrap, "timed", 0, Offset::Beginning, &[]);
    for (target, expected) in [
        (0, 0),
        (10_000, 0),
        (10_001, 1),
        (10_010, 1),
        (11_235, 124),
        (12_990, 299),
    ] {
        let mut query = TopicPartitionList::new();
        query
            .add_partition_offset("timed", 0, Offset::Offset(target))
            .unwrap();
        let answer = consumer.offsets_for_times(query, TIMEOUT).unwrap();
        let offset = answer.find_partition("timed", 0).unwrap().offset();
        assert_eq!(
            offset,
            Offset::Offset(expected),
            "first record at or after {target}"
        );
    }
    let mut query = TopicPartitionList::new();
    query
        .add_partition_offset("timed", 0, Offset::Offset(20_000))
        .unwrap();
    let answer = consumer.offsets_for_times(query, TIMEOUT).unwrap();
    assert_eq!(
        answer.find_partition("timed", 0).unwrap().offset(),
        Offset::End,
        "past the last record"
    );
    let (low, high) = consumer.fetch_watermarks("timed", 0, TIMEOUT).unwrap();
    assert_eq!((low, high), (0, 300));
    broker.shutdown().await.unwrap();
}
