//! Bad input gets a Kafka error code or a closed connection — never a panic or a hang — and
//! the broker keeps serving others.

use bytes::BufMut;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiVersionsRequest, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use kafka_protocol::ResponseError;
use rdkafka::types::RDKafkaErrorCode;

use crate::common;
use crate::raw::RawClient;

/// The error librdkafka reports for a record the broker refused.
async fn refused<K, P>(
    producer: &rdkafka::producer::FutureProducer,
    record: rdkafka::producer::FutureRecord<'_, K, P>,
) -> RDKafkaErrorCode
where
    K: rdkafka::message::ToBytes + ?Sized,
    P: rdkafka::message::ToBytes + ?Sized,
{
    match producer.send(record, common::TIMEOUT).await {
        Err((rdkafka::error::KafkaError::MessageProduction(code), _)) => code,
        other => panic!("expected a refused record, got {other:?}"),
    }
}

fn batch(values: &[&str], compression: Compression) -> bytes::BytesMut {
    let values: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
    crate::records::encode_batch_with_timestamps(&values, compression, 1_700_000_000_000)
}

pub(crate) fn produce_request(topic: &str, records: bytes::Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(records))])])
}

pub(crate) async fn produce_error(
    client: &mut RawClient,
    topic: &str,
    records: bytes::Bytes,
) -> (i16, Option<String>) {
    let response = client.call(9, &produce_request(topic, records)).await;
    let partition = &response.responses[0].partition_responses[0];
    (
        partition.error_code,
        partition.error_message.as_ref().map(|m| m.to_string()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_and_malformed_batches_get_error_codes() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;

    let good = batch(&["a", "b"], Compression::None);
    let (code, _) = produce_error(&mut client, "bad-input", good.clone().freeze()).await;
    assert_eq!(code, 0, "a good batch is accepted");

    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0xff;
    let (code, message) = produce_error(&mut client, "bad-input", flipped.freeze()).await;
    assert_eq!(
        code,
        ResponseError::CorruptMessage.code(),
        "bad CRC: {message:?}"
    );

    let mut two = good.clone();
    two.extend_from_slice(&good);
    let (code, _) = produce_error(&mut client, "bad-input", two.freeze()).await;
    assert_eq!(
        code,
        ResponseError::InvalidRecord.code(),
        "two batches in one partition"
    );

    let truncated = good.clone().split_to(good.len() - 3).freeze();
    let (code, _) = produce_error(&mut client, "bad-input", truncated).await;
    assert_eq!(
        code,
        ResponseError::CorruptMessage.code(),
        "truncated batch"
    );

    let mut magic1 = good.clone();
    magic1[16] = 1;
    let (code, _) = produce_error(&mut client, "bad-input", magic1.freeze()).await;
    assert_eq!(
        code,
        ResponseError::UnsupportedForMessageFormat.code(),
        "old magic"
    );

    // A record count that disagrees with the records inside, with a valid CRC.
    let mut miscounted = good.clone();
    miscounted[57..61].copy_from_slice(&3i32.to_be_bytes());
    miscounted[23..27].copy_from_slice(&2i32.to_be_bytes());
    let crc = crc32c::crc32c(&miscounted[21..]);
    miscounted[17..21].copy_from_slice(&crc.to_be_bytes());
    let (code, message) = produce_error(&mut client, "bad-input", miscounted.freeze()).await;
    assert_eq!(
        code,
        ResponseError::InvalidRecord.code(),
        "miscounted records: {message:?}"
    );

    // Nothing but the first good batch was stored.
    let offsets = client
        .call(
            7,
            &kafka_protocol::messages::ListOffsetsRequest::default().with_topics(vec![
                kafka_protocol::messages::list_offsets_request::ListOffsetsTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("bad-input")))
                    .with_partitions(vec![kafka_protocol::messages::list_offsets_request::ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(-1)]),
            ]),
        )
        .await;
    assert_eq!(offsets.topics[0].partitions[0].offset, 2);
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_over_max_message_bytes_is_message_too_large() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "small", 1, &[("max.message.bytes", "1000")]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;
    let big = "x".repeat(2000);
    let (code, message) = produce_error(
        &mut client,
        "small",
        batch(&[&big], Compression::None).freeze(),
    )
    .await;
    assert_eq!(code, ResponseError::MessageTooLarge.code(), "{message:?}");
    let (code, _) = produce_error(
        &mut client,
        "small",
        batch(&["fits"], Compression::None).freeze(),
    )
    .await;
    assert_eq!(code, 0);

    // The same through a real client: librdkafka reports the broker's error.
    let producer = common::producer(&bootstrap, &[("message.max.bytes", "100000")]);
    let record = rdkafka::producer::FutureRecord::<(), String>::to("small")
        .partition(0)
        .payload(&big);
    assert_eq!(
        refused(&producer, record).await,
        RDKafkaErrorCode::MessageSizeTooLarge
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_versions_newer_than_supported_gets_v0_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;
    let response = client.call(3, &ApiVersionsRequest::default()).await;
    assert_eq!(response.error_code, 0);
    let produce = response.api_keys.iter().find(|k| k.api_key == 0).unwrap();
    assert_eq!((produce.min_version, produce.max_version), (3, 12));
    assert!(
        response.api_keys.iter().all(|k| k.api_key != 35),
        "DescribeLogDirs is not implemented yet, so not advertised"
    );

    // v4 is newer than we implement: the answer comes in v0 with UNSUPPORTED_VERSION.
    let (correlation_id, body) = client.encode(4, &ApiVersionsRequest::default());
    client.send_frame(&body).await;
    let frame = client.read_frame().await.unwrap();
    let (got, response) = RawClient::decode::<ApiVersionsRequest>(0, frame);
    assert_eq!(got, correlation_id);
    assert_eq!(
        response.error_code,
        ResponseError::UnsupportedVersion.code()
    );
    assert!(response
        .api_keys
        .iter()
        .any(|k| k.api_key == 18 && k.max_version == 3));
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_frames_close_the_connection_and_broker_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[("socket.request.max.bytes", "1048576")]).await;

    // Frame larger than socket.request.max.bytes.
    let mut client = RawClient::connect(broker.local_addr()).await;
    client.send_raw(&(10 * 1024 * 1024i32).to_be_bytes()).await;
    assert!(client.is_closed().await, "oversized frame");

    // Negative size.
    let mut client = RawClient::connect(broker.local_addr()).await;
    client.send_raw(&(-5i32).to_be_bytes()).await;
    assert!(client.is_closed().await, "negative frame size");

    // Unknown API key.
    let mut client = RawClient::connect(broker.local_addr()).await;
    let mut frame = bytes::BytesMut::new();
    frame.put_i16(9999);
    frame.put_i16(0);
    frame.put_i32(7);
    frame.put_i16(-1);
    client.send_frame(&frame).await;
    assert!(client.is_closed().await, "unknown api key");

    // A known API we do not implement yet: its own response with UNSUPPORTED_VERSION.
    let mut client = RawClient::connect(broker.local_addr()).await;
    let response = client
        .call(
            0,
            &kafka_protocol::messages::ConsumerGroupHeartbeatRequest::default(),
        )
        .await;
    assert_eq!(
        response.error_code,
        ResponseError::UnsupportedVersion.code()
    );
    // One whose response has no top-level error code (DescribeLogDirs v1): closed, as Kafka does.
    let (_, body) = client.encode(
        1,
        &kafka_protocol::messages::DescribeLogDirsRequest::default(),
    );
    client.send_frame(&body).await;
    assert!(client.is_closed().await, "unanswerable api");

    // Metadata whose body is cut short.
    let mut client = RawClient::connect(broker.local_addr()).await;
    let (_, body) = client.encode(
        12,
        &kafka_protocol::messages::MetadataRequest::default().with_topics(Some(vec![
            kafka_protocol::messages::metadata_request::MetadataRequestTopic::default().with_name(
                Some(TopicName(StrBytes::from_static_str("some-topic-name"))),
            ),
        ])),
    );
    client.send_frame(&body[..body.len() - 6]).await;
    assert!(client.is_closed().await, "truncated body");

    // Garbage that claims a tiny frame.
    let mut client = RawClient::connect(broker.local_addr()).await;
    client.send_frame(&[1, 2, 3]).await;
    assert!(client.is_closed().await, "frame too short for a header");

    // A client that disconnects halfway through a frame does not wedge anything.
    let mut client = RawClient::connect(broker.local_addr()).await;
    client.send_raw(&100i32.to_be_bytes()).await;
    client.send_raw(&[0u8; 10]).await;
    drop(client);

    // Still serving.
    let mut client = RawClient::connect(broker.local_addr()).await;
    let response = client.call(3, &ApiVersionsRequest::default()).await;
    assert_eq!(response.error_code, 0);
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_answered_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;
    let mut expected = Vec::new();
    let mut bytes = bytes::BytesMut::new();
    for i in 0..50 {
        let request = produce_request(
            "pipelined",
            batch(&[&format!("v{i}")], Compression::None).freeze(),
        );
        let (correlation_id, body) = client.encode(9, &request);
        bytes.put_i32(body.len() as i32);
        bytes.put_slice(&body);
        expected.push(correlation_id);
    }
    client.send_raw(&bytes).await;
    for (i, correlation_id) in expected.into_iter().enumerate() {
        let frame = client.read_frame().await.unwrap();
        let (got, response) = RawClient::decode::<ProduceRequest>(9, frame);
        assert_eq!(got, correlation_id);
        let partition = &response.responses[0].partition_responses[0];
        assert_eq!(partition.error_code, 0);
        assert_eq!(
            partition.base_offset, i as i64,
            "appends keep request order"
        );
    }
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_topics_and_invalid_names() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[("auto.create.topics.enable", "false")]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;
    let (code, _) = produce_error(
        &mut client,
        "missing",
        batch(&["a"], Compression::None).freeze(),
    )
    .await;
    assert_eq!(code, ResponseError::UnknownTopicOrPartition.code());
    let metadata = client
        .call(
            12,
            &kafka_protocol::messages::MetadataRequest::default().with_topics(Some(vec![
                kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_static_str("missing")))),
                kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
                    .with_name(Some(TopicName(StrBytes::from_static_str("bad name!")))),
            ])),
        )
        .await;
    assert_eq!(
        metadata.topics[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    assert_eq!(
        metadata.topics[1].error_code,
        ResponseError::InvalidTopicException.code()
    );
    broker.shutdown().await.unwrap();
}

/// As in Kafka, clients cannot append to its internal topics (INVALID_TOPIC_EXCEPTION, whether
/// the topic exists yet or not); only Kafka's admin client id may. A user topic whose name
/// starts with `__` is an ordinary topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_cannot_produce_to_internal_topics() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "ordinary", 1, &[]).await;
    // A committed offset creates __consumer_offsets (through FindCoordinator).
    common::commit(&bootstrap, "g", "ordinary", &[(0, 0)]);

    let mut client = RawClient::connect(broker.local_addr()).await;
    let record = || batch(&["not an offset"], Compression::None).freeze();
    for topic in [
        "__consumer_offsets",
        "__transaction_state",
        "__share_group_state",
    ] {
        let (code, message) = produce_error(&mut client, topic, record()).await;
        assert_eq!(
            code,
            ResponseError::InvalidTopicException.code(),
            "{topic}: {message:?}"
        );
    }
    let (code, message) = produce_error(&mut client, "__ordinary", record()).await;
    assert_eq!(code, 0, "a user topic starting with __: {message:?}");

    let mut admin = RawClient::connect(broker.local_addr())
        .await
        .with_client_id("__admin_client");
    let (code, _) = produce_error(&mut admin, "__consumer_offsets", record()).await;
    assert_ne!(
        code,
        ResponseError::InvalidTopicException.code(),
        "Kafka's admin client id may append (this keyless record is refused for other reasons)"
    );

    // The same through a real client: librdkafka reports the broker's error.
    let producer = common::producer(&bootstrap, &[]);
    let record = rdkafka::producer::FutureRecord::<str, str>::to("__consumer_offsets")
        .key("k")
        .payload("v");
    assert_eq!(
        refused(&producer, record).await,
        RDKafkaErrorCode::InvalidTopic
    );
    broker.shutdown().await.unwrap();
}

