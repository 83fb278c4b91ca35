//! The server side of the SASL mechanisms Kafka's clients speak: PLAIN (RFC 4616) against the
//! `user_<name>` entries of the listener's JAAS config, SCRAM-SHA-256/512 (RFC 5802) against
//! the stored credentials, and OAUTHBEARER (RFC 7628) against the listener's JWKS. An [`Exchange`] takes the client's tokens one at a time and ends in
//! an authenticated user or a [`SaslError`]; the connection (`server::authentication`) carries
//! the tokens in SaslAuthenticate requests or, after a v0 handshake, as raw frames.

pub mod oauthbearer;
pub mod plain;
pub mod scram;

use std::collections::BTreeMap;

use super::oauth::ValidToken;
use super::scram::{ScramCredential, ScramMechanism};

pub use weir_wire::Mechanism;

/// Where an exchange finds what the client must prove.
pub trait Credentials {
    /// The stored SCRAM credential of `user` for `mechanism`.
    fn scram(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential>;
    /// The PLAIN password of `user` (the JAAS config's `user_<name>`).
    fn plain_password(&self, user: &str) -> Option<String>;
    /// An OAUTHBEARER token checked by the listener's validator, or why it fails.
    fn bearer_token(&self, _token: &str) -> Result<ValidToken, String> {
        Err("OAUTHBEARER is not enabled on this listener".into())
    }
}

/// PLAIN users of one listener, from its JAAS config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlainUsers(pub BTreeMap<String, String>);

/// Why an exchange failed. Kafka tells the client only what cannot help a guesser: a
/// [`SaslError::Visible`] message goes to the client as it is, a [`SaslError::Hidden`] one only
/// to the log (the client reads that its credentials are invalid).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    #[error("{0}")]
    Visible(String),
    #[error("{0}")]
    Hidden(String),
    /// The client is told `told` (OAUTHBEARER's JSON error, as Kafka sends it); the log reads
    /// `reason`.
    #[error("{reason}")]
    Explained { told: String, reason: String },
}

impl SaslError {
    /// What the client is told (SaslAuthenticate's error message).
    pub fn client_message(&self, mechanism: Mechanism, reauthenticating: bool) -> String {
        match self {
            SaslError::Visible(message) => message.clone(),
            SaslError::Explained { told, .. } => told.clone(),
            SaslError::Hidden(_) => format!(
                "Authentication failed during {} due to invalid credentials with SASL mechanism {mechanism}",
                if reauthenticating {
                    "re-authentication"
                } else {
                    "authentication"
                }
            ),
        }
    }
}

/// One step of an exchange.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Send this challenge and wait for the client's next token.
    Challenge(Vec<u8>),
    /// Authenticated as `user`; send `response` (possibly empty) as the last token. A
    /// credential that expires (an OAUTHBEARER token) gives its expiry, which bounds the session.
    Done {
        user: String,
        response: Vec<u8>,
        expires_at_ms: Option<i64>,
    },
}

/// One client's authentication with one mechanism.
pub enum Exchange {
    /// PLAIN takes one token; `finished` once it has.
    Plain {
        finished: bool,
    },
    Scram(scram::ScramExchange),
    OAuthBearer(oauthbearer::OAuthBearerExchange),
}

impl Exchange {
    pub fn new(mechanism: Mechanism) -> Exchange {
        match mechanism {
            Mechanism::Plain => Exchange::Plain { finished: false },
            Mechanism::Scram(scram) => Exchange::Scram(scram::ScramExchange::new(scram)),
            Mechanism::OAuthBearer => Exchange::OAuthBearer(Default::default()),
        }
    }

    /// Takes the client's next token. After an error or `Done` the exchange is over: a further
    /// token is an error.
    pub fn step(&mut self, token: &[u8], credentials: &dyn Credentials) -> Result<Step, SaslError> {
        match self {
            Exchange::Plain { finished: true } => Err(SaslError::Hidden(
                "a token after the PLAIN exchange ended".into(),
            )),
            Exchange::Plain { finished } => {
                *finished = true;
                plain::authenticate(token, credentials)
            }
            Exchange::Scram(exchange) => exchange.step(token, credentials),
            Exchange::OAuthBearer(exchange) => exchange.step(token, credentials),
        }
    }
}
