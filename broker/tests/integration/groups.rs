//! Consumer groups with librdkafka: partitions shared between members, rebalancing when one
//! leaves, committed offsets that survive a broker restart.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Message, Offset, TopicPartitionList};

use crate::common::{self, TIMEOUT};

const GROUP_PROPERTIES: &[(&str, &str)] = &[("group.initial.rebalance.delay.ms", "0")];

type Member = Arc<BaseConsumer>;

fn group_consumer(bootstrap: &str, group: &str) -> Member {
    let mut config = common::client_config(bootstrap);
    config
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "500")
        .set("fetch.wait.max.ms", "100");
    Arc::new(config.create().expect("consumer"))
}

/// Polls (on a blocking thread: rdkafka's BaseConsumer blocks) until the members polling with
/// the same `total` have `count` records between them. Every member keeps polling meanwhile, as a
/// live consumer does, so rebalances can complete.
async fn poll_shared(
    consumer: &Member,
    total: &Arc<AtomicUsize>,
    count: usize,
) -> Vec<(i32, i64, String)> {
    let consumer = Arc::clone(consumer);
    let total = Arc::clone(total);
    tokio::task::spawn_blocking(move || {
        let mut out = Vec::new();
        let deadline = std::time::Instant::now() + TIMEOUT;
        while total.load(Ordering::SeqCst) < count && std::time::Instant::now() < deadline {
            match consumer.poll(Duration::from_millis(100)) {
                Some(Ok(message)) => {
                    total.fetch_add(1, Ordering::SeqCst);
                    out.push((
                        message.partition(),
                        message.offset(),
                        String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned(),
                    ));
                }
                Some(Err(error)) if is_transient(&error) => eprintln!("transient: {error}"),
                Some(Err(error)) => panic!("consume error: {error}"),
                None => {}
            }
        }
        out
    })
    .await
    .unwrap()
}

async fn poll_records(consumer: &Member, count: usize) -> Vec<(i32, i64, String)> {
    poll_shared(consumer, &Arc::new(AtomicUsize::new(0)), count).await
}

/// librdkafka's reports that it lost (and will re-establish) its connections: a live consumer
/// logs them and keeps polling. Seen once in CI on a loaded 2-core machine (AllBrokersDown
/// before any record was produced), with no broker log line saying it closed a connection.
fn is_transient(error: &KafkaError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(RDKafkaErrorCode::AllBrokersDown | RDKafkaErrorCode::BrokerTransportFailure)
    )
}

/// Polls both members until each has partitions assigned (the rebalance is done).
async fn wait_for_assignments(members: [&Member; 2]) {
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let assigned = members
            .iter()
            .all(|m| m.assignment().map(|a| a.count() > 0).unwrap_or(false));
        if assigned {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "rebalance did not complete"
        );
        let never = Arc::new(AtomicUsize::new(0));
        let _ = tokio::join!(
            poll_briefly(members[0], &never),
            poll_briefly(members[1], &never)
        );
    }
}

async fn poll_briefly(consumer: &Member, _total: &Arc<AtomicUsize>) {
    let consumer = Arc::clone(consumer);
    tokio::task::spawn_blocking(move || match consumer.poll(Duration::from_millis(50)) {
        None => {}
        Some(Err(error)) if is_transient(&error) => eprintln!("transient: {error}"),
        Some(Err(error)) => panic!("consume error: {error}"),
        Some(Ok(message)) => panic!("no records are produced yet, got {message:?}"),
    })
    .await
    .unwrap();
}

