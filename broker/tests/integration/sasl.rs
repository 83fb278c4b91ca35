//! SASL listeners with rdkafka (librdkafka) and raw frames: SCRAM-SHA-256/512 users created with
//! AlterUserScramCredentials and PLAIN users from the JAAS config produce and consume exactly;
//! the users survive a restart; wrong passwords, unknown users and mechanisms, and requests
//! before authentication are refused and closed while the broker keeps serving; a v0
//! handshake's raw tokens work; sessions end after `connections.max.reauth.ms` (KIP-368) and
//! librdkafka re-authenticates across them without losing a record.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::FutureRecord;
use rdkafka::ClientConfig;
use weir_broker::security::scram::ScramMechanism;

use crate::cluster::free_port;
use crate::common::*;
use crate::raw::RawClient;

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
     username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";";

/// A broker with a PLAINTEXT listener (the admin path) and a SASL_PLAINTEXT one serving PLAIN
/// and both SCRAM mechanisms, plus `extra`; returns it with both addresses.
async fn sasl_broker(
    data: &Path,
    extra: &[(&str, &str)],
) -> (weir_broker::Broker, SocketAddr, SocketAddr) {
    let (plain, sasl) = (free_port(), free_port());
    let listeners = format!("PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}");
    let mut properties = vec![
        ("listeners", listeners.as_str()),
        (
            "sasl.enabled.mechanisms",
            "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        ),
        (
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            PLAIN_JAAS,
        ),
        ("connection.failed.authentication.delay.ms", "10"),
    ];
    properties.extend_from_slice(extra);
    let broker = start(data, &properties).await;
    let plaintext = broker.listener_addr("PLAINTEXT").unwrap();
    let sasl = broker.listener_addr("SASL_PLAINTEXT").unwrap();
    (broker, plaintext, sasl)
}

/// Creates a SCRAM user over `admin` as Kafka's tools do: the client salts and hashes.
async fn create_user(
    admin: SocketAddr,
    user: &str,
    password: &str,
    mechanism: ScramMechanism,
    iterations: i32,
) -> i16 {
    let salt = format!("salt-of-{user}").into_bytes();
    let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations as u32);
    let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![
        ScramCredentialUpsertion::default()
            .with_name(StrBytes::from_string(user.to_string()))
            .with_mechanism(mechanism.type_code())
            .with_iterations(iterations)
            .with_salt(Bytes::from(salt))
            .with_salted_password(Bytes::from(salted)),
    ]);
    let mut client = RawClient::connect(admin).await;
    let response = client.call(0, &request).await;
    assert_eq!(response.results.len(), 1);
    response.results[0].error_code
}

fn sasl_client(sasl: SocketAddr, mechanism: &str, user: &str, password: &str) -> ClientConfig {
    let mut config = client_config(&sasl.to_string());
    config
        .set("security.protocol", "sasl_plaintext")
        .set("sasl.mechanism", mechanism)
        .set("sasl.username", user)
        .set("sasl.password", password);
    config
}

/// Whether a client with `config` gets Metadata within a few seconds.
fn reaches(config: &ClientConfig) -> bool {
    let consumer: BaseConsumer = config.create().unwrap();
    consumer
        .fetch_metadata(None, Duration::from_secs(4))
        .is_ok()
}

