//! A broker added to a running cluster as a broker-only node (`process.roles=broker`): the
//! active controller makes it an observer of the metadata log (a Raft learner), so it learns
//! the whole cluster, registers, takes replicas moved to it, keeps following the log after the
//! active controller dies, and rejoins under a new controller address after a restart.

use std::time::Duration;

use kafka_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use kafka_protocol::messages::describe_quorum_response;
use kafka_protocol::messages::{DescribeQuorumRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::producer::FutureProducer;

use crate::cluster::{wait_for_metadata, TestCluster};
use crate::cluster_admin::{moves_in_progress, reassign};
use crate::common::*;

/// DescribeQuorum at broker `node_id`, as `kafka-metadata-quorum` sends it.
async fn describe_quorum(
    cluster: &TestCluster,
    node_id: i32,
) -> describe_quorum_response::PartitionData {
    let mut client = weir_wire::ProtocolClient::connect(&cluster.bootstrap(node_id))
        .await
        .unwrap();
    let request = DescribeQuorumRequest::default().with_topics(vec![TopicData::default()
        .with_topic_name(TopicName(StrBytes::from_static_str("__cluster_metadata")))
        .with_partitions(vec![PartitionData::default().with_partition_index(0)])]);
    let response = client.call(2, &request).await.unwrap();
    response.topics[0].partitions[0].clone()
}

fn ids(replicas: &[describe_quorum_response::ReplicaState]) -> Vec<i32> {
    let mut ids: Vec<i32> = replicas.iter().map(|r| r.replica_id.0).collect();
    ids.sort_unstable();
    ids
}

/// Waits until observer `node_id` is reported caught up to the quorum's high watermark.
async fn wait_observer_caught_up(cluster: &TestCluster, asked: i32, node_id: i32) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let quorum = describe_quorum(cluster, asked).await;
        let observer = quorum.observers.iter().find(|o| o.replica_id.0 == node_id);
        if quorum.error_code == 0
            && observer.is_some_and(|o| o.log_end_offset >= quorum.high_watermark)
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "observer {node_id} never caught up: {quorum:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_only_node_observes_the_quorum_and_takes_replicas() {
    let mut cluster = TestCluster::start_all_registered(3).await;
    let topic = NewTopic::new("growing", 1, TopicReplication::Variable(&[&[1, 2]]));
    admin(&cluster.bootstrap(1))
        .create_topics([&topic], &admin_options())
        .await
        .unwrap()[0]
        .as_ref()
        .expect("created");

    cluster.add_broker_only(4).await;
    for node_id in 1..=4 {
        wait_for_metadata(&cluster.bootstrap(node_id), None, "four brokers", |m| {
            m.brokers().len() == 4 && m.topics().iter().any(|t| t.name() == "growing")
        })
        .await;
    }
    wait_observer_caught_up(&cluster, 4, 4).await;
    let quorum = describe_quorum(&cluster, 4).await;
    assert_eq!(ids(&quorum.current_voters), [1, 2, 3], "{quorum:?}");
    assert_eq!(ids(&quorum.observers), [4], "{quorum:?}");
    assert!((1..=3).contains(&quorum.leader_id.0));

    // The new broker takes a replica, with the data written before it came.
    let all = (1..=4)
        .map(|id| cluster.bootstrap(id))
        .collect::<Vec<_>>()
        .join(",");
    let writer: FutureProducer = producer(&all, &[("acks", "all")]);
    let before: Vec<String> = (0..200).map(|i| format!("before-{i}")).collect();
    produce_values(&writer, "growing", 0, &before).await;
    assert_eq!(reassign(&cluster, "growing", 0, &[4, 2]).await, 0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while moves_in_progress(&cluster).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the move never completed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_for_metadata(
        &cluster.bootstrap(4),
        Some("growing"),
        "broker 4 leads",
        |m| {
            let partition = &m.topics()[0].partitions()[0];
            partition.replicas() == [4, 2] && partition.leader() == 4
        },
    )
    .await;
    let moved = cluster.brokers[&4].context().topics.partition("growing", 0);
    assert!(
        moved
            .expect("a replica on broker 4")
            .offsets()
            .log_end_offset
            >= 200
    );

    // The active controller dies: the next one keeps replicating the metadata log to broker 4.
    let controller = quorum.leader_id.0;
    cluster.brokers.remove(&controller).unwrap().abort().await;
    let survivor = (1..=3).find(|id| *id != controller).unwrap();
    let later = NewTopic::new("later", 1, TopicReplication::Variable(&[&[4]]));
    let created = loop {
        let result = admin(&cluster.bootstrap(survivor))
            .create_topics([&later], &admin_options())
            .await;
        match result.as_ref().map(|r| r[0].as_ref()) {
            Ok(Ok(_)) => break true,
            Ok(Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists))) => break true,
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    assert!(created);
    wait_for_metadata(&cluster.bootstrap(4), Some("later"), "the new topic", |m| {
        m.topics()[0]
            .partitions()
            .first()
            .is_some_and(|p| p.leader() == 4)
    })
    .await;
    wait_observer_caught_up(&cluster, 4, 4).await;
    let after_failover = describe_quorum(&cluster, 4).await;
    assert_ne!(after_failover.leader_id.0, controller);
    assert!(after_failover.leader_epoch > quorum.leader_epoch);

    // Broker 4 restarts with another controller port: it rejoins there and keeps its data.
    cluster
        .brokers
        .remove(&4)
        .unwrap()
        .shutdown()
        .await
        .unwrap();
    cluster.add_broker_only(4).await;
    wait_observer_caught_up(&cluster, survivor, 4).await;
    let after: Vec<String> = (0..50).map(|i| format!("after-{i}")).collect();
    let alive = [survivor, 4]
        .iter()
        .map(|id| cluster.bootstrap(*id))
        .collect::<Vec<_>>()
        .join(",");
    wait_for_metadata(
        &cluster.bootstrap(4),
        Some("growing"),
        "broker 4 leads again",
        |m| m.topics()[0].partitions()[0].leader() > 0,
    )
    .await;
    let survivors: FutureProducer = producer(&alive, &[("acks", "all")]);
    produce_values(&survivors, "growing", 0, &after).await;
    let read = consume(&alive, "growing", 0, rdkafka::Offset::Beginning, 250).await;
    let expected: Vec<String> = before.into_iter().chain(after).collect();
    assert_eq!(payloads(&read), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voter_cannot_start_as_a_broker_only_node() {
    init_logging();
    let dir = tempfile::tempdir().unwrap();
    let mut broker_config = config(
        dir.path(),
        &[
            ("node.id", "1"),
            ("controller.quorum.voters", "1@127.0.0.1:1"),
            ("process.roles", "broker"),
        ],
    );
    broker_config.controller_listen = Some("127.0.0.1:0".parse().unwrap());
    let error = weir_broker::Broker::start(broker_config)
        .await
        .err()
        .expect("refused");
    assert!(
        error.to_string().contains("controller"),
        "the error explains the roles: {error}"
    );
}
