//! Client quotas: set and described with AlterClientQuotas / DescribeClientQuotas (raw requests:
//! librdkafka has no admin call for them), kept across a restart, enforced on Produce and Fetch
//! with `throttle_time_ms` and a muted connection, refused for types Weir does not enforce.

use std::time::Instant;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use rdkafka::Offset;

use crate::bad_input::produce_request;
use crate::common;
use crate::raw::RawClient;

const INVALID_REQUEST: i16 = 42;

/// An AlterClientQuotas entry: entity parts (type, name; `None` the default) and (key, value;
/// `None` removes).
fn entry(
    entity: &[(&'static str, Option<&'static str>)],
    ops: &[(&'static str, Option<f64>)],
) -> alter_client_quotas_request::EntryData {
    let entity = entity
        .iter()
        .map(|(entity_type, name)| {
            alter_client_quotas_request::EntityData::default()
                .with_entity_type(StrBytes::from_static_str(entity_type))
                .with_entity_name(name.map(StrBytes::from_static_str))
        })
        .collect();
    let ops = ops
        .iter()
        .map(|(key, value)| {
            alter_client_quotas_request::OpData::default()
                .with_key(StrBytes::from_static_str(key))
                .with_value(value.unwrap_or(0.0))
                .with_remove(value.is_none())
        })
        .collect();
    alter_client_quotas_request::EntryData::default()
        .with_entity(entity)
        .with_ops(ops)
}

async fn alter(
    addr: std::net::SocketAddr,
    entries: Vec<alter_client_quotas_request::EntryData>,
) -> Vec<(i16, String)> {
    let request = AlterClientQuotasRequest::default().with_entries(entries);
    let response = RawClient::connect(addr).await.call(1, &request).await;
    response
        .entries
        .into_iter()
        .map(|e| {
            (
                e.error_code,
                e.error_message.map(|m| m.to_string()).unwrap_or_default(),
            )
        })
        .collect()
}

/// Entities matching the filter, each as "type=name|type=<default>,… key=value,…", sorted.
async fn describe(
    addr: std::net::SocketAddr,
    components: &[(&'static str, i8, Option<&'static str>)],
    strict: bool,
) -> Vec<String> {
    let components = components
        .iter()
        .map(|(entity_type, match_type, name)| {
            describe_client_quotas_request::ComponentData::default()
                .with_entity_type(StrBytes::from_static_str(entity_type))
                .with_match_type(*match_type)
                .with_match(name.map(StrBytes::from_static_str))
        })
        .collect();
    let request = DescribeClientQuotasRequest::default()
        .with_components(components)
        .with_strict(strict);
    let response = RawClient::connect(addr).await.call(1, &request).await;
    assert_eq!(response.error_code, 0);
    let mut entries: Vec<String> = response
        .entries
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let entity: Vec<String> = e
                .entity
                .iter()
                .map(|p| {
                    format!(
                        "{}={}",
                        p.entity_type,
                        p.entity_name.as_deref().unwrap_or("<default>")
                    )
                })
                .collect();
            let values: Vec<String> = e
                .values
                .iter()
                .map(|v| format!("{}={}", v.key, v.value))
                .collect();
            format!("{} {}", entity.join(","), values.join(","))
        })
        .collect();
    entries.sort();
    entries
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_are_set_described_as_kafka_filters_them_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let addr = broker.local_addr();
    let outcomes = alter(
        addr,
        vec![
            entry(
                &[("client-id", Some("slow"))],
                &[("producer_byte_rate", Some(1000.0))],
            ),
            entry(&[("user", None)], &[("consumer_byte_rate", Some(2000.0))]),
            entry(
                &[("user", Some("alice")), ("client-id", Some("app"))],
                &[("producer_byte_rate", Some(3000.0))],
            ),
            entry(
                &[("client-id", Some("x"))],
                &[("request_percentage", Some(50.0))],
            ),
            entry(
                &[("ip", Some("10.0.0.1"))],
                &[("connection_creation_rate", Some(5.0))],
            ),
            entry(
                &[("client-id", Some("y"))],
                &[("producer_byte_rate", Some(-1.0))],
            ),
        ],
    )
    .await;
    let codes: Vec<i16> = outcomes.iter().map(|(code, _)| *code).collect();
    assert_eq!(
        codes,
        [0, 0, 0, INVALID_REQUEST, INVALID_REQUEST, INVALID_REQUEST]
    );
    assert!(outcomes[3].1.contains("not enforced"), "{}", outcomes[3].1);
    let all = [
        "client-id=slow producer_byte_rate=1000",
        "user=<default> consumer_byte_rate=2000",
        "user=alice,client-id=app producer_byte_rate=3000",
    ];
    assert_eq!(describe(addr, &[], false).await, all);
    assert_eq!(
        describe(addr, &[("client-id", 0, Some("slow"))], false).await,
        [all[0]]
    );
    assert_eq!(describe(addr, &[("user", 1, None)], false).await, [all[1]]);
    assert_eq!(describe(addr, &[("user", 2, None)], false).await, [all[2]]);
    assert!(
        describe(addr, &[("user", 2, None)], true).await.is_empty(),
        "strict"
    );
    broker.shutdown().await.unwrap();

    let broker = common::start(dir.path(), &[]).await;
    let addr = broker.local_addr();
    assert_eq!(
        describe(addr, &[], false).await,
        all,
        "kept across a restart"
    );
    let removed = alter(
        addr,
        vec![entry(
            &[("client-id", Some("slow"))],
            &[("producer_byte_rate", None)],
        )],
    )
    .await;
    assert_eq!(removed[0].0, 0);
    assert_eq!(describe(addr, &[], false).await, all[1..]);
    broker.shutdown().await.unwrap();
}

