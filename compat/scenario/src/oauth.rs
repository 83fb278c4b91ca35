//! The OAUTHBEARER part of the security differential (`compat/security/run.sh`): both brokers'
//! SASL_SSL listener validates JWTs as Kafka's `OAuthBearerValidatorCallbackHandler` does
//! (KIP-768), against the same JWKS file with the same issuer and audience.
//!
//! `weir-compat-scenario oauth-keys DIR` writes the keys first: `jwks.json` publishing key
//! `trusted`, its private key `trusted.der`, and `foreign.der` (a key no JWKS names). Then the
//! section logs in over the raw SASL exchange (RFC 7628) with a valid token of a super user
//! (who may create a topic), of alice (authenticated, not authorized), and with tokens that must
//! be refused: expired, another issuer, another audience, no subject, signed by a foreign key,
//! claiming the trusted key id with a foreign signature, unsigned (`alg: none`), not a JWT. Each
//! step records what the broker answered: the handshake, the challenge, the final error and
//! message.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use bytes::Bytes;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use kafka_protocol::messages::*;
use serde_json::{json, Value};
use weir_wire::ProtocolClient;

use crate::security::SecureListener;
use crate::{text, Scenario};

pub(crate) const ISSUER: &str = "https://issuer.compat.example";
pub(crate) const AUDIENCE: &str = "compat-brokers";
const TRUSTED_KID: &str = "trusted";
/// How long the valid tokens last.
const TOKEN_LIFETIME_S: i64 = 600;

fn base64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Writes `jwks.json`, `trusted.der` and `foreign.der` into `dir`.
pub(crate) fn write_keys(dir: &Path) -> anyhow::Result<()> {
    let trusted = rcgen::KeyPair::generate()?;
    let foreign = rcgen::KeyPair::generate()?;
    let point = trusted.public_key_raw();
    anyhow::ensure!(point.len() == 65, "not an uncompressed P-256 point");
    let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig",
        "kid": TRUSTED_KID, "x": base64url(&point[1..33]), "y": base64url(&point[33..65])}]});
    std::fs::write(dir.join("jwks.json"), jwks.to_string())?;
    std::fs::write(dir.join("trusted.der"), trusted.serialize_der())?;
    std::fs::write(dir.join("foreign.der"), foreign.serialize_der())?;
    Ok(())
}

/// The keys the section signs with.
pub(crate) struct SigningKeys {
    trusted: Vec<u8>,
    foreign: Vec<u8>,
}

impl SigningKeys {
    pub(crate) fn read(dir: &Path) -> anyhow::Result<SigningKeys> {
        Ok(SigningKeys {
            trusted: std::fs::read(dir.join("trusted.der"))?,
            foreign: std::fs::read(dir.join("foreign.der"))?,
        })
    }
}

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A token with the usual claims for `sub`, `changes` applied (a null removes a claim).
fn claims(sub: &str, changes: Value) -> Value {
    let now = now_s();
    let mut body = json!({"sub": sub, "iss": ISSUER, "aud": AUDIENCE, "iat": now,
                          "exp": now + TOKEN_LIFETIME_S});
    if let (Some(body), Some(changes)) = (body.as_object_mut(), changes.as_object()) {
        for (name, value) in changes {
            match value {
                Value::Null => body.remove(name),
                value => body.insert(name.clone(), value.clone()),
            };
        }
    }
    body
}

fn signed(key: &[u8], kid: &str, body: &Value) -> anyhow::Result<String> {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_string());
    Ok(jsonwebtoken::encode(
        &header,
        body,
        &EncodingKey::from_ec_der(key),
    )?)
}

fn unsigned(body: &Value) -> String {
    let header = json!({"alg": "none", "typ": "JWT", "kid": TRUSTED_KID});
    format!(
        "{}.{}.",
        base64url(header.to_string().as_bytes()),
        base64url(body.to_string().as_bytes())
    )
}

/// Parses a challenge as JSON when it is, else keeps its text.
fn challenge(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|_| json!(String::from_utf8_lossy(bytes)))
}

