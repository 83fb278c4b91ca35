//! A secured three-broker cluster: clients and brokers speak SASL_SSL (PLAIN) to each other,
//! the controller listener is SSL with required client certificates, and the StandardAuthorizer
//! is on with `User:ANONYMOUS` no super user — only `User:broker` (the brokers' SASL login and
//! their certificate's principal) and `User:admin`.
//!
//! Replication (follower fetches), transaction markers between brokers and the brokers'
//! requests to the controller all have to pass it: records produced with acks=all to replicated
//! partitions come back exactly, every partition keeps three in-sync replicas, and a
//! transaction spanning brokers commits. Refused and the cluster unchanged: PLAINTEXT bytes on
//! the controller port, a client without a certificate there, and a client whose certificate
//! the CA signed but whose principal (`User:alice`) lacks CLUSTER_ACTION — it asks the
//! controller to grant it every ACL.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rdkafka::admin::{AdminClient, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, FutureProducer, Producer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_broker::cluster::quorum::rpc::{
    ControllerRequest, QuorumClient, QuorumRequest, QuorumResponse,
};
use weir_broker::cluster::quorum::security::ControllerSecurity;
use weir_broker::security::acl::{AclBinding, Operation, PatternType, Permission, ResourceType};

use crate::cluster::TestCluster;
use crate::common::*;
use crate::tls::Authority;

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    username=\"broker\" password=\"broker-secret\" user_broker=\"broker-secret\" \
    user_admin=\"admin-secret\" user_alice=\"alice-secret\";";
const TOPIC: &str = "secured-replicated";
const TXN_TOPIC: &str = "secured-transactional";

/// Node properties: SASL_SSL `INTERNAL` (brokers) and `CLIENT` listeners, the SSL controller
/// listener with required client certificates, the authorizer with its super users.
fn secured_node(keystore: &Path, ca: &Path) -> Vec<(String, String)> {
    let pairs = [
        ("listeners", "INTERNAL://127.0.0.1:0,CLIENT://127.0.0.1:0"),
        (
            "listener.security.protocol.map",
            "INTERNAL:SASL_SSL,CLIENT:SASL_SSL,CONTROLLER:SSL",
        ),
        ("inter.broker.listener.name", "INTERNAL"),
        ("controller.listener.names", "CONTROLLER"),
        ("sasl.enabled.mechanisms", "PLAIN"),
        ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
        ("listener.name.internal.plain.sasl.jaas.config", JAAS),
        ("listener.name.client.plain.sasl.jaas.config", JAAS),
        ("ssl.keystore.location", keystore.to_str().unwrap()),
        ("ssl.truststore.location", ca.to_str().unwrap()),
        ("listener.name.controller.ssl.client.auth", "required"),
        (
            "ssl.principal.mapping.rules",
            "RULE:^CN=([a-z]+)$/$1/,DEFAULT",
        ),
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("super.users", "User:admin;User:broker"),
    ];
    pairs
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect()
}

fn sasl_ssl_client(cluster: &TestCluster, node_id: i32, ca: &Path) -> ClientConfig {
    let address = cluster.brokers[&node_id].listener_addr("CLIENT").unwrap();
    let mut config = client_config(&address.to_string());
    config
        .set("security.protocol", "sasl_ssl")
        .set("ssl.ca.location", ca.to_str().unwrap())
        .set("sasl.mechanism", "PLAIN")
        .set("sasl.username", "admin")
        .set("sasl.password", "admin-secret");
    config
}

/// partition → in-sync replicas, as `config`'s broker reports them.
fn in_sync_replicas(config: &ClientConfig, topic: &str) -> BTreeMap<i32, Vec<i32>> {
    let consumer: BaseConsumer = config.create().unwrap();
    let metadata = consumer
        .fetch_metadata(Some(topic), Duration::from_secs(5))
        .expect("metadata");
    metadata.topics()[0]
        .partitions()
        .iter()
        .map(|partition| (partition.id(), partition.isr().to_vec()))
        .collect()
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !tokio::task::block_in_place(&mut done) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} never happened"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn create_topics(admin: &AdminClient<DefaultClientContext>) {
    let topics = [TOPIC, TXN_TOPIC].map(|name| NewTopic::new(name, 3, TopicReplication::Fixed(3)));
    for result in admin
        .create_topics(&topics, &admin_options())
        .await
        .expect("create topics")
    {
        result.expect("topic created");
    }
}