/// A request whose array count claims far more elements than its frame holds gets a closed
/// connection (or an error), never an allocation for the claimed count: the broker keeps
/// serving. These are the 18-byte Metadata v1 request whose topic array claims 2^31-1 entries,
/// and a Metadata v9 request with a compact array count near 2^32, that used to abort it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_array_count_beyond_its_frame_does_not_stop_the_broker() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let mut v1 = bytes::BytesMut::new();
    v1.put_i16(3); // Metadata
    v1.put_i16(1);
    v1.put_i32(7); // correlation id
    v1.put_i16(-1); // no client id
    v1.put_i32(i32::MAX); // topics: 2^31-1 claimed, none sent
    let mut v9 = bytes::BytesMut::new();
    v9.put_i16(3);
    v9.put_i16(9);
    v9.put_i32(8);
    v9.put_i16(-1);
    v9.put_u8(0); // no tagged fields in the header
    v9.put_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]); // compact topics: 2^32-2 claimed
    let mut nested = bytes::BytesMut::new();
    nested.put_i16(3);
    nested.put_i16(1);
    nested.put_i32(9);
    nested.put_i16(-1);
    nested.put_i32(1); // one topic…
    nested.put_i16(1);
    nested.put_u8(b't');
    for frame in [v1, v9, nested] {
        let mut client = RawClient::connect(broker.local_addr()).await;
        client.send_frame(&frame).await;
        if let Some(answer) = client.read_frame().await {
            // An answer must be an error, not a list of 2^31 topics.
            assert!(answer.len() < 1024, "{} bytes answered", answer.len());
        }
        let mut fresh = RawClient::connect(broker.local_addr()).await;
        let versions = fresh.call(3, &ApiVersionsRequest::default()).await;
        assert_eq!(versions.error_code, 0, "the broker still serves");
    }
    broker.shutdown().await.unwrap();
}
