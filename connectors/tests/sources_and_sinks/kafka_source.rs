//! The `kafka` source against Weir's broker (in-process) as the far cluster: a bounded run's
//! "caught up" means every partition's end was reached — not that a poll found nothing, which
//! the first polls do before the connection is up (CI saw a bridge run end at once, having read
//! nothing). Records of an aborted transaction are never read.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use weir_broker::{Broker, BrokerConfig};
use weir_connectors::kafka::{KafkaSource, KafkaSourceConfig, StartAt};
use weir_connectors::source::{Source, SourceRecord};
use weir_connectors::weblog::LogFormat;

const TIMEOUT: Duration = Duration::from_secs(30);

fn producer(
    bootstrap: &str,
    transactional_id: Option<&str>,
) -> ThreadedProducer<DefaultProducerContext> {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true");
    if let Some(id) = transactional_id {
        config.set("transactional.id", id);
    }
    config.create().unwrap()
}

/// Sends `ids` to partitions 0 and 1 (partition 2 stays empty), committed.
fn send(bootstrap: &str, topic: &str, ids: std::ops::Range<u32>) {
    let producer = producer(bootstrap, None);
    for id in ids {
        let value = format!("record-{id}");
        producer
            .send(
                BaseRecord::<(), _>::to(topic)
                    .partition((id % 2) as i32)
                    .payload(&value),
            )
            .unwrap();
    }
    producer.flush(TIMEOUT).unwrap();
}

fn source(bootstrap: &str, topic: &str) -> KafkaSource {
    KafkaSource::new(KafkaSourceConfig {
        bootstrap: bootstrap.into(),
        topic: topic.into(),
        format: LogFormat::Raw,
        start_at: StartAt::Earliest,
        group_id: None,
        client_properties: BTreeMap::new(),
    })
    .unwrap()
}

/// Polls until the source says it caught up; every value read → how many times.
fn read_until_caught_up(source: &mut KafkaSource) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    let deadline = Instant::now() + TIMEOUT;
    let mut polled = Vec::<SourceRecord>::new();
    loop {
        polled.clear();
        source
            .poll(1000, Duration::from_millis(50), &mut polled)
            .unwrap();
        for record in &polled {
            *seen
                .entry(String::from_utf8(record.value.clone()).unwrap())
                .or_default() += 1;
        }
        if polled.is_empty() && source.caught_up() {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "never caught up; read {}",
            seen.len()
        );
    }
}

fn expected(ids: std::ops::Range<u32>) -> BTreeMap<String, usize> {
    ids.map(|id| (format!("record-{id}"), 1)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn caught_up_means_every_partition_was_read_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().to_path_buf());
    let broker = Broker::start(config).await.expect("broker starts");
    let bootstrap = broker.local_addr().to_string();
    let topic = "far-input";
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .create()
        .unwrap();
    for result in admin
        .create_topics(
            &[NewTopic::new(topic, 3, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap()
    {
        result.expect("topic created");
    }
    let (bootstrap_for_thread, topic_for_thread) = (bootstrap.clone(), topic.to_string());
    tokio::task::spawn_blocking(move || {
        send(&bootstrap_for_thread, &topic_for_thread, 0..500);
        // An aborted transaction in between: its records are never read.
        let aborted = producer(&bootstrap_for_thread, Some("far-aborted"));
        aborted.init_transactions(TIMEOUT).unwrap();
        aborted.begin_transaction().unwrap();
        for id in 0..50 {
            let value = format!("aborted-{id}");
            aborted
                .send(
                    BaseRecord::<(), _>::to(&topic_for_thread)
                        .partition(id % 2)
                        .payload(&value),
                )
                .unwrap();
        }
        aborted.flush(TIMEOUT).unwrap();
        aborted.abort_transaction(TIMEOUT).unwrap();
        send(&bootstrap_for_thread, &topic_for_thread, 500..1000);
    })
    .await
    .unwrap();
    let bootstrap_for_thread = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let mut source = source(&bootstrap_for_thread, topic);
        let mut polled = Vec::new();
        // The first poll cannot have fetched anything yet; an idle poll is not the end.
        source.poll(1000, Duration::ZERO, &mut polled).unwrap();
        assert!(polled.is_empty());
        assert!(!source.caught_up(), "caught up before reading anything");
        assert_eq!(read_until_caught_up(&mut source), expected(0..1000));
        // New records: not caught up until they are read too.
        send(&bootstrap_for_thread, topic, 1000..1200);
        assert_eq!(read_until_caught_up(&mut source), expected(1000..1200));
    })
    .await
    .unwrap();
    broker.shutdown().await.unwrap();
}