/// Leaves the group: unsubscribe (librdkafka sends LeaveGroup) and keep polling briefly.
/// The handle is then leaked on purpose: rust-rdkafka 0.39's drop of a group consumer polls
/// until "closed" and never returned in this test, while confluent-kafka's close() (the same
/// librdkafka) returns at once against Weir with two members — the binding, not the broker.
async fn close(consumer: Member) {
    let handle = Arc::clone(&consumer);
    tokio::task::spawn_blocking(move || {
        handle.unsubscribe();
        for _ in 0..10 {
            let _ = handle.poll(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
    std::mem::forget(consumer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_share_partitions_and_offsets_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), GROUP_PROPERTIES).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "grouped", 4, &[]).await;
    let first = group_consumer(&bootstrap, "workers");
    let second = group_consumer(&bootstrap, "workers");
    first.subscribe(&["grouped"]).unwrap();
    second.subscribe(&["grouped"]).unwrap();
    wait_for_assignments([&first, &second]).await;
    let producer = common::producer(&bootstrap, &[]);
    for partition in 0..4 {
        let values: Vec<String> = (0..50).map(|i| format!("p{partition}-{i}")).collect();
        common::produce_values(&producer, "grouped", partition, &values).await;
    }
    let total = Arc::new(AtomicUsize::new(0));
    let (a, b) = tokio::join!(
        poll_shared(&first, &total, 200),
        poll_shared(&second, &total, 200)
    );
    let mut partitions_of: HashMap<i32, HashSet<usize>> = HashMap::new();
    let mut seen = HashSet::new();
    for (who, records) in [(0usize, &a), (1, &b)] {
        for (partition, _, value) in records.iter() {
            partitions_of.entry(*partition).or_default().insert(who);
            seen.insert(value.clone());
        }
    }
    assert_eq!(seen.len(), 200, "every record consumed");
    assert!(
        partitions_of.values().all(|owners| owners.len() == 1),
        "each partition has one owner: {partitions_of:?}"
    );
    assert!(
        !a.is_empty() && !b.is_empty(),
        "both members got partitions ({} / {})",
        a.len(),
        b.len()
    );

    first.commit_consumer_state(CommitMode::Sync).unwrap();
    second.commit_consumer_state(CommitMode::Sync).unwrap();
    let committed = first.committed(TIMEOUT).unwrap();
    let positions: Vec<Offset> = committed.elements().iter().map(|e| e.offset()).collect();
    assert_eq!(positions.len(), first.assignment().unwrap().count());
    assert!(
        positions.iter().all(|o| *o == Offset::Offset(50)),
        "committed {positions:?}"
    );

    // One member leaves: the other takes over all four partitions.
    close(first).await;
    for partition in 0..4 {
        common::produce_values(
            &producer,
            "grouped",
            partition,
            &[format!("late-{partition}")],
        )
        .await;
    }
    let late = poll_records(&second, 4).await;
    let late_partitions: HashSet<i32> = late.iter().map(|(p, _, _)| *p).collect();
    assert_eq!(
        late_partitions.len(),
        4,
        "the remaining member owns every partition: {late:?}"
    );
    second.commit_consumer_state(CommitMode::Sync).unwrap();
    close(second).await;
    drop(producer);
    broker.shutdown().await.unwrap();

    // After a restart a new member resumes from the committed offsets: nothing is read twice.
    let broker = common::start(dir.path(), GROUP_PROPERTIES).await;
    let bootstrap = common::bootstrap(&broker);
    let producer = common::producer(&bootstrap, &[]);
    common::produce_values(&producer, "grouped", 2, &["after-restart".into()]).await;
    let third = group_consumer(&bootstrap, "workers");
    third.subscribe(&["grouped"]).unwrap();
    let resumed = poll_records(&third, 1).await;
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0], (2, 51, "after-restart".to_string()));
    let extra = poll_records(&third, 1).await;
    assert!(extra.is_empty(), "nothing else is delivered: {extra:?}");
    close(third).await;
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_commits_and_offset_fetch_without_membership() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), GROUP_PROPERTIES).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "assigned", 2, &[]).await;
    // An assigned (not subscribed) consumer commits with generation -1, as Kafka allows.
    let consumer = common::assigned_consumer(
        &bootstrap,
        "assigned",
        0,
        Offset::Beginning,
        &[("group.id", "manual")],
    );
    let mut offsets = TopicPartitionList::new();
    offsets
        .add_partition_offset("assigned", 0, Offset::Offset(7))
        .unwrap();
    offsets
        .add_partition_offset("assigned", 1, Offset::Offset(3))
        .unwrap();
    consumer.commit(&offsets, CommitMode::Sync).unwrap();
    let mut query = TopicPartitionList::new();
    query.add_partition("assigned", 0);
    query.add_partition("assigned", 1);
    let committed = consumer.committed_offsets(query, TIMEOUT).unwrap();
    assert_eq!(
        committed.find_partition("assigned", 0).unwrap().offset(),
        Offset::Offset(7)
    );
    assert_eq!(
        committed.find_partition("assigned", 1).unwrap().offset(),
        Offset::Offset(3)
    );
    let mut unknown = TopicPartitionList::new();
    unknown
        .add_partition_offset("no-such-topic", 0, Offset::Offset(1))
        .unwrap();
    assert!(
        consumer.commit(&unknown, CommitMode::Sync).is_err(),
        "unknown topic refused"
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_member_restarts_without_rebalance_and_fences_its_zombie() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), GROUP_PROPERTIES).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "static", 2, &[]).await;
    let static_member = |bootstrap: &str| -> Member {
        let mut config = common::client_config(bootstrap);
        config
            .set("group.id", "statics")
            .set("group.instance.id", "instance-1")
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("session.timeout.ms", "10000")
            .set("heartbeat.interval.ms", "300");
        Arc::new(config.create().expect("consumer"))
    };
    let old = static_member(&bootstrap);
    old.subscribe(&["static"]).unwrap();
    poll_until_assigned(&old).await;
    let before = broker.context().groups.describe("statics").unwrap();
    assert_eq!(before.members.len(), 1);

    // A restart: a new client with the same group.instance.id takes over at once.
    let new = static_member(&bootstrap);
    new.subscribe(&["static"]).unwrap();
    poll_until_assigned(&new).await;
    let after = broker.context().groups.describe("statics").unwrap();
    assert_eq!(
        after.generation_id, before.generation_id,
        "no rebalance for a static member's return"
    );
    assert_eq!(after.members.len(), 1);
    assert_ne!(
        after.members[0].member_id, before.members[0].member_id,
        "a new member id"
    );

    // The old incarnation is fenced on its next heartbeat.
    let zombie = Arc::clone(&old);
    let fenced = tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + TIMEOUT;
        while std::time::Instant::now() < deadline {
            if let Some(Err(error)) = zombie.poll(Duration::from_millis(100)) {
                return Some(error.to_string());
            }
        }
        None
    })
    .await
    .unwrap();
    let fenced = fenced.expect("the old member reports an error");
    assert!(fenced.to_lowercase().contains("fenced"), "{fenced}");
    std::mem::forget(old);
    close(new).await;
    broker.shutdown().await.unwrap();
}

