//! OAUTHBEARER's token check, as Kafka's `OAuthBearerValidatorCallbackHandler` (KIP-768) does
//! it, by its property names (each also as `listener.name.<listener>.oauthbearer.<property>`):
//!
//! - `sasl.oauthbearer.jwks.endpoint.url`: where the signing keys are, a JWKS document at an
//!   `https://` URL (or `http://` on a loopback address, for tests) or a `file:` path; refreshed
//!   every `sasl.oauthbearer.jwks.endpoint.refresh.ms`, and early (at most every
//!   [`MIN_EARLY_REFRESH`]) when a token names a key id the set lacks, as a rotating identity
//!   provider requires;
//! - the token must be a JWS signed by one of those keys (RS/PS/ES/EdDSA; unsecured `alg: none`
//!   tokens are refused), unexpired and not before its `nbf`, with `sasl.oauthbearer.clock.skew.seconds`
//!   of leeway; its `iss` must equal `sasl.oauthbearer.expected.issuer` and its `aud` name one of
//!   `sasl.oauthbearer.expected.audience` when those are set;
//! - it must carry `exp` and `iat` (Kafka's validator requires both);
//! - the principal is `User:<the sasl.oauthbearer.sub.claim.name claim>` (`sub` by default,
//!   trimmed), and the token's expiry bounds the session (KIP-368) when
//!   `connections.max.reauth.ms` is set;
//! - its scopes are the `sasl.oauthbearer.scope.claim.name` claim (`scope` by default): a string
//!   is one scope, an array one per element, each non-blank and none twice, else the token is
//!   refused, as Kafka's validator does. Like Kafka, Weir authorizes by ACLs, not by scopes.
//!
//! The listener enables this with Kafka's own
//! `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler`;
//! without it Kafka would accept unsigned tokens (its development-only default), which Weir
//! refuses to start with.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use base64::Engine;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use tokio::sync::{watch, Notify};

use crate::config::{BrokerConfig, ConfigError};

/// Kafka's validating callback handler: the one OAUTHBEARER validation Weir serves.
pub const VALIDATOR_CALLBACK_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";
/// An unknown key id refreshes the key set early, but not more often than this.
pub const MIN_EARLY_REFRESH: Duration = Duration::from_secs(10);
/// Bound on a JWKS document (a few keys are a few KB).
const MAX_JWKS_BYTES: usize = 1 << 20;
/// Bound on fetching it.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the signing keys come from.
#[derive(Debug, Clone)]
enum KeySource {
    File(PathBuf),
    Url(reqwest::Url),
}

/// A token that passed: who it names and until when it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidToken {
    pub principal_name: String,
    /// The `exp` claim, in milliseconds since the epoch.
    pub expires_at_ms: i64,
    /// The scope claim's values, trimmed.
    pub scopes: BTreeSet<String>,
}

/// One listener's OAUTHBEARER validator.
pub struct TokenValidator {
    listener: String,
    source: KeySource,
    audience: Vec<String>,
    issuer: Option<String>,
    sub_claim: String,
    scope_claim: String,
    clock_skew_seconds: u64,
    refresh_interval: Duration,
    keys: RwLock<Arc<JwkSet>>,
    last_early_refresh: Mutex<Option<Instant>>,
    early_refresh: Notify,
    http: reqwest::Client,
}

impl std::fmt::Debug for TokenValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenValidator")
            .field("listener", &self.listener)
            .field("source", &self.source)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

