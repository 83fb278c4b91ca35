//! SASL/OAUTHBEARER with Kafka's validator settings (KIP-768): a JWKS served over HTTP by the
//! test, ES256 tokens signed in the test, librdkafka (rdkafka's token callback) as the client.
//!
//! A valid token's `sub` is the principal: alice (a super user) produces and consumes exactly,
//! bob's valid token is authenticated but not authorized. Expired tokens, a wrong issuer or
//! audience, a foreign signature, an unknown key id and an unsigned (`alg: none`) token are
//! refused while the broker keeps serving; a key added to the JWKS is used once a token names it
//! (early refresh). On the wire: the RFC 7628 error challenge, then SASL_AUTHENTICATION_FAILED
//! with Kafka's JSON message; the session lasts no longer than the token (KIP-368). A listener
//! without Kafka's validating handler, or whose JWKS cannot be fetched, stops the broker at
//! start-up with the reason.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use bytes::Bytes;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use rdkafka::client::{ClientContext, OAuthToken};
use rdkafka::consumer::{ConsumerContext, StreamConsumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::cluster::free_port;
use crate::common::*;
use crate::raw::RawClient;

const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "weir";
const VALIDATOR: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";

/// A signing key and the JWK that publishes it.
struct SigningKey {
    kid: String,
    key: rcgen::KeyPair,
}

impl SigningKey {
    fn new(kid: &str) -> SigningKey {
        SigningKey {
            kid: kid.to_string(),
            key: rcgen::KeyPair::generate().unwrap(),
        }
    }

    fn jwk(&self) -> serde_json::Value {
        let point = self.key.public_key_raw();
        let encode = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        json!({"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": self.kid,
               "x": encode(&point[1..33]), "y": encode(&point[33..65])})
    }

    /// A token for `sub` expiring `expires_in_s` from now (negative: already expired), with
    /// `claims` overriding the defaults.
    fn token(&self, sub: &str, expires_in_s: i64, claims: serde_json::Value) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let mut body = json!({"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": now,
                              "exp": now + expires_in_s});
        for (name, value) in claims.as_object().unwrap() {
            body[name] = value.clone();
        }
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        let key = EncodingKey::from_ec_der(&self.key.serialize_der());
        jsonwebtoken::encode(&header, &body, &key).unwrap()
    }
}

fn jwks(keys: &[&SigningKey]) -> String {
    json!({"keys": keys.iter().map(|key| key.jwk()).collect::<Vec<_>>()}).to_string()
}