async fn poll_until_assigned(consumer: &Member) {
    let consumer = Arc::clone(consumer);
    tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + TIMEOUT;
        while consumer
            .assignment()
            .map(|a| a.count() == 0)
            .unwrap_or(true)
        {
            assert!(std::time::Instant::now() < deadline, "no assignment");
            let _ = consumer.poll(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_member_is_removed_after_its_session_timeout() {
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::{GroupId, JoinGroupRequest};
    use kafka_protocol::protocol::StrBytes;

    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), GROUP_PROPERTIES).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "silent", 2, &[]).await;
    // A raw member joins with a 6 s session and then never heartbeats or syncs.
    let mut raw = crate::raw::RawClient::connect(broker.local_addr()).await;
    let subscription = bytes::Bytes::from_static(&[
        0, 0, 0, 0, 0, 1, 0, 6, b's', b'i', b'l', b'e', b'n', b't', 0, 0, 0, 0,
    ]);
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str("quiet")))
        .with_session_timeout_ms(6000)
        .with_rebalance_timeout_ms(6000)
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(vec![JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(subscription)]);
    let first = raw.call(5, &join).await;
    let joined = raw
        .call(5, &join.clone().with_member_id(first.member_id))
        .await;
    assert_eq!(joined.error_code, 0);
    let started = std::time::Instant::now();

    // An rdkafka member joins; once the silent one expires it gets both partitions.
    let member = group_consumer(&bootstrap, "quiet");
    member.subscribe(&["silent"]).unwrap();
    let deadline = std::time::Instant::now() + TIMEOUT;
    let polled = Arc::clone(&member);
    let partitions = tokio::task::spawn_blocking(move || {
        while std::time::Instant::now() < deadline {
            let _ = polled.poll(Duration::from_millis(100));
            let count = polled.assignment().map(|a| a.count()).unwrap_or(0);
            if count == 2 {
                return count;
            }
        }
        0
    })
    .await
    .unwrap();
    assert_eq!(partitions, 2, "the live member owns every partition");
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "not before the session timeout: {:?}",
        started.elapsed()
    );
    let summary = broker.context().groups.describe("quiet").unwrap();
    assert_eq!(summary.members.len(), 1);
    close(member).await;
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_offsets_survive_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), GROUP_PROPERTIES).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "crashy", 1, &[]).await;
    let consumer = common::assigned_consumer(
        &bootstrap,
        "crashy",
        0,
        Offset::Beginning,
        &[("group.id", "survivor")],
    );
    let mut offsets = TopicPartitionList::new();
    offsets
        .add_partition_offset("crashy", 0, Offset::Offset(42))
        .unwrap();
    consumer.commit(&offsets, CommitMode::Sync).unwrap();
    drop(consumer);
    broker.abort().await; // no flush, no clean-shutdown marker

    let broker = common::start(dir.path(), GROUP_PROPERTIES).await;
    let consumer = common::assigned_consumer(
        &common::bootstrap(&broker),
        "crashy",
        0,
        Offset::Beginning,
        &[("group.id", "survivor")],
    );
    let mut query = TopicPartitionList::new();
    query.add_partition("crashy", 0);
    let committed = consumer.committed_offsets(query, TIMEOUT).unwrap();
    assert_eq!(
        committed.find_partition("crashy", 0).unwrap().offset(),
        Offset::Offset(42)
    );
    broker.shutdown().await.unwrap();
}

