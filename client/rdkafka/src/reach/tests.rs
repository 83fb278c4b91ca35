//! Reaching a secured Weir broker with wrong settings: each refusal named with its fix, and
//! quickly (not after the whole timeout).

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use weir_broker::{Broker, BrokerConfig};

use super::*;

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
     username=\"admin\" password=\"admin-secret\" user_alice=\"alice-secret\";";
const TIMEOUT: Duration = Duration::from_secs(10);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A broker with PLAINTEXT (super user ANONYMOUS), SASL_PLAINTEXT (PLAIN, alice) and SSL
/// listeners, ACLs on; its addresses in that order.
async fn secured_broker(dir: &std::path::Path) -> (Broker, [SocketAddr; 3]) {
    let key = rcgen::KeyPair::generate().unwrap();
    let certificate = rcgen::CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let keystore = dir.join("broker.pem");
    std::fs::write(
        &keystore,
        format!("{}{}", certificate.pem(), key.serialize_pem()),
    )
    .unwrap();
    let (plain, sasl, ssl) = (free_port(), free_port(), free_port());
    let listeners = format!(
        "PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},SSL://127.0.0.1:{ssl}"
    );
    let advertised = format!(
        "PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},SSL://localhost:{ssl}"
    );
    let mut config = BrokerConfig::new("127.0.0.1:0".parse().unwrap(), dir.join("data"));
    for (name, value) in [
        ("listeners", listeners.as_str()),
        ("advertised.listeners", advertised.as_str()),
        ("sasl.enabled.mechanisms", "PLAIN"),
        ("listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS),
        ("ssl.keystore.location", keystore.to_str().unwrap()),
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("super.users", "User:ANONYMOUS"),
    ] {
        config.set(name, value).unwrap();
    }
    let broker = Broker::start(config).await.expect("broker starts");
    let addresses =
        ["PLAINTEXT", "SASL_PLAINTEXT", "SSL"].map(|name| broker.listener_addr(name).unwrap());
    (broker, addresses)
}

fn reach(
    address: &str,
    properties: &[(&str, &str)],
    topic: &str,
) -> (Result<(), Unreached>, Duration) {
    let settings = ClientSettings::new(address).with_properties(properties.iter().copied());
    let started = Instant::now();
    let reached = tokio::task::block_in_place(|| settings.reach_for(&[topic], TIMEOUT));
    (reached, started.elapsed())
}

fn assert_explained(reached: (Result<(), Unreached>, Duration), message: &str, hint: &str) {
    let (reached, took) = reached;
    let unreached = reached.unwrap_err();
    assert!(unreached.message.contains(message), "{unreached:?}");
    assert!(
        unreached.hint.as_deref().unwrap_or("").contains(hint),
        "{unreached:?}"
    );
    assert!(
        took < TIMEOUT,
        "explained only when the timeout ran out: {unreached:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_settings_are_explained_with_their_fix() {
    let dir = tempfile::tempdir().unwrap();
    let (_broker, [plain, sasl, ssl]) = secured_broker(dir.path()).await;
    let admin: AdminClient<DefaultClientContext> = ClientSettings::new(plain.to_string())
        .config(&[])
        .create()
        .unwrap();
    let created = admin
        .create_topics(
            &[NewTopic::new("guarded", 1, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .unwrap();
    assert!(created[0].is_ok(), "{created:?}");

    // The super user describes it; a topic not created yet is no problem (the pipeline makes it).
    reach(&plain.to_string(), &[], "guarded").0.unwrap();
    reach(&plain.to_string(), &[], "not-yet").0.unwrap();
    // ... and describing it did not create it (with the broker's default partition count).
    let metadata = admin.inner().fetch_metadata(None, TIMEOUT).unwrap();
    let names: Vec<&str> = metadata.topics().iter().map(|t| t.name()).collect();
    assert!(
        !names.contains(&"not-yet"),
        "reaching created the topic: {names:?}"
    );

    let sasl_address = sasl.to_string();
    let alice = |password| {
        [
            ("security.protocol", "sasl_plaintext"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "alice"),
            ("sasl.password", password),
        ]
    };
    assert_explained(
        reach(&sasl_address, &alice("wrong"), "guarded"),
        "Authentication failed",
        "sasl.username and sasl.password",
    );
    assert_explained(
        reach(&sasl_address, &alice("alice-secret"), "guarded"),
        "not authorized to describe topic guarded",
        "--topic guarded",
    );
    // The broker's self-signed certificate is not in the system's store.
    let ssl_address = format!("localhost:{}", ssl.port());
    assert_explained(
        reach(&ssl_address, &[("security.protocol", "ssl")], "guarded"),
        "certificate verify failed",
        "ssl.ca.location",
    );
    assert_explained(
        reach(&ssl_address, &[], "guarded"),
        "accepts connections but closes them",
        "security.protocol",
    );
    let nobody = format!("127.0.0.1:{}", free_port());
    assert_explained(
        reach(&nobody, &[], "guarded"),
        "nothing accepts connections",
        "ports",
    );
}
