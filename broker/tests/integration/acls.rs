//! ACLs enforced (StandardAuthorizer semantics): a broker with an admin PLAINTEXT listener
//! (`super.users=User:ANONYMOUS`, as a Kafka admin path) and a SASL PLAIN listener for users.
//! Real clients (librdkafka) and raw frames check each refusal's Kafka code, that a refused
//! produce appends nothing, that Metadata hides what a user may not describe, that deny wins
//! over allow, prefixed patterns, and that an ACL change takes effect on the next request.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use rdkafka::producer::FutureRecord;
use rdkafka::ClientConfig;

use crate::cluster::free_port;
use crate::common::*;
use crate::raw::RawClient;

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
     username=\"admin\" password=\"admin-secret\" user_alice=\"alice-secret\" \
     user_bob=\"bob-secret\";";

const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
const GROUP_AUTHORIZATION_FAILED: i16 = 30;
const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;

/// Kafka's codes: resource TOPIC 2, GROUP 3, TRANSACTIONAL_ID 5; pattern LITERAL 3,
/// PREFIXED 4; operation ALL 2, READ 3, WRITE 4, DESCRIBE 8; DENY 2, ALLOW 3.
fn acl(resource: (i8, &str, i8), principal: &str, operation: i8, permission: i8) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource.0)
        .with_resource_name(StrBytes::from_string(resource.1.to_string()))
        .with_resource_pattern_type(resource.2)
        .with_principal(StrBytes::from_string(principal.to_string()))
        .with_host(StrBytes::from_static_str("*"))
        .with_operation(operation)
        .with_permission_type(permission)
}

pub(crate) async fn secured_broker(data: &Path) -> (weir_broker::Broker, SocketAddr, SocketAddr) {
    let (plain, sasl) = (free_port(), free_port());
    let listeners = format!("PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}");
    let broker = start(
        data,
        &[
            ("listeners", listeners.as_str()),
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS),
            (
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            ),
            ("super.users", "User:ANONYMOUS"),
        ],
    )
    .await;
    let admin = broker.listener_addr("PLAINTEXT").unwrap();
    let users = broker.listener_addr("SASL_PLAINTEXT").unwrap();
    (broker, admin, users)
}

/// A raw connection logged in as `user` with SASL PLAIN.
pub(crate) async fn logged_in(addr: SocketAddr, user: &str, password: &str) -> RawClient {
    let mut client = RawClient::connect(addr).await;
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    assert_eq!(client.call(1, &handshake).await.error_code, 0);
    let token = format!("\0{user}\0{password}");
    let authenticate =
        SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token.into_bytes()));
    assert_eq!(client.call(2, &authenticate).await.error_code, 0);
    client
}

fn user_config(addr: SocketAddr, user: &str, password: &str) -> ClientConfig {
    let mut config = client_config(&addr.to_string());
    config
        .set("security.protocol", "sasl_plaintext")
        .set("sasl.mechanism", "PLAIN")
        .set("sasl.username", user)
        .set("sasl.password", password)
        .set("message.timeout.ms", "5000");
    config
}

fn named(topics: &[&str]) -> MetadataRequest {
    let topics = topics
        .iter()
        .map(|name| {
            MetadataRequestTopic::default()
                .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))
        })
        .collect();
    MetadataRequest::default().with_topics(Some(topics))
}

/// The end offset of partition 0 of `topic`, asked over the admin listener.
async fn end_offset(admin: SocketAddr, topic: &str) -> i64 {
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    let request = ListOffsetsRequest::default().with_topics(vec![ListOffsetsTopic::default()
        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
        .with_partitions(vec![ListOffsetsPartition::default()
            .with_partition_index(0)
            .with_timestamp(-1)])]);
    let response = RawClient::connect(admin).await.call(5, &request).await;
    let partition = &response.topics[0].partitions[0];
    assert_eq!(partition.error_code, 0);
    partition.offset
}