type CountedMember = Arc<BaseConsumer<RebalanceCounter>>;

/// Polls every member until their assignment sizes are `expected`.
async fn settle(members: &[CountedMember], expected: &[usize]) {
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let counts: Vec<usize> = members
            .iter()
            .map(|m| m.assignment().map(|a| a.count()).unwrap_or(0))
            .collect();
        if counts == expected {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "assignments did not settle: {counts:?}, expected {expected:?}"
        );
        let polls: Vec<_> = members
            .iter()
            .map(|m| {
                let m = Arc::clone(m);
                tokio::task::spawn_blocking(move || {
                    let _ = m.poll(Duration::from_millis(100));
                })
            })
            .collect();
        for poll in polls {
            poll.await.unwrap();
        }
    }
}

/// Members join one by one; with cooperative-sticky each rebalance takes from the others only
/// the partitions that move (eager protocols revoke everything every time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooperative_sticky_members_share_six_partitions_revoking_only_what_moves() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), GROUP_PROPERTIES).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "six", 6, &[]).await;
    let cooperative = |bootstrap: &str| -> CountedMember {
        let mut config = common::client_config(bootstrap);
        config
            .set("group.id", "trio")
            .set("partition.assignment.strategy", "cooperative-sticky")
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "300");
        Arc::new(
            config
                .create_with_context(RebalanceCounter::default())
                .expect("consumer"),
        )
    };
    let mut members: Vec<CountedMember> = Vec::new();
    for expected in [vec![6], vec![3, 3], vec![2, 2, 2]] {
        let member = cooperative(&bootstrap);
        member.subscribe(&["six"]).unwrap();
        members.push(member);
        settle(&members, &expected).await;
    }
    let mut owners: HashMap<i32, usize> = HashMap::new();
    for (index, member) in members.iter().enumerate() {
        for element in member.assignment().unwrap().elements() {
            assert!(
                owners.insert(element.partition(), index).is_none(),
                "partition {} owned twice",
                element.partition()
            );
        }
    }
    assert_eq!(owners.len(), 6);
    // Member 0 gave up 3 then 1 partitions, member 1 gave up 1: five moves, five revocations.
    let revoked: Vec<usize> = members
        .iter()
        .map(|m| m.context().revoked.load(Ordering::SeqCst))
        .collect();
    let assigned: Vec<usize> = members
        .iter()
        .map(|m| m.context().assigned.load(Ordering::SeqCst))
        .collect();
    assert_eq!(revoked, vec![4, 1, 0], "only moved partitions are revoked");
    assert_eq!(
        assigned,
        vec![6, 3, 2],
        "kept partitions are not assigned again"
    );
    let summary = broker.context().groups.describe("trio").unwrap();
    assert_eq!(summary.protocol_name, "cooperative-sticky");
    assert_eq!(summary.members.len(), 3);
    for member in members {
        member.unsubscribe();
        std::mem::forget(member);
    }
    broker.shutdown().await.unwrap();
}