fn invalid(name: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        name: name.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

impl TokenValidator {
    /// The validator of `listener` from its properties; its keys are loaded by [`Self::load`].
    pub fn from_config(config: &BrokerConfig, listener: &str) -> Result<Self, ConfigError> {
        let prefix = format!(
            "listener.name.{}.oauthbearer.",
            listener.to_ascii_lowercase()
        );
        let get = |name: &str| {
            config
                .explicit(&format!("{prefix}{name}"))
                .or_else(|| config.lookup(name).map(|(value, _)| value))
                .map(str::to_string)
        };
        let handler_name = format!("{prefix}sasl.server.callback.handler.class");
        match config.explicit(&handler_name) {
            Some(VALIDATOR_CALLBACK_HANDLER) => {}
            other => {
                return Err(invalid(
                    &handler_name,
                    other.unwrap_or(""),
                    format!(
                        "OAUTHBEARER on listener {listener} needs Kafka's validating handler, \
                         {VALIDATOR_CALLBACK_HANDLER}, with sasl.oauthbearer.jwks.endpoint.url \
                         (Kafka's default accepts unsigned tokens; Weir does not)"
                    ),
                ))
            }
        }
        let url_name = "sasl.oauthbearer.jwks.endpoint.url";
        let url = get(url_name).ok_or_else(|| {
            invalid(
                url_name,
                "",
                format!("OAUTHBEARER on listener {listener} needs it"),
            )
        })?;
        let source = key_source(&url).map_err(|reason| invalid(url_name, &url, reason))?;
        let number = |name: &str| {
            get(name)
                .unwrap_or_default()
                .trim()
                .parse::<u64>()
                .map_err(|_| invalid(name, &get(name).unwrap_or_default(), "not a number"))
        };
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| invalid(url_name, &url, e.to_string()))?;
        Ok(TokenValidator {
            listener: listener.to_string(),
            source,
            audience: get("sasl.oauthbearer.expected.audience")
                .unwrap_or_default()
                .split(',')
                .map(|entry| entry.trim().to_string())
                .filter(|entry| !entry.is_empty())
                .collect(),
            issuer: get("sasl.oauthbearer.expected.issuer").filter(|issuer| !issuer.is_empty()),
            sub_claim: claim_name(&get, "sasl.oauthbearer.sub.claim.name", "sub")?,
            scope_claim: claim_name(&get, "sasl.oauthbearer.scope.claim.name", "scope")?,
            clock_skew_seconds: number("sasl.oauthbearer.clock.skew.seconds")?,
            refresh_interval: Duration::from_millis(
                number("sasl.oauthbearer.jwks.endpoint.refresh.ms")?.max(1),
            ),
            keys: RwLock::new(Arc::new(JwkSet { keys: Vec::new() })),
            last_early_refresh: Mutex::new(None),
            early_refresh: Notify::new(),
            http,
        })
    }

    /// Fetches the key set now; at start-up a failure stops the broker with the reason.
    pub async fn load(&self) -> Result<usize, String> {
        let text = match &self.source {
            KeySource::File(path) => tokio::fs::read(path)
                .await
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?,
            KeySource::Url(url) => self.fetch(url).await?,
        };
        if text.len() > MAX_JWKS_BYTES {
            return Err(format!(
                "the JWKS is {} bytes, over {MAX_JWKS_BYTES}",
                text.len()
            ));
        }
        let set: JwkSet =
            serde_json::from_slice(&text).map_err(|e| format!("not a JWKS document: {e}"))?;
        if set.keys.is_empty() {
            return Err("the JWKS has no key".into());
        }
        let count = set.keys.len();
        *self.keys.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(set);
        Ok(count)
    }

    async fn fetch(&self, url: &reqwest::Url) -> Result<Vec<u8>, String> {
        let response = self
            .http
            .get(url.clone())
            .send()
            .await
            .map_err(|e| format!("cannot fetch {url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        if response
            .content_length()
            .is_some_and(|length| length > MAX_JWKS_BYTES as u64)
        {
            return Err(format!("{url}'s JWKS is over {MAX_JWKS_BYTES} bytes"));
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("cannot read {url}: {e}"))?;
        Ok(body.to_vec())
    }

    /// Keeps the key set fresh until shutdown: every refresh interval, and early when a token
    /// named an unknown key. A failed refresh keeps the keys held and is logged.
    pub async fn refresh(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.refresh_interval) => {}
                _ = self.early_refresh.notified() => {}
                _ = crate::shutdown::stopped(&mut shutdown) => return,
            }
            match self.load().await {
                Ok(keys) => tracing::debug!(listener = %self.listener, keys, "JWKS refreshed"),
                Err(error) => {
                    tracing::warn!(listener = %self.listener, %error, "JWKS refresh failed; the keys held stay")
                }
            }
        }
    }

    /// Checks `token` against the keys held and the claims' rules, at the system's time.
    pub fn validate(&self, token: &str) -> Result<ValidToken, String> {
        if is_unsecured(token) {
            return Err(
                "unsecured tokens (alg none) are refused: sign them with a JWKS key".into(),
            );
        }
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| format!("the token does not parse: {e}"))?;
        if matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        ) {
            return Err(format!(
                "{:?} is a shared-secret algorithm; tokens are checked against public keys only",
                header.alg
            ));
        }
        let keys = Arc::clone(&self.keys.read().unwrap_or_else(|p| p.into_inner()));
        let key = match &header.kid {
            Some(kid) => keys.find(kid),
            None if keys.keys.len() == 1 => keys.keys.first(),
            None => None,
        };
        let Some(key) = key else {
            self.refresh_early();
            return Err(format!(
                "no key of the JWKS has the token's key id {:?}",
                header.kid
            ));
        };
        if key
            .common
            .key_algorithm
            .is_some_and(|published| format!("{published:?}") != format!("{:?}", header.alg))
        {
            return Err(format!(
                "the token's {:?} is not the algorithm its key is published for",
                header.alg
            ));
        }
        let decoding = DecodingKey::from_jwk(key).map_err(|e| format!("unusable JWK: {e}"))?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = self.clock_skew_seconds;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp"]);
        match self.audience.is_empty() {
            true => validation.validate_aud = false,
            false => validation.set_audience(&self.audience),
        }
        if let Some(issuer) = &self.issuer {
            validation.set_issuer(&[issuer]);
        }
        let claims = jsonwebtoken::decode::<serde_json::Value>(token, &decoding, &validation)
            .map_err(|e| format!("the token is not valid: {e}"))?
            .claims;
        let principal_name = claims
            .get(&self.sub_claim)
            .and_then(|value| value.as_str())
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .ok_or_else(|| format!("the token has no {:?} claim", self.sub_claim))?;
        let expires_at_seconds = claims
            .get("exp")
            .and_then(|exp| exp.as_f64())
            .ok_or("the token's exp is not a number")?;
        match claims.get("iat").and_then(|iat| iat.as_f64()) {
            Some(issued_at) if issued_at >= 0.0 => {}
            Some(_) => return Err("the token's iat is negative".into()),
            None => return Err("the token has no iat (issued at) claim".into()),
        }
        Ok(ValidToken {
            principal_name: principal_name.to_string(),
            expires_at_ms: (expires_at_seconds * 1000.0) as i64,
            scopes: scopes(&claims, &self.scope_claim)?,
        })
    }

    fn refresh_early(&self) {
        let mut last = self
            .last_early_refresh
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if last.is_none_or(|at| at.elapsed() >= MIN_EARLY_REFRESH) {
            *last = Some(Instant::now());
            self.early_refresh.notify_one();
        }
    }
}

