//! Kafka's bound on one admin request's metadata (#52): a CreateTopics or CreatePartitions that
//! would write more than 10,000 metadata records (a topic is one, each partition and config one
//! more) is refused with POLICY_VIOLATION before any placement is computed — alone and in a
//! cluster, where the active controller checks it again. A request for 2^31 − 1 partitions once
//! held a one-node cluster's controller at 14 GB and climbing.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::cluster::TestCluster;
use crate::common;
use crate::raw::RawClient;

const POLICY_VIOLATION: i16 = 44;

fn topic(name: &str, partitions: i32, configs: usize) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(TopicName(StrBytes::from_string(name.to_string())))
        .with_num_partitions(partitions)
        .with_replication_factor(-1)
        .with_configs(
            (0..configs)
                .map(|_| {
                    CreatableTopicConfig::default()
                        .with_name(StrBytes::from_static_str("retention.ms"))
                        .with_value(Some(StrBytes::from_static_str("60000")))
                })
                .collect(),
        )
}

async fn create_topics(
    addr: SocketAddr,
    topics: Vec<CreatableTopic>,
    validate_only: bool,
) -> CreateTopicsResponse {
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_validate_only(validate_only)
        .with_topics(topics);
    RawClient::connect(addr).await.call(7, &request).await
}

async fn create_partitions(addr: SocketAddr, name: &str, count: i32) -> CreatePartitionsResponse {
    let request = CreatePartitionsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatePartitionsTopic::default()
            .with_name(TopicName(StrBytes::from_string(name.to_string())))
            .with_count(count)
            .with_assignments(None)]);
    RawClient::connect(addr).await.call(3, &request).await
}

/// Every topic of the answer with its error code, in request order.
fn codes(response: &CreateTopicsResponse) -> Vec<(String, i16)> {
    response
        .topics
        .iter()
        .map(|t| (t.name.to_string(), t.error_code))
        .collect()
}

/// What both a broker alone and a cluster refuse, and what they still accept.
async fn refuses_excessive_batches(addr: SocketAddr) {
    let started = Instant::now();
    let response = create_topics(addr, vec![topic("huge", i32::MAX, 0)], false).await;
    assert_eq!(codes(&response), [("huge".to_string(), POLICY_VIOLATION)]);
    let message = response.topics[0]
        .error_message
        .as_ref()
        .unwrap()
        .to_string();
    assert!(
        message.contains("excessively large batch operation"),
        "Kafka's words: {message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused before any placement: {:?}",
        started.elapsed()
    );

    // 9,999 partitions and the topic are 10,000 records: the most one request may write.
    let response = create_topics(addr, vec![topic("largest", 9_999, 0)], true).await;
    assert_eq!(codes(&response), [("largest".to_string(), 0)]);
    let response = create_topics(addr, vec![topic("largest", 9_998, 2)], true).await;
    assert_eq!(
        codes(&response),
        [("largest".to_string(), POLICY_VIOLATION)],
        "configs count"
    );
    // The bound is the request's: two topics of 5,000 partitions are 10,002 records.
    let response = create_topics(
        addr,
        vec![topic("half-a", 5_000, 0), topic("half-b", 5_000, 0)],
        false,
    )
    .await;
    assert_eq!(
        codes(&response),
        [
            ("half-a".to_string(), POLICY_VIOLATION),
            ("half-b".to_string(), POLICY_VIOLATION)
        ]
    );

    // Growing a topic by more than 10,000 partitions at once.
    let response = create_topics(addr, vec![topic("grows", 1, 0)], false).await;
    assert_eq!(codes(&response), [("grows".to_string(), 0)]);
    let response = create_partitions(addr, "grows", i32::MAX).await;
    assert_eq!(response.results[0].error_code, POLICY_VIOLATION);
    let response = create_partitions(addr, "grows", 3).await;
    assert_eq!(
        response.results[0].error_code, 0,
        "a normal growth still works"
    );
    assert_eq!(
        ResponseError::try_from_code(POLICY_VIOLATION),
        Some(ResponseError::PolicyViolation)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_alone_refuses_requests_over_ten_thousand_metadata_records() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    refuses_excessive_batches(broker.local_addr()).await;
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_refuses_requests_over_ten_thousand_metadata_records() {
    // One node: the topics' replication factor is 1.
    let cluster = TestCluster::start_configured(1, |_| {
        vec![("default.replication.factor".into(), "1".into())]
    })
    .await;
    refuses_excessive_batches(cluster.brokers[&1].local_addr()).await;
}
