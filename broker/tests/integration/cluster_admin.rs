//! Topic administration in a three-broker cluster through the controller, with rdkafka's admin
//! client asking any broker: configs changed on one broker apply on every broker holding a
//! replica (and read the same from a broker holding none), partitions added are placed and
//! served, and a deleted topic disappears from every broker's metadata and disk.

use std::time::Duration;

use rdkafka::admin::{AlterConfig, NewPartitions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::producer::FutureProducer;

use crate::cluster::{wait_for_metadata, TestCluster};
use crate::common::*;

const TOPIC: &str = "administered";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_partitions_and_deletion_go_through_the_controller() {
    let cluster = TestCluster::start_all_registered(3).await;
    let admin = admin(&cluster.bootstrap(1));
    // Two replicas of each partition on three brokers: some broker holds none of a partition.
    let topic = NewTopic::new(TOPIC, 2, TopicReplication::Fixed(2));
    admin
        .create_topics([&topic], &admin_options())
        .await
        .unwrap()[0]
        .as_ref()
        .expect("created");

    // A config altered through broker 1 reaches every replica.
    let change = AlterConfig::new(ResourceSpecifier::Topic(TOPIC)).set("retention.ms", "123456");
    admin
        .alter_configs([&change], &admin_options())
        .await
        .unwrap()[0]
        .as_ref()
        .expect("altered");
    for node_id in 1..=3 {
        let seen = self::admin(&cluster.bootstrap(node_id))
            .describe_configs([&ResourceSpecifier::Topic(TOPIC)], &admin_options())
            .await
            .unwrap()
            .remove(0)
            .expect("described");
        let retention = seen.get("retention.ms").and_then(|e| e.value.clone());
        assert_eq!(retention.as_deref(), Some("123456"), "broker {node_id}");
        let local = cluster.brokers[&node_id].context().topics.get(TOPIC);
        if let Some(local) = local {
            for partition in local.hosted() {
                assert_eq!(
                    partition.log().config().retention_ms,
                    123_456,
                    "broker {node_id} applies it to its replica {}",
                    partition.index
                );
            }
        }
    }

    // Partitions added through broker 2 are placed with two replicas and serve clients.
    let grow = NewPartitions::new(TOPIC, 4);
    self::admin(&cluster.bootstrap(2))
        .create_partitions([&grow], &admin_options())
        .await
        .unwrap()[0]
        .as_ref()
        .expect("grown");
    for node_id in 1..=3 {
        let metadata = wait_for_metadata(
            &cluster.bootstrap(node_id),
            Some(TOPIC),
            "four partitions",
            |m| {
                m.topics()[0].partitions().len() == 4
                    && m.topics()[0].partitions().iter().all(|p| p.leader() > 0)
            },
        )
        .await;
        for partition in metadata.topics()[0].partitions() {
            assert_eq!(partition.replicas().len(), 2, "{partition:?}");
        }
    }
    let all = (1..=3)
        .map(|id| cluster.bootstrap(id))
        .collect::<Vec<_>>()
        .join(",");
    let producer: FutureProducer = producer(&all, &[("acks", "all")]);
    let values: Vec<String> = (0..5).map(|i| format!("new-{i}")).collect();
    produce_values(&producer, TOPIC, 3, &values).await;
    let read = consume(&all, TOPIC, 3, rdkafka::Offset::Beginning, 5).await;
    assert_eq!(payloads(&read), values);

    // Deleted through broker 3: gone from every broker's metadata and disk.
    admin
        .delete_topics(&[TOPIC], &admin_options())
        .await
        .unwrap()[0]
        .as_ref()
        .expect("deleted");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    for node_id in 1..=3 {
        let context = cluster.brokers[&node_id].context();
        let leftovers = || -> Vec<String> {
            std::fs::read_dir(&context.config().data_dir)
                .unwrap()
                .filter_map(|entry| entry.ok())
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with(TOPIC))
                .collect()
        };
        while context.topics.get(TOPIC).is_some() || !leftovers().is_empty() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "broker {node_id} still holds {TOPIC}: {:?}",
                leftovers()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let metadata = wait_for_metadata(&cluster.bootstrap(1), None, "topic gone", |m| {
        m.topics().iter().all(|t| t.name() != TOPIC)
    })
    .await;
    assert!(metadata.topics().iter().all(|t| t.name() != TOPIC));
}

/// AlterPartitionReassignments through a broker's Kafka API, as `weir topic reassign` sends it.
pub(crate) async fn reassign(
    cluster: &TestCluster,
    topic: &str,
    partition: i32,
    replicas: &[i32],
) -> i16 {
    use kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    use kafka_protocol::messages::{AlterPartitionReassignmentsRequest, BrokerId, TopicName};
    use kafka_protocol::protocol::StrBytes;
    let mut client = weir_wire::ProtocolClient::connect(&cluster.bootstrap(1))
        .await
        .unwrap();
    let request = AlterPartitionReassignmentsRequest::default().with_topics(vec![
        ReassignableTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.into())))
            .with_partitions(vec![ReassignablePartition::default()
                .with_partition_index(partition)
                .with_replicas(Some(replicas.iter().map(|id| BrokerId(*id)).collect()))]),
    ]);
    let response = client.call(0, &request).await.unwrap();
    response.responses[0].partitions[0].error_code
}