/// A claim name property (`sasl.oauthbearer.sub.claim.name`, `….scope.claim.name`), trimmed;
/// blank is refused, as Kafka does.
fn claim_name(
    get: &dyn Fn(&str) -> Option<String>,
    property: &str,
    default: &str,
) -> Result<String, ConfigError> {
    match get(property) {
        None => Ok(default.to_string()),
        Some(name) if name.trim().is_empty() => {
            Err(invalid(property, &name, "a claim name must not be blank"))
        }
        Some(name) => Ok(name.trim().to_string()),
    }
}

/// The scopes in `claim`, as Kafka's validator reads them: a string is one scope, an array one
/// per element; each trimmed, none blank or twice. Any other value, or none, is no scope.
fn scopes(claims: &serde_json::Value, claim: &str) -> Result<BTreeSet<String>, String> {
    let values: Vec<&serde_json::Value> = match claims.get(claim) {
        Some(serde_json::Value::String(_)) => vec![&claims[claim]],
        Some(serde_json::Value::Array(elements)) => elements.iter().collect(),
        _ => Vec::new(),
    };
    let mut scopes = BTreeSet::new();
    for value in values {
        let scope = value
            .as_str()
            .map(str::trim)
            .filter(|scope| !scope.is_empty())
            .ok_or_else(|| {
                format!("the token's {claim} claim holds a blank or non-string scope")
            })?;
        if !scopes.insert(scope.to_string()) {
            return Err(format!("the token's {claim} claim names {scope} twice"));
        }
    }
    Ok(scopes)
}

/// Whether the token's header says `alg: none`.
fn is_unsecured(token: &str) -> bool {
    let header = token.split('.').next().unwrap_or("");
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header.trim_end_matches('='))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .is_some_and(|header| {
            header
                .get("alg")
                .and_then(|alg| alg.as_str())
                .is_some_and(|alg| alg.eq_ignore_ascii_case("none"))
        })
}

/// `https://…`, `http://` to a loopback host, or `file:…`.
fn key_source(url: &str) -> Result<KeySource, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    match parsed.scheme() {
        "file" => parsed
            .to_file_path()
            .map(KeySource::File)
            .map_err(|_| "a file: URL needs an absolute path".to_string()),
        "https" => Ok(KeySource::Url(parsed)),
        "http" if is_loopback(&parsed) => Ok(KeySource::Url(parsed)),
        "http" => Err("keys over plain http can be forged in transit: use https".into()),
        other => Err(format!("{other}: is not https or file")),
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or("");
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn scopes_are_read_as_kafkas_validator_reads_them() {
        let read = |claims: serde_json::Value| scopes(&claims, "scp");
        let set = |names: &[&str]| names.iter().map(|name| name.to_string()).collect();
        assert_eq!(read(json!({"scp": " read "})), Ok(set(&["read"])));
        assert_eq!(
            read(json!({"scp": ["read", "write"]})),
            Ok(set(&["read", "write"]))
        );
        assert_eq!(read(json!({"scope": "other claim"})), Ok(set(&[])));
        assert_eq!(read(json!({"scp": 7})), Ok(set(&[])));
        for bad in [
            json!({"scp": "  "}),
            json!({"scp": ["read", ""]}),
            json!({"scp": ["read", 7]}),
            json!({"scp": ["read", " read"]}),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn a_blank_claim_name_is_refused() {
        let get = |value: &'static str| move |_: &str| Some(value.to_string());
        assert_eq!(
            claim_name(&get(" scp "), "sasl.oauthbearer.scope.claim.name", "scope").unwrap(),
            "scp"
        );
        assert!(claim_name(&get(" "), "sasl.oauthbearer.scope.claim.name", "scope").is_err());
        assert_eq!(
            claim_name(&|_: &str| None, "sasl.oauthbearer.sub.claim.name", "sub").unwrap(),
            "sub"
        );
    }
}