/// Serves `document` (as it is at each request) at every path, over HTTP/1.1 on loopback.
async fn serve_jwks(document: Arc<Mutex<String>>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let document = document.lock().unwrap().clone();
            tokio::spawn(async move {
                let mut request = vec![0u8; 4096];
                let _ = stream.read(&mut request).await;
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{document}",
                    document.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    address
}

/// Hands librdkafka one fixed token.
struct FixedToken(String);

impl ClientContext for FixedToken {
    const ENABLE_REFRESH_OAUTH_TOKEN: bool = true;

    fn generate_oauth_token(
        &self,
        _oauthbearer_config: Option<&str>,
    ) -> Result<OAuthToken, Box<dyn std::error::Error>> {
        Ok(OAuthToken {
            token: self.0.clone(),
            principal_name: "ignored-by-the-broker".into(),
            lifetime_ms: SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64 + 600_000,
        })
    }
}

impl ConsumerContext for FixedToken {}

fn oauth_config(sasl: SocketAddr) -> ClientConfig {
    let mut config = client_config(&sasl.to_string());
    config
        .set("security.protocol", "sasl_plaintext")
        .set("sasl.mechanism", "OAUTHBEARER")
        .set("message.timeout.ms", "5000");
    config
}

/// What producing one record with `token` ends in.
async fn produce_with(
    sasl: SocketAddr,
    token: String,
    topic: &str,
) -> Result<i64, RDKafkaErrorCode> {
    let producer: FutureProducer<FixedToken> = oauth_config(sasl)
        .create_with_context(FixedToken(token))
        .unwrap();
    let record = FutureRecord::<(), str>::to(topic).partition(0).payload("x");
    match producer.send(record, Duration::from_secs(5)).await {
        Ok(delivery) => Ok(delivery.offset),
        Err((error, _)) => Err(error.rdkafka_error_code().unwrap_or(RDKafkaErrorCode::Fail)),
    }
}

async fn oauth_broker(
    dir: &std::path::Path,
    jwks_url: &str,
    extra: &[(&str, &str)],
) -> Result<(weir_broker::Broker, SocketAddr, SocketAddr), String> {
    let (plain, sasl) = (free_port(), free_port());
    let listeners = format!("PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}");
    let mut properties = vec![
        ("listeners", listeners.as_str()),
        ("sasl.enabled.mechanisms", "OAUTHBEARER"),
        ("sasl.oauthbearer.jwks.endpoint.url", jwks_url),
        ("sasl.oauthbearer.expected.issuer", ISSUER),
        ("sasl.oauthbearer.expected.audience", AUDIENCE),
        (
            "listener.name.sasl_plaintext.oauthbearer.connections.max.reauth.ms",
            "3600000",
        ),
        (
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;",
        ),
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("super.users", "User:ANONYMOUS;User:alice"),
        ("connection.failed.authentication.delay.ms", "10"),
    ];
    properties.extend_from_slice(extra);
    init_logging();
    let broker = weir_broker::Broker::start(config(dir, &properties))
        .await
        .map_err(|e| e.to_string())?;
    let plaintext = broker.listener_addr("PLAINTEXT").unwrap();
    let sasl = broker.listener_addr("SASL_PLAINTEXT").unwrap();
    Ok((broker, plaintext, sasl))
}

const HANDLER: (&str, &str) = (
    "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class",
    VALIDATOR,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_tokens_name_their_principal_and_every_bad_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second, foreign) = (
        SigningKey::new("k1"),
        SigningKey::new("k2"),
        SigningKey::new("k1"),
    );
    let document = Arc::new(Mutex::new(jwks(&[&first])));
    let url = format!(
        "http://{}/jwks.json",
        serve_jwks(Arc::clone(&document)).await
    );
    let scope_claim = ("sasl.oauthbearer.scope.claim.name", "scp");
    let (broker, admin, sasl) = oauth_broker(dir.path(), &url, &[HANDLER, scope_claim])
        .await
        .unwrap();
    create_topic(&admin.to_string(), "tokens", 1, &[]).await;

    // alice's token: produced and read back exactly, as User:alice.
    let alice = first.token("alice", 600, json!({}));
    let producer: FutureProducer<FixedToken> = oauth_config(sasl)
        .create_with_context(FixedToken(alice.clone()))
        .unwrap();
    let values: Vec<String> = (0..20).map(|i| format!("alice-{i}")).collect();
    for value in &values {
        let record = FutureRecord::<(), String>::to("tokens")
            .partition(0)
            .payload(value);
        producer
            .send(record, TIMEOUT)
            .await
            .expect("alice produces");
    }
    let mut consumer_config = oauth_config(sasl);
    consumer_config
        .set("group.id", "oauth-readers")
        .set("enable.auto.commit", "false");
    let consumer: StreamConsumer<FixedToken> = consumer_config
        .create_with_context(FixedToken(alice))
        .unwrap();
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset("tokens", 0, Offset::Beginning)
        .unwrap();
    rdkafka::consumer::Consumer::assign(&consumer, &assignment).unwrap();
    let mut read = Vec::new();
    while read.len() < values.len() {
        let message = tokio::time::timeout(TIMEOUT, consumer.recv())
            .await
            .expect("alice reads in time")
            .expect("alice reads");
        read.push(String::from_utf8_lossy(message.payload().unwrap()).into_owned());
    }
    assert_eq!(read, values);

    // bob's token is valid: authenticated as User:bob, who may not write.
    let bob = first.token("bob", 600, json!({}));
    assert_eq!(
        produce_with(sasl, bob, "tokens").await,
        Err(RDKafkaErrorCode::TopicAuthorizationFailed)
    );

    // Tokens that must not authenticate anyone.
    let unsigned = format!(
        "{}.{}.",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
            json!({"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "exp": 4_000_000_000u64})
                .to_string()
        )
    );
    let refused = [
        ("expired", first.token("alice", -120, json!({}))),
        (
            "wrong issuer",
            first.token("alice", 600, json!({"iss": "https://evil.example"})),
        ),
        (
            "wrong audience",
            first.token("alice", 600, json!({"aud": "other"})),
        ),
        ("foreign signature", foreign.token("alice", 600, json!({}))),
        (
            "unknown key id",
            SigningKey::new("k9").token("alice", 600, json!({})),
        ),
        ("unsigned", unsigned),
        ("no iat", first.token("alice", 600, json!({"iat": null}))),
        (
            "a blank scope",
            first.token("alice", 600, json!({"scp": ["read", " "]})),
        ),
        (
            "a scope named twice",
            first.token("alice", 600, json!({"scp": ["read", "read"]})),
        ),
        ("a shared secret", {
            let mut header = Header::new(Algorithm::HS256);
            header.kid = Some("k1".into());
            let claims = json!({"sub": "alice", "iss": ISSUER, "aud": AUDIENCE,
                                "exp": 4_000_000_000u64});
            jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(b"guessed")).unwrap()
        }),
    ];
    for (what, token) in refused {
        assert!(
            produce_with(sasl, token, "tokens").await.is_err(),
            "a token with {what} was accepted"
        );
    }
    assert_eq!(
        produce_with(sasl, first.token("alice", 600, json!({})), "tokens").await,
        Ok(values.len() as i64),
        "the broker kept serving"
    );
    // The scope claim is the configured one: scopes under it are read, the default `scope`
    // claim is just another claim.
    let scoped = json!({"scp": ["read", "write"], "scope": ["x", "x"]});
    assert_eq!(
        produce_with(sasl, first.token("alice", 600, scoped), "tokens").await,
        Ok(values.len() as i64 + 1),
        "a token with good scopes"
    );

    // A key added to the JWKS: the first token naming it makes the broker refresh early.
    *document.lock().unwrap() = jwks(&[&first, &second]);
    let rotated = second.token("alice", 600, json!({}));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while produce_with(sasl, rotated.clone(), "tokens").await.is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new key was never used"
        );
    }

    // On the wire, as Kafka: the error challenge, the client's \x01, then the failure.
    let mut raw = oauth_handshake(sasl).await;
    let forged = format!(
        "n,,\x01auth=Bearer {}\x01\x01",
        foreign.token("alice", 600, json!({}))
    );
    let challenge = raw.call(2, &authenticate(forged.into_bytes())).await;
    assert_eq!(challenge.error_code, 0);
    assert_eq!(&challenge.auth_bytes[..], br#"{"status":"invalid_token"}"#);
    let failed = raw.call(2, &authenticate(b"\x01".to_vec())).await;
    assert_eq!(failed.error_code, 58, "SASL_AUTHENTICATION_FAILED");
    assert_eq!(
        failed.error_message.as_deref(),
        Some(r#"{"status":"invalid_token"}"#)
    );
    assert!(raw.is_closed().await);

    // KIP-368: the session ends with the token (2 minutes), not after connections.max.reauth.ms.
    let mut raw = oauth_handshake(sasl).await;
    let short = format!(
        "n,,\x01auth=Bearer {}\x01\x01",
        first.token("alice", 120, json!({}))
    );
    let done = raw.call(2, &authenticate(short.into_bytes())).await;
    assert_eq!(done.error_code, 0);
    assert!(
        (100_000..=120_000).contains(&done.session_lifetime_ms),
        "session lifetime {} ms for a token expiring in 120 s",
        done.session_lifetime_ms
    );
    broker.shutdown().await.unwrap();
}

async fn oauth_handshake(sasl: SocketAddr) -> RawClient {
    let mut raw = RawClient::connect(sasl).await;
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("OAUTHBEARER"));
    assert_eq!(raw.call(1, &handshake).await.error_code, 0);
    raw
}