/// Sends `request` and then ApiVersions on the same connection: the response's throttle, and
/// how long the ApiVersions took (the connection is muted for the throttle).
async fn throttled_then_muted<R: kafka_protocol::protocol::Request>(
    client: &mut RawClient,
    version: i16,
    request: &R,
    throttle_of: impl Fn(&R::Response) -> i32,
) -> (i32, std::time::Duration) {
    let response = client.call(version, request).await;
    let started = Instant::now();
    client.call(3, &ApiVersionsRequest::default()).await;
    (throttle_of(&response), started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_over_their_byte_rates_are_throttled_and_muted_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    // Rates over 2 windows of 1 s: measured over at least 1 s.
    let properties = [
        ("quota.window.num", "2"),
        ("quota.window.size.seconds", "1"),
    ];
    let broker = common::start(dir.path(), &properties).await;
    let addr = broker.local_addr();
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "metered", 1, &[]).await;
    let outcomes = alter(
        addr,
        vec![
            entry(
                &[("client-id", Some("throttled"))],
                &[("producer_byte_rate", Some(10_000.0))],
            ),
            entry(
                &[("client-id", Some("reader"))],
                &[("consumer_byte_rate", Some(10_000.0))],
            ),
        ],
    )
    .await;
    assert!(outcomes.iter().all(|(code, _)| *code == 0), "{outcomes:?}");

    // 50 KB in one request at 10 KB/s, measured over 1 s: 4 s of throttle, bounded by the two
    // windows (2 s); the connection waits it out before reading the next request.
    let value = "v".repeat(50_000);
    let batch = crate::records::encode_batch(&[value.as_bytes()], Compression::None).freeze();
    let request = produce_request("metered", batch.clone());
    let produce_throttle = |r: &ProduceResponse| r.throttle_time_ms;
    let mut throttled = RawClient::connect(addr).await.with_client_id("throttled");
    let (throttle_ms, waited) =
        throttled_then_muted(&mut throttled, 9, &request, produce_throttle).await;
    assert!(throttle_ms >= 1_500, "throttle {throttle_ms} ms");
    assert!(
        waited.as_millis() as i32 >= throttle_ms * 9 / 10,
        "the next request was read after {waited:?} of a {throttle_ms} ms throttle"
    );
    // acks=0: no response to carry the throttle, the connection is muted all the same.
    let mut unacknowledged = RawClient::connect(addr).await.with_client_id("throttled");
    let (_, body) = unacknowledged.encode(9, &request.clone().with_acks(0));
    unacknowledged.send_frame(&body).await;
    let started = Instant::now();
    unacknowledged.call(3, &ApiVersionsRequest::default()).await;
    assert!(
        started.elapsed().as_millis() >= 1_000,
        "after an acks=0 produce over the quota the next request was read after {:?}",
        started.elapsed()
    );
    let mut free = RawClient::connect(addr).await.with_client_id("free");
    let (free_throttle_ms, _) =
        throttled_then_muted(&mut free, 9, &request, produce_throttle).await;
    assert_eq!(
        free_throttle_ms, 0,
        "a client without a quota is not throttled"
    );

    // Fetching the 100 KB back as "reader" earns a throttle too; the records are all there.
    let fetch = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_static_str("metered")))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_partition_max_bytes(1 << 20)])]);
    let mut reader = RawClient::connect(addr).await.with_client_id("reader");
    let (fetch_throttle_ms, _) =
        throttled_then_muted(&mut reader, 12, &fetch, |r: &FetchResponse| {
            r.throttle_time_ms
        })
        .await;
    assert!(
        fetch_throttle_ms >= 1_500,
        "fetch throttle {fetch_throttle_ms} ms"
    );

    // librdkafka as the throttled client: every record arrives, in order, exactly once.
    let producer = common::producer(&bootstrap, &[("client.id", "throttled")]);
    let values: Vec<String> = (0..20)
        .map(|i| format!("{i}-{}", "x".repeat(2_000)))
        .collect();
    common::produce_values(&producer, "metered", 0, &values).await;
    let consumed = common::consume(&bootstrap, "metered", 0, Offset::Offset(3), 20).await;
    assert_eq!(common::payloads(&consumed), values);
    assert!(
        broker
            .context()
            .metrics
            .throttled_requests
            .with_label_values(&["producer_byte_rate"])
            .get()
            >= 1
    );
    broker.shutdown().await.unwrap();
}
