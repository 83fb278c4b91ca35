//! Three brokers in one process forming a cluster (combined mode: each is a controller voter),
//! driven by rdkafka: every broker answers Metadata for the whole cluster, topics are placed
//! by the controller across brokers, clients produce to and consume from the leaders, and a
//! broker's death moves its leaderships once its session expires.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::metadata::Metadata;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::Offset;
use weir_broker::Broker;

use crate::common::*;

const SESSION_TIMEOUT_MS: u64 = 3_000;

pub(crate) struct TestCluster {
    dir: tempfile::TempDir,
    /// `controller.quorum.voters`: nodes 1 to the starting size.
    voters: String,
    pub(crate) brokers: BTreeMap<i32, Broker>,
}

/// A port free now, for a listener bound just after: below Linux's ephemeral range (32768 and
/// up), so that a listener bound to port 0 meanwhile — another node's metrics listener, a
/// client's socket — cannot be given it (a probed port in that range was once handed to a
/// metrics listener, and a Raft peer then spoke to HTTP). Each process starts elsewhere in the
/// range, and a port that does not bind is passed over.
pub(crate) fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    const COUNT: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id().wrapping_mul(97) % COUNT;
    for _ in 0..COUNT {
        let step = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (FIRST + (start + step) % COUNT) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port between {FIRST} and {}", FIRST + COUNT)
}

impl TestCluster {
    pub(crate) async fn start(size: i32) -> TestCluster {
        Self::start_configured(size, |_| Vec::new()).await
    }

    /// [`TestCluster::start`] with `node_properties(node_id)` added to each node's properties.
    pub(crate) async fn start_configured(
        size: i32,
        node_properties: impl Fn(i32) -> Vec<(String, String)>,
    ) -> TestCluster {
        init_logging();
        let dir = tempfile::tempdir().unwrap();
        let ports: Vec<u16> = (0..size).map(|_| free_port()).collect();
        let voters: Vec<String> = ports
            .iter()
            .enumerate()
            .map(|(i, port)| format!("{}@127.0.0.1:{port}", i + 1))
            .collect();
        let mut cluster = TestCluster {
            dir,
            voters: voters.join(","),
            brokers: BTreeMap::new(),
        };
        for (node_id, port) in (1..=size).zip(ports) {
            let extra = node_properties(node_id);
            let extra: Vec<(&str, &str)> = extra
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str()))
                .collect();
            cluster.start_node(node_id, port, &extra).await;
        }
        cluster
    }

    /// Starts node `node_id` with its controller listener on `controller_port`.
    async fn start_node(&mut self, node_id: i32, controller_port: u16, extra: &[(&str, &str)]) {
        let id = node_id.to_string();
        let session = SESSION_TIMEOUT_MS.to_string();
        let mut properties = vec![
            ("node.id", id.as_str()),
            ("controller.quorum.voters", self.voters.as_str()),
            ("controller.quorum.election.timeout.ms", "500"),
            ("broker.heartbeat.interval.ms", "300"),
            ("broker.session.timeout.ms", session.as_str()),
            ("default.replication.factor", "3"),
            ("offsets.topic.num.partitions", "6"),
            ("transaction.state.log.num.partitions", "6"),
            ("group.initial.rebalance.delay.ms", "0"),
        ];
        properties.extend_from_slice(extra);
        let mut broker_config = config(
            &self.dir.path().join(format!("broker-{node_id}")),
            &properties,
        );
        broker_config.controller_listen =
            Some(format!("127.0.0.1:{controller_port}").parse().unwrap());
        broker_config.metrics_listen = Some("127.0.0.1:0".parse().unwrap());
        let broker = Broker::start(broker_config).await.expect("broker starts");
        self.brokers.insert(node_id, broker);
    }

    /// Adds a broker-only node (`process.roles=broker`): not a voter, it observes the metadata
    /// log once the active controller adds it. Its data directory survives a restart.
    pub(crate) async fn add_broker_only(&mut self, node_id: i32) {
        self.start_node(node_id, free_port(), &[("process.roles", "broker")])
            .await;
    }

    /// [`TestCluster::start`], then waits until every broker lists all of them in Metadata.
    pub(crate) async fn start_all_registered(size: i32) -> TestCluster {
        let cluster = TestCluster::start(size).await;
        for node_id in 1..=size {
            wait_for_metadata(&cluster.bootstrap(node_id), None, "all brokers", |m| {
                m.brokers().len() == size as usize
            })
            .await;
        }
        cluster
    }

    pub(crate) fn bootstrap(&self, node_id: i32) -> String {
        bootstrap(&self.brokers[&node_id])
    }
}