/// Counts the partitions handed to and taken from a member by rebalances.
#[derive(Default)]
struct RebalanceCounter {
    assigned: AtomicUsize,
    revoked: AtomicUsize,
}

impl rdkafka::ClientContext for RebalanceCounter {}

impl rdkafka::consumer::ConsumerContext for RebalanceCounter {
    fn pre_rebalance(
        &self,
        _consumer: &BaseConsumer<Self>,
        rebalance: &rdkafka::consumer::Rebalance<'_>,
    ) {
        if let rdkafka::consumer::Rebalance::Revoke(list) = rebalance {
            self.revoked.fetch_add(list.count(), Ordering::SeqCst);
        }
    }

    fn post_rebalance(
        &self,
        _consumer: &BaseConsumer<Self>,
        rebalance: &rdkafka::consumer::Rebalance<'_>,
    ) {
        if let rdkafka::consumer::Rebalance::Assign(list) = rebalance {
            self.assigned.fetch_add(list.count(), Ordering::SeqCst);
        }
    }
}

/// Kafka keeps a settled group's metadata in `__consumer_offsets`: a member that keeps
/// heartbeating through a broker restart keeps its assignment, with no rebalance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stable_group_carries_on_through_a_broker_restart_without_a_rebalance() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let start = |dir: std::path::PathBuf| async move {
        let mut config = common::config(&dir, GROUP_PROPERTIES);
        config.listen = port;
        weir_broker::Broker::start(config)
            .await
            .expect("broker starts")
    };
    let broker = start(dir.path().to_path_buf()).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "steady", 2, &[]).await;
    let mut config = common::client_config(&bootstrap);
    config
        .set("group.id", "steady-group")
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "300")
        .set("fetch.wait.max.ms", "100");
    let consumer: Arc<BaseConsumer<RebalanceCounter>> = Arc::new(
        config
            .create_with_context(RebalanceCounter::default())
            .expect("consumer"),
    );
    consumer.subscribe(&["steady"]).unwrap();
    let producer = common::producer(&bootstrap, &[]);
    common::produce_values(&producer, "steady", 0, &["before".into()]).await;
    let poll_for = |consumer: &Arc<BaseConsumer<RebalanceCounter>>, duration: Duration| {
        let consumer = Arc::clone(consumer);
        tokio::task::spawn_blocking(move || {
            let mut values = Vec::new();
            let deadline = std::time::Instant::now() + duration;
            while std::time::Instant::now() < deadline {
                if let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) {
                    values.push(String::from_utf8_lossy(message.payload().unwrap()).into_owned());
                }
            }
            values
        })
    };
    let before = poll_for(&consumer, Duration::from_secs(4)).await.unwrap();
    assert_eq!(before, vec!["before".to_string()]);
    assert_eq!(consumer.context().assigned.load(Ordering::SeqCst), 2);

    drop(producer);
    broker.shutdown().await.unwrap();
    let broker = start(dir.path().to_path_buf()).await;
    // Longer than the session timeout: the member's heartbeats reach the restarted broker.
    let polling = poll_for(&consumer, Duration::from_secs(8));
    tokio::time::sleep(Duration::from_secs(4)).await;
    let producer = common::producer(&bootstrap, &[]);
    common::produce_values(&producer, "steady", 1, &["after".into()]).await;
    let after = polling.await.unwrap();
    assert_eq!(after, vec!["after".to_string()]);
    let context = consumer.context();
    assert_eq!(context.revoked.load(Ordering::SeqCst), 0, "no rebalance");
    assert_eq!(context.assigned.load(Ordering::SeqCst), 2, "no rebalance");
    let summary = broker.context().groups.describe("steady-group").unwrap();
    assert_eq!((summary.state, summary.generation_id), ("Stable", 1));
    assert_eq!(
        summary.members[0].client_host, "/127.0.0.1",
        "client host as Kafka shows it"
    );
    consumer.unsubscribe();
    std::mem::forget(consumer);
    broker.shutdown().await.unwrap();
}