fn authenticate(bytes: Vec<u8>) -> SaslAuthenticateRequest {
    SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(bytes))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_that_cannot_check_tokens_stops_the_broker_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let document = Arc::new(Mutex::new(jwks(&[&SigningKey::new("k1")])));
    let url = format!("http://{}/jwks.json", serve_jwks(document).await);
    let unreachable = format!("http://127.0.0.1:{}/jwks.json", free_port());
    // (JWKS URL, whether Kafka's validating handler is named, what the error says)
    let cases = [
        (url.as_str(), false, "OAuthBearerValidatorCallbackHandler"),
        (unreachable.as_str(), true, "cannot be loaded"),
        ("http://keys.example/jwks.json", true, "https"),
        ("file:///nonexistent/jwks.json", true, "cannot read"),
    ];
    for (index, (jwks_url, with_handler, expected)) in cases.into_iter().enumerate() {
        let data = dir.path().join(format!("case-{index}"));
        let extra = if with_handler { vec![HANDLER] } else { vec![] };
        match oauth_broker(&data, jwks_url, &extra).await {
            Ok((broker, _, _)) => {
                broker.shutdown().await.unwrap();
                panic!("{jwks_url} {extra:?}: the broker started");
            }
            Err(error) => assert!(error.contains(expected), "{jwks_url}: {error}"),
        }
    }
}