fn try_metadata(bootstrap: &str, topic: Option<&str>) -> rdkafka::error::KafkaResult<Metadata> {
    let consumer: BaseConsumer = client_config(bootstrap).create().expect("client");
    tokio::task::block_in_place(|| consumer.fetch_metadata(topic, Duration::from_secs(5)))
}

fn metadata(bootstrap: &str, topic: Option<&str>) -> Metadata {
    try_metadata(bootstrap, topic).expect("metadata")
}

/// Polls `bootstrap`'s Metadata until `ready` holds for it.
pub(crate) async fn wait_for_metadata(
    bootstrap: &str,
    topic: Option<&str>,
    what: &str,
    ready: impl Fn(&Metadata) -> bool,
) -> Metadata {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        // A broker whose metadata has not caught up yet accepts no connection: try again.
        if let Ok(metadata) = try_metadata(bootstrap, topic) {
            if ready(&metadata) {
                return metadata;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{bootstrap}: {what} never happened"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// partition → (leader, replicas, isr)
fn layout(metadata: &Metadata, topic: &str) -> BTreeMap<i32, (i32, Vec<i32>, Vec<i32>)> {
    let topic = metadata
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .expect("topic in metadata");
    topic
        .partitions()
        .iter()
        .map(|p| {
            (
                p.id(),
                (p.leader(), p.replicas().to_vec(), p.isr().to_vec()),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_brokers_place_topics_serve_clients_and_move_leaders_off_a_dead_broker() {
    let mut cluster = TestCluster::start(3).await;
    for node_id in 1..=3 {
        wait_for_metadata(
            &cluster.bootstrap(node_id),
            None,
            "three live brokers",
            |m| m.brokers().len() == 3,
        )
        .await;
    }

    // The controller places six partitions with three replicas each, leaders on every broker.
    let admin = admin(&cluster.bootstrap(2));
    let topic = NewTopic::new("replicated", 6, TopicReplication::Fixed(3));
    let results = admin
        .create_topics([&topic], &admin_options())
        .await
        .unwrap();
    results[0].as_ref().expect("topic created");
    let too_many = NewTopic::new("too-many", 1, TopicReplication::Fixed(4));
    let results = admin
        .create_topics([&too_many], &admin_options())
        .await
        .unwrap();
    assert_eq!(
        results[0].as_ref().unwrap_err().1,
        RDKafkaErrorCode::InvalidReplicationFactor
    );
    // The creating broker's image holds the topic when CreateTopics answers; the others apply
    // it on their own time (as in Kafka, until then they answer UNKNOWN_TOPIC_OR_PARTITION).
    let mut layouts = Vec::new();
    for node_id in 1..=3 {
        let metadata = wait_for_metadata(
            &cluster.bootstrap(node_id),
            Some("replicated"),
            "the topic's six partitions",
            |m| layout(m, "replicated").len() == 6,
        )
        .await;
        layouts.push(layout(&metadata, "replicated"));
    }
    assert!(layouts.iter().all(|l| *l == layouts[0]), "{layouts:?}");
    let leaders: BTreeSet<i32> = layouts[0].values().map(|(leader, _, _)| *leader).collect();
    assert_eq!(leaders, BTreeSet::from([1, 2, 3]));
    for (leader, replicas, isr) in layouts[0].values() {
        assert_eq!(replicas.iter().collect::<BTreeSet<_>>().len(), 3);
        assert_eq!(replicas[0], *leader, "the preferred replica leads");
        assert_eq!(isr.len(), 3);
    }

    // Producer ids come from the controller in blocks: no two brokers hand out the same one.
    let mut producer_ids = BTreeSet::new();
    for node_id in 1..=3 {
        let address = cluster.bootstrap(node_id);
        let mut client = weir_wire::ProtocolClient::connect(&address).await.unwrap();
        for _ in 0..3 {
            let request = kafka_protocol::messages::InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(kafka_protocol::messages::ProducerId(-1))
                .with_producer_epoch(-1);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            let id = loop {
                let response = client.call(4, &request).await.unwrap();
                if response.error_code == 0 {
                    break response.producer_id.0;
                }
                // COORDINATOR_LOAD_IN_PROGRESS until the first block arrived.
                assert_eq!(response.error_code, 14, "broker {node_id}: {response:?}");
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "no producer id from {node_id}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            assert!(producer_ids.insert(id), "producer id {id} handed out twice");
        }
    }

    // Clients find each partition's leader, whichever broker they start from.
    let producer = producer(&cluster.bootstrap(1), &[("acks", "all")]);
    for partition in 0..6 {
        let values: Vec<String> = (0..50).map(|i| format!("p{partition}-{i}")).collect();
        let offsets = produce_values(&producer, "replicated", partition, &values).await;
        assert_eq!(offsets, (0..50).collect::<Vec<i64>>());
        // acks=all answered: every in-sync replica holds the records already.
        for (node_id, broker) in &cluster.brokers {
            let copy = broker.context().topics.partition("replicated", partition);
            let offsets = copy.expect("replica here").offsets();
            assert!(
                offsets.log_end_offset >= 50,
                "broker {node_id} holds {offsets:?} of partition {partition}"
            );
        }
        let read = consume(
            &cluster.bootstrap(3),
            "replicated",
            partition,
            Offset::Beginning,
            50,
        )
        .await;
        assert_eq!(payloads(&read), values);
    }

    // A broker dies: once its session expires its leaderships move to live replicas, with a
    // new leader epoch, and it leaves the ISRs; the two others still form a quorum.
    let dead = layouts[0][&0].0;
    let survivor = (1..=3).find(|id| *id != dead).unwrap();
    cluster.brokers.remove(&dead).unwrap().abort().await;
    let after = wait_for_metadata(
        &cluster.bootstrap(survivor),
        Some("replicated"),
        "leaders moved off the dead broker",
        |m| {
            m.brokers().len() == 2
                && layout(m, "replicated")
                    .values()
                    .all(|(leader, _, isr)| *leader != dead && !isr.contains(&dead))
        },
    )
    .await;
    // Each survivor's /metrics: one active controller between them, one fenced broker, and
    // all six partitions under-replicated at their (live) leaders.
    let mut active_controllers = 0;
    let mut under_replicated = 0;
    for broker in cluster.brokers.values() {
        let context = broker.context();
        let text =
            context
                .metrics
                .render(&context.topics, &context.groups, context.cluster.as_deref());
        assert!(
            text.contains("weir_cluster_brokers{state=\"live\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("weir_cluster_brokers{state=\"fenced\"} 1"),
            "{text}"
        );
        active_controllers += gauge(&text, "weir_cluster_active_controller");
        under_replicated += gauge(&text, "weir_cluster_under_replicated_partitions");
        let moved = layouts[0]
            .values()
            .filter(|(leader, _, _)| *leader == dead)
            .count();
        assert!(
            gauge(&text, "weir_cluster_leader_elections") >= moved as i64,
            "{text}"
        );
    }
    assert_eq!(active_controllers, 1);
    // Every partition has a replica on each broker: all are under-replicated now, the six of
    // "replicated" and those of __consumer_offsets (created by the consumers' group lookups).
    let everything = metadata(&cluster.bootstrap(survivor), None);
    let partitions: usize = everything
        .topics()
        .iter()
        .map(|t| t.partitions().len())
        .sum();
    assert!(partitions >= 6);
    assert_eq!(under_replicated, partitions as i64);
    // Every acknowledged record is on the new leaders, and they take acks=all writes with
    // the ISR of two.
    for partition in 0..6 {
        let more: Vec<String> = (50..60).map(|i| format!("p{partition}-{i}")).collect();
        let offsets = produce_values(&producer, "replicated", partition, &more).await;
        assert_eq!(offsets, (50..60).collect::<Vec<i64>>());
        let read = consume(
            &cluster.bootstrap(survivor),
            "replicated",
            partition,
            Offset::Beginning,
            60,
        )
        .await;
        let expected: Vec<String> = (0..60).map(|i| format!("p{partition}-{i}")).collect();
        assert_eq!(payloads(&read), expected, "partition {partition}");
    }
    for (partition, (leader, replicas, isr)) in layout(&after, "replicated") {
        let (old_leader, old_replicas, _) = &layouts[0][&partition];
        assert_eq!(&replicas, old_replicas, "replicas stay assigned");
        assert!(isr.contains(&leader));
        assert_eq!(isr.len(), 2);
        if *old_leader == dead {
            assert_ne!(leader, dead);
        } else {
            assert_eq!(
                leader, *old_leader,
                "partition {partition} moved needlessly"
            );
        }
    }
}

/// The coordinator of `group` as broker `node_id` answers FindCoordinator (-1 while none).
async fn coordinator_of(cluster: &TestCluster, node_id: i32, group: &str) -> i32 {
    find_coordinator(cluster, node_id, 0, group).await
}

/// The coordinator of `key` (`key_type` 0: a group, 1: a transactional id) as broker
/// `node_id` answers FindCoordinator (-1 while none).
pub(crate) async fn find_coordinator(
    cluster: &TestCluster,
    node_id: i32,
    key_type: i8,
    key: &str,
) -> i32 {
    let address = cluster.bootstrap(node_id);
    let Ok(mut client) = weir_wire::ProtocolClient::connect(&address).await else {
        return -1;
    };
    let request = kafka_protocol::messages::FindCoordinatorRequest::default()
        .with_key(kafka_protocol::protocol::StrBytes::from_string(key.into()))
        .with_key_type(key_type);
    match client.call(3, &request).await {
        Ok(response) if response.error_code == 0 => response.node_id.0,
        _ => -1,
    }
}

fn group_consumer(bootstrap: &str, group: &str) -> rdkafka::consumer::StreamConsumer {
    let consumer: rdkafka::consumer::StreamConsumer = client_config(bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .create()
        .expect("group consumer");
    consumer.subscribe(&["grouped"]).expect("subscribe");
    consumer
}

/// Reads `count` records through a group consumer and commits what it read.
async fn consume_and_commit(
    consumer: &rdkafka::consumer::StreamConsumer,
    count: usize,
) -> Vec<String> {
    use rdkafka::consumer::CommitMode;
    use rdkafka::Message;
    let mut values = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while values.len() < count {
        let message = tokio::time::timeout_at(deadline, consumer.recv())
            .await
            .unwrap_or_else(|_| panic!("only {} of {count} records", values.len()))
            .expect("consume");
        values.push(String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned());
    }
    tokio::task::block_in_place(|| consumer.commit_consumer_state(CommitMode::Sync))
        .expect("commit");
    values
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_keeps_its_committed_offsets_when_its_coordinator_dies() {
    let mut cluster = TestCluster::start_all_registered(3).await;
    let admin = admin(&cluster.bootstrap(1));
    let topic = NewTopic::new("grouped", 3, TopicReplication::Fixed(3));
    admin
        .create_topics([&topic], &admin_options())
        .await
        .unwrap()[0]
        .as_ref()
        .expect("topic created");
    let producer = producer(&cluster.bootstrap(1), &[("acks", "all")]);
    let first: Vec<String> = (0..10).map(|i| format!("first-{i}")).collect();
    for partition in 0..3 {
        produce_values(&producer, "grouped", partition, &first).await;
    }
    let all = [1, 2, 3].map(|id| cluster.bootstrap(id)).join(",");
    let consumer = group_consumer(&all, "survivors");
    let mut read = consume_and_commit(&consumer, 30).await;
    eprintln!("phase: first 30 read and committed");
    read.sort();
    assert_eq!(read.len(), 30);
    drop(consumer);

    // Every broker names the same coordinator: the leader of the group's offsets partition.
    let coordinator = coordinator_of(&cluster, 1, "survivors").await;
    assert!(coordinator > 0);
    for node_id in 2..=3 {
        assert_eq!(
            coordinator_of(&cluster, node_id, "survivors").await,
            coordinator
        );
    }
    eprintln!("phase: coordinator {coordinator} dies");
    cluster.brokers.remove(&coordinator).unwrap().abort().await;
    let survivor = (1..=3).find(|id| *id != coordinator).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = coordinator_of(&cluster, survivor, "survivors").await;
        if now > 0 && now != coordinator {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no new coordinator");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    eprintln!("phase: new coordinator");
    // The new coordinator loaded the commits: the group goes on from them, nothing re-read.
    let second: Vec<String> = (0..10).map(|i| format!("second-{i}")).collect();
    for partition in 0..3 {
        produce_values(&producer, "grouped", partition, &second).await;
    }
    let live = (1..=3)
        .filter(|id| *id != coordinator)
        .map(|id| cluster.bootstrap(id))
        .collect::<Vec<_>>()
        .join(",");
    let consumer = group_consumer(&live, "survivors");
    let read = consume_and_commit(&consumer, 30).await;
    assert!(
        read.iter().all(|value| value.starts_with("second-")),
        "re-read committed records: {read:?}"
    );
}

/// The value of an unlabelled gauge in Prometheus text.
fn gauge(text: &str, name: &str) -> i64 {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} not in:\n{text}"))
}