/// The committed offset of each of `partitions` of `topic` for `group`, read by a new client.
fn committed(bootstrap: &str, group: &str, topic: &str, partitions: &[i32]) -> Vec<Offset> {
    let consumer: BaseConsumer = common::client_config(bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut query = TopicPartitionList::new();
    for partition in partitions {
        query.add_partition(topic, *partition);
    }
    let committed = consumer.committed_offsets(query, TIMEOUT).unwrap();
    partitions
        .iter()
        .map(|p| committed.find_partition(topic, *p).unwrap().offset())
        .collect()
}

/// KIP-211 end to end, on the broker's own schedule: an empty group's offsets expire once
/// `offsets.retention.minutes` passed since its last commit (and stay expired after a restart);
/// a group that committed since keeps its offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_groups_offsets_expire_on_the_brokers_schedule() {
    use weir_broker::clock::{Clock, ManualClock, SystemClock};

    let dir = tempfile::tempdir().unwrap();
    common::init_logging();
    let properties = [
        ("group.initial.rebalance.delay.ms", "0"),
        ("offsets.retention.minutes", "60"),
        ("offsets.retention.check.interval.ms", "100"),
    ];
    let clock = Arc::new(ManualClock::new(SystemClock.now_ms()));
    let broker = weir_broker::Broker::start_with_clock(
        common::config(dir.path(), &properties),
        Arc::clone(&clock) as Arc<dyn Clock>,
    )
    .await
    .unwrap();
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "expiring", 2, &[]).await;
    let partitions = [0, 1];
    let (b, topic) = (bootstrap.clone(), "expiring");
    tokio::task::spawn_blocking(move || {
        common::commit(&b, "idle", topic, &[(0, 7), (1, 3)]);
        common::commit(&b, "busy", topic, &[(0, 5), (1, 5)]);
    })
    .await
    .unwrap();
    clock.advance_ms(30 * 60_000);
    let b = bootstrap.clone();
    tokio::task::spawn_blocking(move || common::commit(&b, "busy", topic, &[(0, 9), (1, 9)]))
        .await
        .unwrap();
    // 61 minutes after idle's commit, 31 after busy's last one.
    clock.advance_ms(31 * 60_000);
    let b = bootstrap.clone();
    let idle = tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + TIMEOUT;
        loop {
            let offsets = committed(&b, "idle", topic, &partitions);
            if offsets.iter().all(|o| *o == Offset::Invalid) || std::time::Instant::now() > deadline
            {
                return offsets;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await
    .unwrap();
    assert_eq!(
        idle,
        [Offset::Invalid, Offset::Invalid],
        "idle's offsets expired"
    );
    let b = bootstrap.clone();
    let busy = tokio::task::spawn_blocking(move || committed(&b, "busy", topic, &partitions))
        .await
        .unwrap();
    assert_eq!(
        busy,
        [Offset::Offset(9), Offset::Offset(9)],
        "busy's offsets kept"
    );
    broker.shutdown().await.unwrap();

    let broker = common::start(dir.path(), &properties).await;
    let b = common::bootstrap(&broker);
    let after = tokio::task::spawn_blocking(move || {
        (
            committed(&b, "idle", topic, &partitions),
            committed(&b, "busy", topic, &partitions),
        )
    })
    .await
    .unwrap();
    assert_eq!(
        after,
        (
            vec![Offset::Invalid, Offset::Invalid],
            vec![Offset::Offset(9), Offset::Offset(9)]
        ),
        "the expiry is durable"
    );
    broker.shutdown().await.unwrap();
}