impl Scenario {
    pub(crate) async fn oauth_section(
        &mut self,
        secure: &SecureListener,
        keys: &SigningKeys,
    ) -> anyhow::Result<()> {
        let trusted = |body: &Value| signed(&keys.trusted, TRUSTED_KID, body);
        let (step, admin) = oauth_login(secure, &trusted(&claims("admin", json!({})))?).await?;
        self.note("oauth/valid_super_user/login", step);
        if let Some(admin) = admin {
            let created = self.as_client(admin, "oauth-admin-topic").await?;
            self.note("oauth/valid_super_user/create_topic", created);
        }
        let (step, alice) = oauth_login(secure, &trusted(&claims("alice", json!({})))?).await?;
        self.note("oauth/valid_unauthorized/login", step);
        if let Some(alice) = alice {
            let created = self.as_client(alice, "oauth-alice-topic").await?;
            self.note("oauth/valid_unauthorized/create_topic", created);
        }
        let scoped = claims("alice", json!({"scope": ["read", "write"]}));
        let (step, _) = oauth_login(secure, &trusted(&scoped)?).await?;
        self.note("oauth/valid_with_scopes/login", step);
        let now = now_s();
        let refused = [
            (
                "expired",
                trusted(&claims(
                    "alice",
                    json!({"iat": now - 7200, "exp": now - 3600}),
                ))?,
            ),
            (
                "other_issuer",
                trusted(&claims(
                    "alice",
                    json!({"iss": "https://elsewhere.example"}),
                ))?,
            ),
            (
                "other_audience",
                trusted(&claims("alice", json!({"aud": "someone-else"})))?,
            ),
            (
                "no_subject",
                trusted(&claims("alice", json!({"sub": null})))?,
            ),
            (
                "no_expiry",
                trusted(&claims("alice", json!({"exp": null})))?,
            ),
            (
                "unknown_key",
                signed(&keys.foreign, "foreign", &claims("alice", json!({})))?,
            ),
            (
                "foreign_signature",
                signed(&keys.foreign, TRUSTED_KID, &claims("alice", json!({})))?,
            ),
            (
                "no_issued_at",
                trusted(&claims("alice", json!({"iat": null})))?,
            ),
            (
                "blank_scope",
                trusted(&claims("alice", json!({"scope": ["read", " "]})))?,
            ),
            (
                "scope_twice",
                trusted(&claims("alice", json!({"scope": ["read", "read"]})))?,
            ),
            ("unsigned", unsigned(&claims("alice", json!({})))),
            ("not_a_jwt", "not-a-token".to_string()),
        ];
        for (label, token) in refused {
            let (step, client) = oauth_login(secure, &token).await?;
            self.note(&format!("oauth/{label}"), step);
            anyhow::ensure!(client.is_none(), "the {label} token logged in");
        }
        Ok(())
    }

    /// CreateTopics of `base` as `client` (the admin's connection restored after).
    async fn as_client(&mut self, client: ProtocolClient, base: &str) -> anyhow::Result<Value> {
        let mut client = client;
        std::mem::swap(&mut self.client, &mut client);
        let topic = self.topic(base);
        let created = self.create_topic(&topic, 1, 1, &[]).await;
        std::mem::swap(&mut self.client, &mut client);
        created
    }
}

/// The RFC 7628 exchange with `token`: what the broker answered, and the connection when the
/// login succeeded.
async fn oauth_login(
    secure: &SecureListener,
    token: &str,
) -> anyhow::Result<(Value, Option<ProtocolClient>)> {
    let mut client = secure.tls_only().await?;
    let handshake = SaslHandshakeRequest::default().with_mechanism(text("OAUTHBEARER"));
    let answer = client.call(1, &handshake).await?;
    if answer.error_code != 0 {
        return Ok((json!({"handshake": answer.error_code}), None));
    }
    let first = format!("n,,\x01auth=Bearer {token}\x01\x01");
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(first));
    let answer = client.call(2, &request).await?;
    if answer.error_code == 0 && answer.auth_bytes.is_empty() {
        // Valid tokens expire 600 s after they are made: the session ends with them (KIP-368).
        let lifetime = match answer.session_lifetime_ms {
            0 => json!("for ever"),
            ms if (540_000..=TOKEN_LIFETIME_S * 1000).contains(&ms) => json!("the token's"),
            ms => json!(ms),
        };
        let step = json!({"error": 0, "session_lifetime": lifetime});
        return Ok((step, Some(client)));
    }
    let mut step = json!({
        "first": {"error": answer.error_code, "message": answer.error_message.as_deref(),
                  "challenge": challenge(&answer.auth_bytes)},
    });
    if answer.error_code == 0 {
        // The client acknowledges the error challenge with a lone separator (RFC 7628 3.2.3).
        let request =
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_static(b"\x01"));
        let last = match client.call(2, &request).await {
            Ok(answer) => json!({"error": answer.error_code,
                                 "message": answer.error_message.as_deref()}),
            Err(error) => json!({"connection": error.to_string()}),
        };
        step["final"] = last;
    }
    Ok((step, None))
}
