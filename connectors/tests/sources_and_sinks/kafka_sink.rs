//! The `kafka` sink applying an updating aggregate's changes, against Weir's broker
//! (in-process) as the far cluster: each change is a record keyed by its group — its row, or a
//! tombstone — in a compacted topic, committed with the input offsets in one transaction.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use rdkafka::admin::{AdminClient, AdminOptions, ResourceSpecifier};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use weir_broker::{Broker, BrokerConfig};
use weir_connectors::kafka::{KafkaSink, KafkaSinkConfig};
use weir_connectors::sink::{Changes, Sink, SinkOffsets};

const TIMEOUT: Duration = Duration::from_secs(30);

fn changes(rows: &[(&str, Option<i64>)]) -> Changes {
    let schema = Arc::new(Schema::new(vec![
        Field::new("path", DataType::Utf8, true),
        Field::new("hits", DataType::Int64, true),
    ]));
    let paths = StringArray::from_iter(rows.iter().map(|(key, hits)| hits.map(|_| *key)));
    let hits = Int64Array::from_iter(rows.iter().map(|(_, hits)| *hits));
    Changes {
        keys: rows.iter().map(|(key, _)| key.to_string()).collect(),
        rows: RecordBatch::try_new(schema, vec![Arc::new(paths), Arc::new(hits)]).unwrap(),
        deleted: rows.iter().map(|(_, hits)| hits.is_none()).collect(),
    }
}

/// Every committed record of `topic` (one partition): (key, value or None for a tombstone).
fn read(bootstrap: &str, topic: &str, want: usize) -> Vec<(String, Option<String>)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "kafka-sink-test")
        .set("isolation.level", "read_committed")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    consumer.subscribe(&[topic]).unwrap();
    let mut records = Vec::new();
    let deadline = Instant::now() + TIMEOUT;
    while records.len() < want && Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(100)) {
            let message = message.unwrap();
            let key = String::from_utf8(message.key().unwrap().to_vec()).unwrap();
            let value = message
                .payload()
                .map(|v| String::from_utf8(v.to_vec()).unwrap());
            records.push((key, value));
        }
    }
    records
}

#[tokio::test(flavor = "multi_thread")]
async fn changes_are_keyed_records_and_tombstones_in_a_compacted_topic() {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().to_path_buf());
    let broker = Broker::start(config).await.expect("broker starts");
    let bootstrap = broker.local_addr().to_string();
    let sink_config = KafkaSinkConfig {
        bootstrap: bootstrap.clone(),
        topic: "hits-by-path".into(),
        key_column: None,
        partitions: 1,
        batch_rows: 1000,
        commit_interval_ms: 1000,
        client_properties: BTreeMap::new(),
    };
    let mut keyed = sink_config.clone();
    keyed.key_column = Some("path".into());
    let error = KafkaSink::new(keyed, "view", "input")
        .unwrap()
        .expect_changes()
        .unwrap_err();
    assert!(
        error.to_string().contains("leave key_column out"),
        "{error}"
    );

    let mut sink = KafkaSink::new(sink_config, "view", "input").unwrap();
    sink.expect_changes().unwrap();
    assert_eq!(
        sink.open(changes(&[]).rows.schema()).await.unwrap(),
        SinkOffsets::new()
    );
    sink.apply(&changes(&[("/a", Some(1)), ("/b", Some(2))]))
        .await
        .unwrap();
    sink.apply(&changes(&[("/a", None)])).await.unwrap();
    sink.commit(&[(0, 3)].into_iter().collect()).await.unwrap();

    let records = tokio::task::spawn_blocking({
        let bootstrap = bootstrap.clone();
        move || read(&bootstrap, "hits-by-path", 3)
    })
    .await
    .unwrap();
    let record = |key: &str, value: Option<&str>| (key.to_string(), value.map(str::to_string));
    assert_eq!(
        records,
        vec![
            record("/a", Some(r#"{"path":"/a","hits":1}"#)),
            record("/b", Some(r#"{"path":"/b","hits":2}"#)),
            record("/a", None),
        ]
    );
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .create()
        .unwrap();
    let described = admin
        .describe_configs(
            &[ResourceSpecifier::Topic("hits-by-path")],
            &AdminOptions::new().request_timeout(Some(TIMEOUT)),
        )
        .await
        .unwrap();
    let resource = described.into_iter().next().unwrap().unwrap();
    let policy = resource
        .get("cleanup.policy")
        .and_then(|entry| entry.value.clone());
    assert_eq!(policy.as_deref(), Some("compact"));
}