/// Every record of `topic` (partitions 0–2), read from the start, as "partition:value".
fn read_all(config: &ClientConfig, topic: &str, expected: usize) -> BTreeSet<String> {
    let mut config = config.clone();
    config
        .set("group.id", "secured-reader")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed");
    let consumer: BaseConsumer = config.create().unwrap();
    let mut assignment = TopicPartitionList::new();
    for partition in 0..3 {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let mut seen = BTreeSet::new();
    let deadline = std::time::Instant::now() + TIMEOUT;
    while seen.len() < expected && std::time::Instant::now() < deadline {
        if let Some(message) = consumer.poll(Duration::from_millis(200)) {
            let message = message.expect("consume");
            let value = String::from_utf8_lossy(message.payload().unwrap()).into_owned();
            assert!(
                seen.insert(format!("{}:{value}", message.partition())),
                "{value} read twice"
            );
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_replicate_and_commit_transactions_over_sasl_ssl_with_mtls_controllers_and_acls() {
    let dir = tempfile::tempdir().unwrap();
    let authority = Authority::new("Weir cluster CA");
    let (keystore, ca) = (dir.path().join("broker.pem"), dir.path().join("ca.pem"));
    let (certificate, key) = authority.issue_peer("broker", &["localhost", "127.0.0.1"]);
    std::fs::write(&keystore, format!("{certificate}{key}")).unwrap();
    authority.write_ca(&ca);
    let mut cluster = TestCluster::start_configured(3, |_| secured_node(&keystore, &ca)).await;
    let client = sasl_ssl_client(&cluster, 1, &ca);
    wait_until("three brokers registered", || {
        let consumer: BaseConsumer = client.create().unwrap();
        consumer
            .fetch_metadata(None, Duration::from_secs(5))
            .is_ok_and(|metadata| metadata.brokers().len() == 3)
    })
    .await;
    let admin: AdminClient<DefaultClientContext> = client.create().unwrap();
    create_topics(&admin).await;

    // Replication: acks=all needs the followers, which fetch over SASL_SSL as User:broker.
    let producer: FutureProducer = {
        let mut config = client.clone();
        config.set("acks", "all").set("message.timeout.ms", "30000");
        config.create().unwrap()
    };
    let mut expected = BTreeSet::new();
    for partition in 0..3 {
        let values: Vec<String> = (0..50).map(|i| format!("record-{partition}-{i}")).collect();
        produce_values(&producer, TOPIC, partition, &values).await;
        expected.extend(values.iter().map(|value| format!("{partition}:{value}")));
    }
    assert_eq!(read_all(&client, TOPIC, expected.len()), expected);
    wait_until("every partition has three in-sync replicas", || {
        in_sync_replicas(&client, TOPIC)
            .values()
            .all(|isr| isr.len() == 3)
    })
    .await;

    // Transactions: the coordinator's markers reach partition leaders on the other brokers.
    let transactional: BaseProducer = {
        let mut config = client.clone();
        config.set("transactional.id", "secured-app");
        config.create().unwrap()
    };
    let call = Duration::from_secs(30);
    transactional.init_transactions(call).expect("init");
    transactional.begin_transaction().expect("begin");
    let mut committed = BTreeSet::new();
    for partition in 0..3 {
        let value = format!("txn-{partition}");
        committed.insert(format!("{partition}:{value}"));
        transactional
            .send(
                BaseRecord::<(), String>::to(TXN_TOPIC)
                    .partition(partition)
                    .payload(&value),
            )
            .expect("enqueue");
    }
    transactional.commit_transaction(call).expect("commit");
    assert_eq!(read_all(&client, TXN_TOPIC, committed.len()), committed);

    // The controller listener: PLAINTEXT bytes get no answer; neither does TLS without a
    // certificate; alice's CA-signed certificate gets a session but no say.
    let controller = controller_address(&cluster, 1);
    assert_plaintext_refused(controller).await;
    assert_certificate_required(controller, &ca).await;
    let (certificate, key) = authority.issue("alice", &["localhost"], true);
    let alice = controller_client(dir.path(), &ca, (&certificate, &key), controller);
    assert_refused(alice).await;
    // Still serving; alice was granted nothing: no ACL anywhere, and her SASL login may not
    // see the topic.
    for broker in cluster.brokers.values() {
        assert!(broker.context().acl_snapshot().bindings().is_empty());
    }
    let mut as_alice = client.clone();
    as_alice
        .set("sasl.username", "alice")
        .set("sasl.password", "alice-secret");
    let consumer: BaseConsumer = as_alice.create().unwrap();
    let metadata = tokio::task::block_in_place(|| {
        consumer.fetch_metadata(Some(TOPIC), Duration::from_secs(5))
    })
    .expect("alice's metadata");
    assert_eq!(
        metadata.topics()[0].error(),
        Some(rdkafka::types::RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED),
    );
    assert_eq!(read_all(&client, TOPIC, expected.len()), expected);
    for (_, broker) in std::mem::take(&mut cluster.brokers) {
        broker.shutdown().await.unwrap();
    }
}

fn controller_address(cluster: &TestCluster, node_id: i32) -> std::net::SocketAddr {
    let context = cluster.brokers[&node_id].context();
    context.config().controller_address().unwrap().unwrap()
}

/// An ApiVersions-sized frame of plain bytes: the TLS port closes without a byte back.
async fn assert_plaintext_refused(address: std::net::SocketAddr) {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let frame = b"\x00\x00\x00\x10{\"DescribeQuorum\"";
    stream.write_all(frame).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(15), stream.read_to_end(&mut answer)).await;
    assert!(
        read.is_ok_and(|_| !answer.starts_with(b"\x00\x00")),
        "the controller listener answered PLAINTEXT: {answer:?}"
    );
}

/// TLS without a client certificate: a well-formed request gets no answer (the handshake, or
/// the first read after it, fails).
async fn assert_certificate_required(address: std::net::SocketAddr, ca: &Path) {
    use rustls_pki_types::pem::PemObject;
    use tokio_rustls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    for certificate in rustls_pki_types::CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(certificate.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls));
    let Ok(mut stream) = connector.connect(name, tcp).await else {
        return; // refused in the handshake (TLS 1.2)
    };
    let request = serde_json::to_vec(&QuorumRequest::Controller(
        ControllerRequest::DescribeQuorum,
    ))
    .unwrap();
    let mut frame = (request.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&request);
    let _ = stream.write_all(&frame).await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(15), stream.read_to_end(&mut answer)).await;
    assert!(
        read.is_ok(),
        "the controller listener neither answered nor closed"
    );
    assert!(
        answer.is_empty(),
        "a client without a certificate was answered: {}",
        String::from_utf8_lossy(&answer)
    );
}

/// A quorum client of `address` showing `identity` (certificate, key).
fn controller_client(
    dir: &Path,
    ca: &Path,
    (certificate, key): (&str, &str),
    address: std::net::SocketAddr,
) -> QuorumClient {
    let keystore = dir.join("alice.pem");
    std::fs::write(&keystore, format!("{certificate}{key}")).unwrap();
    let properties = [
        ("controller.listener.names", "CONTROLLER"),
        ("listener.security.protocol.map", "CONTROLLER:SSL"),
        ("ssl.truststore.location", ca.to_str().unwrap()),
        ("ssl.keystore.location", keystore.to_str().unwrap()),
    ];
    let security = ControllerSecurity::from_config(&config(&dir.join("alice"), &properties))
        .expect("alice's controller security");
    QuorumClient::new(format!("localhost:{}", address.port()), security)
}

/// `client` asks the controller to grant alice everything and is refused for want of
/// CLUSTER_ACTION.
async fn assert_refused(mut client: QuorumClient) {
    let grant = AclBinding {
        resource_type: ResourceType::Cluster,
        resource_name: "kafka-cluster".into(),
        pattern_type: PatternType::Literal,
        principal: "User:alice".into(),
        host: "*".into(),
        operation: Operation::All,
        permission: Permission::Allow,
    };
    let request = QuorumRequest::Controller(ControllerRequest::ChangeAcls {
        created: vec![grant],
        removed: Vec::new(),
    });
    match client.call(&request, Duration::from_secs(10)).await {
        Ok(QuorumResponse::Refused(refusal)) => assert!(
            refusal.contains("User:alice") && refusal.contains("CLUSTER_ACTION"),
            "refused, but not for CLUSTER_ACTION: {refusal}"
        ),
        other => panic!("alice's request was not refused for CLUSTER_ACTION: {other:?}"),
    }
}
