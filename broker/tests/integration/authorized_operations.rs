//! KIP-430 authorized operations without an authorizer: every operation a resource type
//! supports, as Kafka answers (librdkafka's DescribeTopics and DescribeCluster admin calls read
//! them), and the "not requested" value when the client did not ask.

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use crate::common::*;
use crate::raw::RawClient;

/// READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10,
/// ALTER_CONFIGS 11.
const TOPIC_OPERATIONS: i32 =
    (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);
/// CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
/// IDEMPOTENT_WRITE 12.
const CLUSTER_OPERATIONS: i32 =
    (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

#[tokio::test]
async fn every_supported_operation_is_authorized_without_an_authorizer() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path(), &[]).await;
    create_topic(&bootstrap(&broker), "ops", 1, &[]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;

    let topic = MetadataRequestTopic::default()
        .with_name(Some(TopicName(StrBytes::from_static_str("ops"))));
    let asked = MetadataRequest::default()
        .with_topics(Some(vec![topic.clone()]))
        .with_include_topic_authorized_operations(true);
    let response = client.call(12, &asked).await;
    assert_eq!(response.topics[0].error_code, 0);
    assert_eq!(
        response.topics[0].topic_authorized_operations,
        TOPIC_OPERATIONS
    );

    let not_asked = MetadataRequest::default().with_topics(Some(vec![topic]));
    let response = client.call(12, &not_asked).await;
    assert_eq!(response.topics[0].topic_authorized_operations, i32::MIN);

    let cluster = MetadataRequest::default()
        .with_topics(Some(Vec::new()))
        .with_include_cluster_authorized_operations(true);
    let response = client.call(10, &cluster).await;
    assert_eq!(response.cluster_authorized_operations, CLUSTER_OPERATIONS);

    let describe =
        DescribeClusterRequest::default().with_include_cluster_authorized_operations(true);
    let response = client.call(0, &describe).await;
    assert_eq!(response.error_code, 0);
    assert_eq!(response.cluster_authorized_operations, CLUSTER_OPERATIONS);
    let response = client.call(0, &DescribeClusterRequest::default()).await;
    assert_eq!(response.cluster_authorized_operations, i32::MIN);

    let group = DescribeGroupsRequest::default()
        .with_groups(vec![GroupId(StrBytes::from_static_str("g"))])
        .with_include_authorized_operations(true);
    let response = client.call(5, &group).await;
    let group_operations = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11);
    assert_eq!(response.groups[0].authorized_operations, group_operations);
    broker.shutdown().await.unwrap();
}