/// Writes `values` to partition 0 of `topic` and reads them back, both as `client`.
async fn round_trip(client: &ClientConfig, topic: &str, values: &[String]) -> Vec<String> {
    let producer: rdkafka::producer::FutureProducer = client.clone().create().unwrap();
    for value in values {
        let record = FutureRecord::<(), String>::to(topic)
            .payload(value)
            .partition(0);
        producer
            .send(record, Duration::from_secs(20))
            .await
            .map_err(|(error, _)| error)
            .expect("delivered over SASL");
    }
    let consumer: rdkafka::consumer::StreamConsumer = {
        let mut config = client.clone();
        config
            .set("group.id", format!("{topic}-reader"))
            .set("enable.auto.commit", "false");
        config.create().unwrap()
    };
    let mut assignment = rdkafka::TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, rdkafka::Offset::Beginning)
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let mut read = Vec::new();
    while read.len() < values.len() {
        let message = tokio::time::timeout(TIMEOUT, consumer.recv())
            .await
            .expect("records over SASL")
            .unwrap();
        read.push(message.detach());
    }
    payloads(&read)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_and_plain_users_produce_and_consume_and_scram_users_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (broker, admin, sasl) = sasl_broker(&data, &[]).await;
    assert_eq!(
        create_user(admin, "bob", "bob-secret", ScramMechanism::Sha512, 8192).await,
        0
    );
    assert_eq!(
        create_user(admin, "carol", "carol-secret", ScramMechanism::Sha256, 4096).await,
        0
    );
    for (mechanism, user, password) in [
        ("SCRAM-SHA-512", "bob", "bob-secret"),
        ("SCRAM-SHA-256", "carol", "carol-secret"),
        ("PLAIN", "alice", "alice-secret"),
    ] {
        let topic = format!("sasl-{user}");
        create_topic(&admin.to_string(), &topic, 1, &[]).await;
        let values: Vec<String> = (0..20).map(|i| format!("{user}-{i}")).collect();
        let client = sasl_client(sasl, mechanism, user, password);
        let read = round_trip(&client, &topic, &values).await;
        assert_eq!(read, values, "{mechanism} as {user}");
    }

    // Describe shows mechanisms and iterations only.
    let mut client = RawClient::connect(admin).await;
    let described: DescribeUserScramCredentialsResponse = client
        .call(0, &DescribeUserScramCredentialsRequest::default())
        .await;
    let users: Vec<(String, Vec<(i8, i32)>)> = described
        .results
        .iter()
        .map(|r| {
            (
                r.user.to_string(),
                r.credential_infos
                    .iter()
                    .map(|c| (c.mechanism, c.iterations))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        users,
        vec![
            ("bob".to_string(), vec![(2, 8192)]),
            ("carol".to_string(), vec![(1, 4096)])
        ]
    );
    let named = DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
        UserName::default().with_name(StrBytes::from_static_str("nobody")),
    ]));
    let missing: DescribeUserScramCredentialsResponse = client.call(0, &named).await;
    assert_eq!(missing.results[0].error_code, 91, "RESOURCE_NOT_FOUND");

    broker.shutdown().await.unwrap();
    let (broker, _, sasl) = sasl_broker(&data, &[]).await;
    assert!(
        reaches(&sasl_client(sasl, "SCRAM-SHA-512", "bob", "bob-secret")),
        "bob after a restart"
    );
    assert!(
        !reaches(&sasl_client(sasl, "SCRAM-SHA-512", "carol", "carol-secret")),
        "carol has no SHA-512 credential"
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_logins_and_early_requests_are_refused_and_the_broker_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, admin, sasl) = sasl_broker(&dir.path().join("data"), &[]).await;
    assert_eq!(
        create_user(admin, "bob", "bob-secret", ScramMechanism::Sha256, 4096).await,
        0
    );
    for (mechanism, user, password) in [
        ("SCRAM-SHA-256", "bob", "wrong"),
        ("SCRAM-SHA-256", "nobody", "bob-secret"),
        ("PLAIN", "alice", "wrong"),
        ("PLAIN", "bob", "bob-secret"),
    ] {
        assert!(
            !reaches(&sasl_client(sasl, mechanism, user, password)),
            "{mechanism} {user}/{password} admitted"
        );
    }

    // A request before authentication: closed unanswered.
    let mut raw = RawClient::connect(sasl).await;
    let (_, body) = raw.encode(12, &MetadataRequest::default());
    raw.send_frame(&body).await;
    assert!(
        raw.is_closed().await,
        "Metadata before authentication was served"
    );

    // A mechanism the listener does not serve: its list, then closed.
    let mut raw = RawClient::connect(sasl).await;
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("GSSAPI"));
    let answer = raw.call(1, &handshake).await;
    assert_eq!(answer.error_code, 33, "UNSUPPORTED_SASL_MECHANISM");
    let mechanisms: Vec<String> = answer.mechanisms.iter().map(|m| m.to_string()).collect();
    assert_eq!(mechanisms, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);
    assert!(raw.is_closed().await);

    // A wrong PLAIN password: SASL_AUTHENTICATION_FAILED with Kafka's message, then closed.
    let mut raw = RawClient::connect(sasl).await;
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    assert_eq!(raw.call(1, &handshake).await.error_code, 0);
    let token =
        SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(b"\0alice\0nope"));
    let failed = raw.call(2, &token).await;
    assert_eq!(failed.error_code, 58, "SASL_AUTHENTICATION_FAILED");
    assert_eq!(
        failed.error_message.as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
    assert!(raw.is_closed().await);

    // A frame over sasl.server.max.receive.size before authentication: closed.
    let mut raw = RawClient::connect(sasl).await;
    raw.send_raw(&(600_000i32).to_be_bytes()).await;
    assert!(
        raw.is_closed().await,
        "an oversized pre-authentication frame was read"
    );

    // SaslHandshake on the PLAINTEXT listener: ILLEGAL_SASL_STATE, as Kafka answers.
    let mut raw = RawClient::connect(admin).await;
    assert_eq!(
        raw.call(1, &handshake).await.error_code,
        34,
        "ILLEGAL_SASL_STATE"
    );

    assert!(
        reaches(&sasl_client(sasl, "SCRAM-SHA-256", "bob", "bob-secret")),
        "the broker stopped serving"
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v0_handshake_takes_raw_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, _, sasl) = sasl_broker(&dir.path().join("data"), &[]).await;
    let mut raw = RawClient::connect(sasl).await;
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    assert_eq!(raw.call(0, &handshake).await.error_code, 0);
    raw.send_frame(b"\0alice\0alice-secret").await;
    assert_eq!(
        raw.read_frame().await,
        Some(Bytes::new()),
        "PLAIN's empty last token"
    );
    let metadata: MetadataResponse = raw.call(12, &MetadataRequest::default()).await;
    assert_eq!(metadata.brokers.len(), 1);

    let mut raw = RawClient::connect(sasl).await;
    assert_eq!(raw.call(0, &handshake).await.error_code, 0);
    raw.send_frame(b"\0alice\0wrong").await;
    assert!(
        raw.is_closed().await,
        "a wrong raw token left the connection open"
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_end_after_connections_max_reauth_ms_and_librdkafka_reauthenticates() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, admin, sasl) = sasl_broker(
        &dir.path().join("data"),
        &[("connections.max.reauth.ms", "1500")],
    )
    .await;
    let mut raw = RawClient::connect(sasl).await;
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    assert_eq!(raw.call(1, &handshake).await.error_code, 0);
    let token = SaslAuthenticateRequest::default()
        .with_auth_bytes(Bytes::from_static(b"\0alice\0alice-secret"));
    let done = raw.call(2, &token).await;
    assert_eq!((done.error_code, done.session_lifetime_ms), (0, 1500));
    let _: MetadataResponse = raw.call(12, &MetadataRequest::default()).await;
    tokio::time::sleep(Duration::from_millis(1700)).await;
    let (_, body) = raw.encode(12, &MetadataRequest::default());
    raw.send_frame(&body).await;
    assert!(
        raw.is_closed().await,
        "a request after the session expired was served"
    );

    // librdkafka re-authenticates (KIP-368) on its connections as sessions end.
    create_topic(&admin.to_string(), "reauth", 1, &[]).await;
    let client = sasl_client(sasl, "PLAIN", "alice", "alice-secret");
    let producer: rdkafka::producer::FutureProducer = client.clone().create().unwrap();
    let values: Vec<String> = (0..25).map(|i| format!("through-sessions-{i}")).collect();
    for value in &values {
        let record = FutureRecord::<(), String>::to("reauth")
            .payload(value)
            .partition(0);
        producer
            .send(record, Duration::from_secs(20))
            .await
            .map_err(|(e, _)| e)
            .expect("delivered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let read = consume(
        &admin.to_string(),
        "reauth",
        0,
        rdkafka::Offset::Beginning,
        values.len(),
    )
    .await;
    assert_eq!(
        payloads(&read),
        values,
        "every record once, in order, across re-authentications"
    );
    let watcher: BaseConsumer = client_config(&admin.to_string()).create().unwrap();
    let watermarks = watcher.fetch_watermarks("reauth", 0, TIMEOUT).unwrap();
    assert_eq!(
        watermarks,
        (0, values.len() as i64),
        "no record written twice"
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scram_user_made_on_one_broker_logs_in_on_every_broker_of_a_cluster() {
    use std::collections::BTreeMap;
    let ports: BTreeMap<i32, (u16, u16)> =
        (1..=3).map(|id| (id, (free_port(), free_port()))).collect();
    let cluster = crate::cluster::TestCluster::start_configured(3, |node_id| {
        let (plain, sasl) = ports[&node_id];
        vec![
            (
                "listeners".into(),
                format!("PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}"),
            ),
            ("inter.broker.listener.name".into(), "PLAINTEXT".into()),
            ("sasl.enabled.mechanisms".into(), "SCRAM-SHA-256".into()),
        ]
    })
    .await;
    let admin_of_1: SocketAddr = format!("127.0.0.1:{}", ports[&1].0).parse().unwrap();
    assert_eq!(
        create_user(
            admin_of_1,
            "dave",
            "dave-secret",
            ScramMechanism::Sha256,
            4096
        )
        .await,
        0
    );
    for (node_id, (_, sasl)) in &ports {
        let sasl: SocketAddr = format!("127.0.0.1:{sasl}").parse().unwrap();
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        while !reaches(&sasl_client(sasl, "SCRAM-SHA-256", "dave", "dave-secret")) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "dave cannot log in on broker {node_id}"
            );
        }
        assert!(
            !reaches(&sasl_client(sasl, "SCRAM-SHA-256", "dave", "not-dave")),
            "a wrong password on broker {node_id}"
        );
    }
    drop(cluster);
}
