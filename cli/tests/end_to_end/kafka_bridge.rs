//! Bridging with a real Apache Kafka (the reference broker scripts/test.sh starts with
//! compat/kafka/start-test.sh; `WEIR_TEST_KAFKA_BOOTSTRAP`): one pipeline reads a topic on Kafka
//! into Weir (embedded) and writes the rows back to another Kafka topic transactionally, while
//! records keep arriving and the pipeline process is killed with -9 again and again. The
//! pipeline reaches Kafka as a production cluster, over SASL_SSL (`WEIR_TEST_KAFKA_SASL_SSL`,
//! CA `WEIR_TEST_KAFKA_CA`, PLAIN user bridge); the test's own clients use PLAINTEXT. A
//! read_committed consumer on Kafka must see every record exactly once.

use crate::support::{committed, rng};

use std::collections::BTreeMap;
use std::process::{Child, Command};
use std::thread;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::Consumer;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rng::Rng;

const RECORDS: u64 = 30_000;
const KILLS: usize = 4;

fn far_bootstrap() -> String {
    std::env::var("WEIR_TEST_KAFKA_BOOTSTRAP").expect(
        "WEIR_TEST_KAFKA_BOOTSTRAP is not set: this test needs Apache Kafka (KAFKA_PORT=29192 compat/kafka/start.sh)",
    )
}

/// The pipeline's way to Kafka: the SASL_SSL address and the YAML of its client properties.
fn secured_far() -> (String, String) {
    let address = std::env::var("WEIR_TEST_KAFKA_SASL_SSL").expect(
        "WEIR_TEST_KAFKA_SASL_SSL is not set: this test needs Kafka's SASL_SSL listener \
         (compat/kafka/start-test.sh starts it; scripts/test.sh sets the variable)",
    );
    let ca = std::env::var("WEIR_TEST_KAFKA_CA").expect("WEIR_TEST_KAFKA_CA names Kafka's CA");
    assert!(std::path::Path::new(&ca).is_file(), "{ca} is missing");
    let properties = format!(
        "{{ security.protocol: SASL_SSL, sasl.mechanism: PLAIN, sasl.username: bridge, \
         sasl.password: \"${{BRIDGE_PASSWORD}}\", ssl.ca.location: \"{ca}\" }}"
    );
    (address, properties)
}

fn spawn(
    config: &std::path::Path,
    data: &std::path::Path,
    log: &std::path::Path,
    until_caught_up: bool,
) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_weir"));
    command
        .args(["pipeline", "run"])
        .arg(config)
        .arg("--data-dir")
        .arg(data);
    if until_caught_up {
        command.arg("--until-caught-up");
    }
    command
        .env("RUST_LOG", "info")
        .env("BRIDGE_PASSWORD", "bridge-secret")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap()
}

#[test]
fn kafka_to_weir_to_kafka_exactly_once_across_kills() {
    let _slot = crate::support::test_slot();
    let far = far_bootstrap();
    let (secured, client_properties) = secured_far();
    let seed = Rng::seed_from_clock();
    println!("seed {seed}");
    let mut rng = Rng::new(seed);
    let suffix = format!("{}-{}", std::process::id(), seed % 100_000);
    let (input, output) = (
        format!("bridge-in-{suffix}"),
        format!("bridge-out-{suffix}"),
    );
    let group = format!("bridge-group-{suffix}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &far)
        .create()
        .unwrap();
    runtime
        .block_on(admin.create_topics(
            &[NewTopic::new(&input, 3, TopicReplication::Fixed(1))],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(30))),
        ))
        .unwrap();
    let writer = {
        let (far, input) = (far.clone(), input.clone());
        thread::spawn(move || {
            let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
                .set("bootstrap.servers", &far)
                .set("enable.idempotence", "true")
                .create()
                .unwrap();
            for id in 0..RECORDS {
                let value = format!(
                    "{{\"id\": {id}, \"status\": {}}}",
                    [200, 404, 500][(id % 3) as usize]
                );
                let key = id.to_string();
                producer
                    .send(BaseRecord::to(&input).key(&key).payload(&value))
                    .unwrap();
                if id % 1000 == 999 {
                    thread::sleep(Duration::from_millis(250));
                }
            }
            producer.flush(Duration::from_secs(30)).unwrap();
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bridge.yaml");
    std::fs::write(
        &config,
        format!(
            "name: bridge
source: {{ kind: kafka, bootstrap: \"{secured}\", topic: {input}, format: json, group_id: {group}, client_properties: {client_properties} }}
schema: \"id:int,status:int\"
topic: {{ partitions: 2 }}
transform: {{ sql: \"SELECT id, status, status >= 400 AS failed FROM input\" }}
sinks:
  - {{ kind: kafka, bootstrap: \"{secured}\", topic: {output}, key_column: id, partitions: 2, commit_interval_ms: 300, client_properties: {client_properties} }}
checkpoint_interval_ms: 300
"
        ),
    )
    .unwrap();
    let (data, log) = (dir.path().join("data"), dir.path().join("pipeline.log"));
    for kill in 0..KILLS {
        let mut child = spawn(&config, &data, &log, false);
        let pause = rng.between(2500, 6000);
        thread::sleep(Duration::from_millis(pause));
        child.kill().unwrap();
        child.wait().unwrap();
        println!("kill {} after {pause} ms", kill + 1);
    }
    writer.join().unwrap();
    let mut last = spawn(&config, &data, &log, true);
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = last.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the final run did not end:\n{}",
            std::fs::read_to_string(&log).unwrap()
        );
        thread::sleep(Duration::from_millis(200));
    };
    assert!(
        status.success(),
        "the final run failed:\n{}",
        std::fs::read_to_string(&log).unwrap()
    );
    let values = committed::values(&far, &output, 2, RECORDS as usize, Duration::from_secs(60));
    let mut seen: BTreeMap<u64, u32> = BTreeMap::new();
    for value in &values {
        let row: serde_json::Value = serde_json::from_slice(value).unwrap();
        assert_eq!(
            row["failed"],
            serde_json::json!(row["status"].as_i64().unwrap() >= 400)
        );
        *seen.entry(row["id"].as_u64().unwrap()).or_default() += 1;
    }
    let duplicated: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).take(5).collect();
    assert!(
        duplicated.is_empty(),
        "duplicates on the far side: {duplicated:?}"
    );
    let missing: Vec<u64> = (0..RECORDS)
        .filter(|id| !seen.contains_key(id))
        .take(5)
        .collect();
    assert!(
        missing.is_empty(),
        "missing on the far side: {missing:?} ({} of {RECORDS} there)",
        seen.len()
    );
    assert_eq!(values.len() as u64, RECORDS);
    // The far group was told how far the pipeline got: every partition's end.
    let consumer: rdkafka::consumer::BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &far)
        .set("group.id", &group)
        .create()
        .unwrap();
    let mut partitions = rdkafka::TopicPartitionList::new();
    for partition in 0..3 {
        partitions.add_partition(&input, partition);
    }
    let committed = consumer
        .committed_offsets(partitions, Duration::from_secs(30))
        .unwrap();
    let mut total = 0;
    for element in committed.elements() {
        let (_, high) = consumer
            .fetch_watermarks(&input, element.partition(), Duration::from_secs(30))
            .unwrap();
        assert_eq!(
            element.offset(),
            rdkafka::Offset::Offset(high),
            "far group offset of partition {}",
            element.partition()
        );
        total += high;
    }
    assert_eq!(total as u64, RECORDS);
}
