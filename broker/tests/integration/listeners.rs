//! Named listeners (Kafka's `listeners`, `advertised.listeners`,
//! `listener.security.protocol.map`, `inter.broker.listener.name`), with rdkafka: each listener
//! answers Metadata with the addresses advertised for it, records written through one are read
//! through the other, and in a cluster the brokers replicate over the inter-broker listener
//! while clients use another. Listener settings the broker cannot serve stop it at start-up.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::FutureRecord;
use rdkafka::{Message, Offset};
use weir_broker::{Broker, BrokerError};

use crate::cluster::{free_port, TestCluster};
use crate::common::*;

/// (node id, host:port) of every broker in the Metadata a client of `bootstrap` gets.
fn advertised_brokers(bootstrap: &str) -> BTreeMap<i32, String> {
    try_advertised_brokers(bootstrap).expect("metadata")
}

fn try_advertised_brokers(bootstrap: &str) -> rdkafka::error::KafkaResult<BTreeMap<i32, String>> {
    let consumer: BaseConsumer = client_config(bootstrap).create()?;
    let metadata = consumer.fetch_metadata(None, TIMEOUT)?;
    Ok(metadata
        .brokers()
        .iter()
        .map(|broker| (broker.id(), format!("{}:{}", broker.host(), broker.port())))
        .collect())
}

/// Sends `values` keyed by themselves to partition 0 with acks=all.
async fn produce_all(bootstrap: &str, topic: &str, values: &[String]) {
    let producer = producer(bootstrap, &[("acks", "all")]);
    for value in values {
        let record = FutureRecord::to(topic)
            .key(value)
            .payload(value)
            .partition(0);
        producer
            .send(record, Duration::from_secs(20))
            .await
            .map_err(|(error, _)| error)
            .expect("delivered");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_listener_advertises_its_own_address() {
    let dir = tempfile::tempdir().unwrap();
    let (internal, external) = (free_port(), free_port());
    let listeners = format!("INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}");
    let advertised = format!("EXTERNAL://localhost:{external}");
    let broker = start(
        dir.path(),
        &[
            ("listeners", &listeners),
            ("advertised.listeners", &advertised),
            (
                "listener.security.protocol.map",
                "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            ),
        ],
    )
    .await;
    let internal_bootstrap = format!("127.0.0.1:{internal}");
    let external_bootstrap = format!("127.0.0.1:{external}");
    assert_eq!(
        broker.listener_addr("EXTERNAL").map(|a| a.port()),
        Some(external)
    );
    assert_eq!(
        advertised_brokers(&internal_bootstrap),
        BTreeMap::from([(1, internal_bootstrap.clone())]),
        "unadvertised: the bound address"
    );
    assert_eq!(
        advertised_brokers(&external_bootstrap),
        BTreeMap::from([(1, format!("localhost:{external}"))])
    );
    create_topic(&external_bootstrap, "listened", 1, &[]).await;
    let values: Vec<String> = (0..50).map(|i| format!("record-{i}")).collect();
    produce_all(&external_bootstrap, "listened", &values).await;
    let read = consume(
        &internal_bootstrap,
        "listened",
        0,
        Offset::Beginning,
        values.len(),
    )
    .await;
    let read: Vec<(i64, String)> = read
        .iter()
        .map(|m| (m.offset(), payloads(std::slice::from_ref(m)).remove(0)))
        .collect();
    let expected: Vec<(i64, String)> = values
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, v)| (i as i64, v))
        .collect();
    assert_eq!(read, expected);
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listener_settings_the_broker_cannot_serve_stop_it_at_start_up() {
    let cases: [&[(&str, &str)]; 4] = [
        &[("listeners", "SSL://127.0.0.1:0")],
        &[
            ("listeners", "CLIENTS://127.0.0.1:0"),
            ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT"),
        ],
        &[
            ("listeners", "PLAINTEXT://127.0.0.1:0"),
            ("inter.broker.listener.name", "REPLICATION"),
        ],
        &[
            ("listeners", "PLAINTEXT://127.0.0.1:0"),
            ("advertised.listeners", "EXTERNAL://example.com:9092"),
        ],
    ];
    for properties in cases {
        let dir = tempfile::tempdir().unwrap();
        let started = Broker::start(config(dir.path(), properties)).await;
        match started {
            Err(BrokerError::Config(error)) => {
                tracing::info!(%error, "refused as expected");
            }
            Err(other) => panic!("{properties:?}: not a configuration error: {other}"),
            Ok(broker) => {
                broker.shutdown().await.unwrap();
                panic!("{properties:?} started");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_replicate_on_the_inter_broker_listener_while_clients_use_another() {
    let ports: BTreeMap<i32, (u16, u16)> =
        (1..=3).map(|id| (id, (free_port(), free_port()))).collect();
    let cluster = TestCluster::start_configured(3, |node_id| {
        let (internal, external) = ports[&node_id];
        vec![
            (
                "listeners".into(),
                format!("INTERNAL://127.0.0.1:{internal},EXTERNAL://127.0.0.1:{external}"),
            ),
            (
                "advertised.listeners".into(),
                format!("EXTERNAL://localhost:{external}"),
            ),
            (
                "listener.security.protocol.map".into(),
                "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT".into(),
            ),
            ("inter.broker.listener.name".into(), "INTERNAL".into()),
        ]
    })
    .await;
    let external_of_1 = format!("127.0.0.1:{}", ports[&1].1);
    let internal_of_2 = format!("127.0.0.1:{}", ports[&2].0);
    let expected_external: BTreeMap<i32, String> = ports
        .iter()
        .map(|(id, (_, external))| (*id, format!("localhost:{external}")))
        .collect();
    let expected_internal: BTreeMap<i32, String> = ports
        .iter()
        .map(|(id, (internal, _))| (*id, format!("127.0.0.1:{internal}")))
        .collect();
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    // Each broker's image learns of the others' registrations on its own time.
    let registered = |bootstrap: &str| try_advertised_brokers(bootstrap).map_or(0, |b| b.len());
    while registered(&external_of_1) < 3 || registered(&internal_of_2) < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "brokers never registered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(advertised_brokers(&external_of_1), expected_external);
    assert_eq!(advertised_brokers(&internal_of_2), expected_internal);

    let topic = NewTopic::new("replicated", 1, TopicReplication::Fixed(3));
    admin(&external_of_1)
        .create_topics([&topic], &admin_options())
        .await
        .unwrap()[0]
        .as_ref()
        .expect("created");
    let values: Vec<String> = (0..100).map(|i| format!("value-{i}")).collect();
    produce_all(&external_of_1, "replicated", &values).await;
    // Every replica has every record: followers fetched over INTERNAL.
    for node_id in 1..=3 {
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        loop {
            let replica = cluster.brokers[&node_id].context().topics.get("replicated");
            let end =
                replica.and_then(|topic| topic.partition(0).map(|p| p.log().log_end_offset()));
            if end == Some(values.len() as i64) {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "broker {node_id}'s replica is at {end:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let read = consume(
        &internal_of_2,
        "replicated",
        0,
        Offset::Beginning,
        values.len(),
    )
    .await;
    let read: Vec<String> = payloads(&read);
    assert_eq!(read, values);
}