#[tokio::test]
async fn acls_decide_each_request_as_kafkas_standard_authorizer() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, admin, users) = secured_broker(dir.path()).await;
    for topic in ["orders", "logs-app", "secret"] {
        create_topic(&admin.to_string(), topic, 1, &[]).await;
    }
    let creations = vec![
        acl((2, "orders", 3), "User:alice", 3, 3),
        acl((2, "orders", 3), "User:alice", 4, 3),
        acl((2, "logs-", 4), "User:alice", 8, 3),
        acl((3, "g-", 4), "User:alice", 3, 3),
        acl((2, "orders", 3), "User:bob", 2, 3),
        acl((2, "orders", 3), "User:bob", 4, 2),
    ];
    let response = RawClient::connect(admin)
        .await
        .call(3, &CreateAclsRequest::default().with_creations(creations))
        .await;
    assert!(
        response.results.iter().all(|r| r.error_code == 0),
        "{response:?}"
    );

    // alice writes and reads "orders" with librdkafka: exactly her records.
    let alice = user_config(users, "alice", "alice-secret");
    let producer: rdkafka::producer::FutureProducer = alice.create().unwrap();
    let values: Vec<String> = (0..5).map(|i| format!("order-{i}")).collect();
    for value in &values {
        let record = FutureRecord::<(), String>::to("orders")
            .payload(value)
            .partition(0);
        producer
            .send(record, Duration::from_secs(10))
            .await
            .map_err(|(error, _)| error)
            .expect("alice may write orders");
    }
    assert_eq!(read_as(&alice, "orders", values.len()).await, values);
    let record = FutureRecord::<(), str>::to("secret")
        .payload("no")
        .partition(0);
    let refused = producer.send(record, Duration::from_secs(10)).await;
    let error = refused.map(|_| ()).map_err(|(error, _)| error).unwrap_err();
    assert_eq!(
        error.rdkafka_error_code(),
        Some(rdkafka::types::RDKafkaErrorCode::TopicAuthorizationFailed),
        "{error}"
    );
    assert_eq!(end_offset(admin, "secret").await, 0, "nothing appended");
    assert_eq!(end_offset(admin, "orders").await, 5);

    // Metadata hides what alice may not describe; naming it is refused.
    let mut raw_alice = logged_in(users, "alice", "alice-secret").await;
    let all = raw_alice
        .call(12, &MetadataRequest::default().with_topics(None))
        .await;
    let mut seen: Vec<String> = all
        .topics
        .iter()
        .map(|t| t.name.as_ref().unwrap().to_string())
        .collect();
    seen.sort();
    assert_eq!(seen, ["logs-app", "orders"]);
    let secret = raw_alice.call(12, &named(&["secret", "missing"])).await;
    let codes: Vec<i16> = secret.topics.iter().map(|t| t.error_code).collect();
    assert_eq!(
        codes,
        [TOPIC_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED]
    );
    assert!(secret.topics[0].partitions.is_empty());

    // Cluster APIs are refused to her, groups outside her prefix too.
    let creation = acl((2, "secret", 3), "User:alice", 3, 3);
    let response = raw_alice
        .call(
            3,
            &CreateAclsRequest::default().with_creations(vec![creation]),
        )
        .await;
    assert_eq!(response.results[0].error_code, CLUSTER_AUTHORIZATION_FAILED);
    let describe = DescribeAclsRequest::default()
        .with_resource_type_filter(1)
        .with_pattern_type_filter(1)
        .with_operation(1)
        .with_permission_type(1);
    assert_eq!(
        raw_alice.call(3, &describe).await.error_code,
        CLUSTER_AUTHORIZATION_FAILED
    );
    let find = |key: &str, key_type: i8| {
        FindCoordinatorRequest::default()
            .with_key_type(key_type)
            .with_coordinator_keys(vec![StrBytes::from_string(key.to_string())])
    };
    let response = raw_alice.call(4, &find("g-1", 0)).await;
    assert_eq!(response.coordinators[0].error_code, 0);
    let response = raw_alice.call(4, &find("other", 0)).await;
    assert_eq!(
        response.coordinators[0].error_code,
        GROUP_AUTHORIZATION_FAILED
    );
    let response = raw_alice.call(4, &find("txn", 1)).await;
    assert_eq!(
        response.coordinators[0].error_code,
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );
    let init = InitProducerIdRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("txn"))))
        .with_transaction_timeout_ms(10_000);
    assert_eq!(
        raw_alice.call(4, &init).await.error_code,
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );
    // An idempotent producer needs IDEMPOTENT_WRITE or WRITE on some topic: she has one.
    let idempotent = InitProducerIdRequest::default()
        .with_transactional_id(None)
        .with_transaction_timeout_ms(10_000);
    assert_eq!(raw_alice.call(4, &idempotent).await.error_code, 0);

    // bob has ALL on orders but a DENY of WRITE: deny wins, he may still read.
    let bob = user_config(users, "bob", "bob-secret");
    let bob_producer: rdkafka::producer::FutureProducer = bob.create().unwrap();
    let record = FutureRecord::<(), str>::to("orders")
        .payload("bob")
        .partition(0);
    let refused = bob_producer.send(record, Duration::from_secs(10)).await;
    let error = refused.map(|_| ()).map_err(|(error, _)| error).unwrap_err();
    assert_eq!(
        error.rdkafka_error_code(),
        Some(rdkafka::types::RDKafkaErrorCode::TopicAuthorizationFailed)
    );
    assert_eq!(end_offset(admin, "orders").await, 5, "bob appended nothing");
    let mut raw_bob = logged_in(users, "bob", "bob-secret").await;
    let bob_view = raw_bob.call(12, &named(&["orders"])).await;
    assert_eq!(bob_view.topics[0].error_code, 0);
    let idempotent = InitProducerIdRequest::default().with_transactional_id(None);
    let idempotent = raw_bob.call(4, &idempotent).await;
    assert_eq!(idempotent.error_code, CLUSTER_AUTHORIZATION_FAILED);

    // Deleting alice's READ takes effect on her next request.
    let filter = DeleteAclsFilter::default()
        .with_resource_type_filter(2)
        .with_resource_name_filter(Some(StrBytes::from_static_str("orders")))
        .with_pattern_type_filter(3)
        .with_principal_filter(Some(StrBytes::from_static_str("User:alice")))
        .with_host_filter(None)
        .with_operation(3)
        .with_permission_type(3);
    let response = RawClient::connect(admin)
        .await
        .call(3, &DeleteAclsRequest::default().with_filters(vec![filter]))
        .await;
    assert_eq!(response.filter_results[0].matching_acls.len(), 1);
    let fetch = fetch_request("orders");
    let response = raw_alice.call(12, &fetch).await;
    assert_eq!(
        response.responses[0].partitions[0].error_code,
        TOPIC_AUTHORIZATION_FAILED
    );
    // Her WRITE still implies DESCRIBE: the topic stays visible.
    let view = raw_alice.call(12, &named(&["orders"])).await;
    assert_eq!(view.topics[0].error_code, 0);
    broker.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_spoofed_replica_fetch_is_refused_without_cluster_action() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, admin, users) = secured_broker(dir.path()).await;
    create_topic(&admin.to_string(), "orders", 1, &[]).await;
    let all = acl((2, "orders", 3), "User:alice", 2, 3);
    let response = RawClient::connect(admin)
        .await
        .call(3, &CreateAclsRequest::default().with_creations(vec![all]))
        .await;
    assert_eq!(response.results[0].error_code, 0);
    let mut alice = logged_in(users, "alice", "alice-secret").await;
    let mut spoofed = fetch_request("orders");
    spoofed.replica_id = BrokerId(7);
    let response = alice.call(12, &spoofed).await;
    assert_eq!(
        response.responses[0].partitions[0].error_code, TOPIC_AUTHORIZATION_FAILED,
        "even with ALL on the topic, a follower's fetch needs CLUSTER_ACTION"
    );
    let response = alice.call(12, &fetch_request("orders")).await;
    assert_eq!(response.responses[0].partitions[0].error_code, 0);
    broker.shutdown().await.unwrap();
}

/// The first `count` values of partition 0 of `topic`, read as the client `config` logs in.
async fn read_as(config: &ClientConfig, topic: &str, count: usize) -> Vec<String> {
    use rdkafka::consumer::{Consumer, StreamConsumer};
    let consumer: StreamConsumer = {
        let mut config = config.clone();
        config
            .set("group.id", "g-readers")
            .set("enable.auto.commit", "false");
        config.create().unwrap()
    };
    let mut assignment = rdkafka::TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, rdkafka::Offset::Beginning)
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let mut read = Vec::new();
    while read.len() < count {
        let message = tokio::time::timeout(TIMEOUT, consumer.recv())
            .await
            .expect("records")
            .unwrap();
        read.push(message.detach());
    }
    payloads(&read)
}

fn fetch_request(topic: &str) -> FetchRequest {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_fetch_offset(0)
                .with_partition_max_bytes(1 << 20)])])
}