/// How many partitions are being moved, as ListPartitionReassignments answers.
pub(crate) async fn moves_in_progress(cluster: &TestCluster) -> usize {
    use kafka_protocol::messages::ListPartitionReassignmentsRequest;
    let mut client = weir_wire::ProtocolClient::connect(&cluster.bootstrap(2))
        .await
        .unwrap();
    let request = ListPartitionReassignmentsRequest::default().with_topics(None);
    let response = client.call(0, &request).await.unwrap();
    response.topics.iter().map(|t| t.partitions.len()).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reassignment_moves_a_replica_with_its_data_to_another_broker() {
    let cluster = TestCluster::start_all_registered(3).await;
    let topic = NewTopic::new("moving", 1, TopicReplication::Variable(&[&[1, 2]]));
    admin(&cluster.bootstrap(1))
        .create_topics([&topic], &admin_options())
        .await
        .unwrap()[0]
        .as_ref()
        .expect("created");
    let all = (1..=3)
        .map(|id| cluster.bootstrap(id))
        .collect::<Vec<_>>()
        .join(",");
    for node_id in 1..=3 {
        wait_for_metadata(
            &cluster.bootstrap(node_id),
            Some("moving"),
            "a leader",
            |m| {
                m.topics()[0]
                    .partitions()
                    .first()
                    .is_some_and(|p| p.leader() == 1)
            },
        )
        .await;
    }
    let producer: FutureProducer = producer(&all, &[("acks", "all")]);
    let before: Vec<String> = (0..200).map(|i| format!("before-{i}")).collect();
    produce_values(&producer, "moving", 0, &before).await;

    // From brokers 1 and 2 to 2 and 3: broker 3 copies everything, broker 1 lets go.
    assert_eq!(reassign(&cluster, "moving", 0, &[2, 3]).await, 0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while moves_in_progress(&cluster).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the move never completed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let metadata = wait_for_metadata(&cluster.bootstrap(1), Some("moving"), "new replicas", |m| {
        let partition = &m.topics()[0].partitions()[0];
        partition.replicas() == [2, 3] && partition.leader() > 0
    })
    .await;
    let partition = &metadata.topics()[0].partitions()[0];
    assert_eq!(
        partition.leader(),
        2,
        "the first in-sync target replica leads"
    );
    let moved = cluster.brokers[&3].context().topics.partition("moving", 0);
    let moved = moved.expect("broker 3 holds a replica");
    assert!(
        moved.offsets().log_end_offset >= 200,
        "the new replica copied the data"
    );
    let dropped_deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while cluster.brokers[&1]
        .context()
        .topics
        .get("moving")
        .is_some_and(|t| t.partition(0).is_some())
    {
        assert!(
            tokio::time::Instant::now() < dropped_deadline,
            "broker 1 keeps its old replica"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let after: Vec<String> = (0..50).map(|i| format!("after-{i}")).collect();
    produce_values(&producer, "moving", 0, &after).await;
    let read = consume(&all, "moving", 0, rdkafka::Offset::Beginning, 250).await;
    let expected: Vec<String> = before.into_iter().chain(after).collect();
    assert_eq!(payloads(&read), expected);
    assert_ne!(
        reassign(&cluster, "moving", 0, &[2, 7]).await,
        0,
        "an unknown broker is refused"
    );
}
