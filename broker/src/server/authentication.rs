//! One connection's authentication on a SASL listener, as Kafka's `SaslServerAuthenticator`
//! runs it: ApiVersions and SaslHandshake first; then the mechanism's tokens, in
//! SaslAuthenticate requests (handshake v1) or as raw size-prefixed frames (handshake v0);
//! then, authenticated, every other request as the principal the exchange named.
//!
//! - Anything else before authentication closes the connection; so does a failed exchange,
//!   after its SASL_AUTHENTICATION_FAILED answer (held back by
//!   `connection.failed.authentication.delay.ms`, as Kafka holds it, to slow a guesser).
//! - Frames before authentication are bounded by `sasl.server.max.receive.size`.
//! - KIP-368: SaslAuthenticate tells the client its session lifetime — `connections.max.reauth.ms`
//!   when set, and never past an OAUTHBEARER token's expiry (also without the bound, as Kafka);
//!   after it ends, a request other than a new SaslHandshake closes the connection. A re-authentication keeps the mechanism and must name the same principal.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::handler::{sasl_authenticate, sasl_handshake};
use crate::security::listener::SaslListener;
use crate::security::oauth::ValidToken;
use crate::security::sasl::{Credentials, Exchange, Mechanism, Step};
use crate::security::scram::{ScramCredential, ScramMechanism};
use crate::security::KafkaPrincipal;

/// What the connection does with a request.
pub(super) enum Verdict {
    /// Authenticated: hand it to the handlers as [`Authenticator::principal`].
    Serve,
    /// Part of the authentication: send this answer.
    Answer(ResponseKind),
    /// The authentication failed: send this answer after `delay`, then close.
    AnswerAndClose {
        response: ResponseKind,
        delay: Duration,
        reason: String,
    },
    /// Close without an answer.
    Close(String),
}

/// A raw token's outcome (after a v0 handshake).
pub(super) enum RawVerdict {
    /// Send these bytes, size-prefixed.
    Answer(Vec<u8>),
    Close(String),
}

pub(super) struct Authenticator {
    listener: Arc<str>,
    sasl: Option<Arc<SaslListener>>,
    principal: KafkaPrincipal,
    state: State,
}

enum State {
    /// Every request is served (not a SASL listener, or authenticated until `expires`).
    Authenticated {
        mechanism: Option<Mechanism>,
        expires: Option<Instant>,
        /// The client used SaslAuthenticate v1+ (KIP-368): it may re-authenticate.
        reauthenticates: bool,
    },
    /// Waiting for ApiVersions or SaslHandshake.
    Handshake,
    /// The mechanism's tokens, `framed` in SaslAuthenticate requests or raw.
    Exchanging {
        mechanism: Mechanism,
        exchange: Box<Exchange>,
        framed: bool,
        /// Re-authenticating: the principal the new login must name.
        previous: Option<KafkaPrincipal>,
        reauthenticates: bool,
    },
}

impl Authenticator {
    /// A connection on a listener: SASL (exchange first) or not (`principal` from the transport).
    pub(super) fn new(
        listener: Arc<str>,
        sasl: Option<Arc<SaslListener>>,
        principal: KafkaPrincipal,
    ) -> Self {
        let state = match sasl {
            Some(_) => State::Handshake,
            None => State::Authenticated {
                mechanism: None,
                expires: None,
                reauthenticates: false,
            },
        };
        Authenticator {
            listener,
            sasl,
            principal,
            state,
        }
    }

    pub(super) fn principal(&self) -> &KafkaPrincipal {
        &self.principal
    }

    /// Whether requests other than the authentication's own are served now.
    pub(super) fn authenticated(&self) -> bool {
        matches!(self.state, State::Authenticated { .. })
    }

    /// The largest frame to read now: `sasl.server.max.receive.size` until authenticated.
    pub(super) fn max_frame(&self, max_request: usize) -> usize {
        match (&self.state, &self.sasl) {
            (State::Authenticated { .. }, _) | (_, None) => max_request,
            (_, Some(sasl)) => sasl.max_receive_bytes.min(max_request),
        }
    }

    /// The next frame is a raw SASL token (v0 handshake), not a Kafka request.
    pub(super) fn expects_raw_token(&self) -> bool {
        matches!(self.state, State::Exchanging { framed: false, .. })
    }

    /// What to do with a decoded request.
    pub(super) fn admit(
        &mut self,
        context: &BrokerContext,
        api_key: ApiKey,
        version: i16,
        request: &RequestKind,
    ) -> Verdict {
        let Some(sasl) = self.sasl.clone() else {
            return Verdict::Serve;
        };
        match &self.state {
            State::Authenticated {
                expires,
                reauthenticates,
                ..
            } => {
                let reauthenticates = *reauthenticates;
                let expired = expires.is_some_and(|at| Instant::now() >= at);
                match request {
                    RequestKind::SaslHandshake(handshake) if reauthenticates && version >= 1 => {
                        let previous = Some(self.principal.clone());
                        self.handshake(&sasl, handshake.mechanism.as_str(), version, previous)
                    }
                    _ if expired => Verdict::Close(format!(
                        "{api_key:?} after the SASL session of {} expired",
                        self.principal
                    )),
                    _ => Verdict::Serve,
                }
            }
            State::Handshake => match request {
                RequestKind::ApiVersions(_) => Verdict::Serve,
                RequestKind::SaslHandshake(handshake) => {
                    self.handshake(&sasl, handshake.mechanism.as_str(), version, None)
                }
                _ => Verdict::Close(format!(
                    "{api_key:?} before SASL authentication (only ApiVersions and SaslHandshake are taken)"
                )),
            },
            State::Exchanging { framed: true, .. } => match request {
                RequestKind::SaslAuthenticate(authenticate) => {
                    let token = authenticate.auth_bytes.to_vec();
                    self.exchange_token(context, &sasl, &token, version)
                }
                _ => Verdict::Close(format!("{api_key:?} during SASL authentication")),
            },
            State::Exchanging { framed: false, .. } => {
                Verdict::Close("a Kafka request where a raw SASL token was expected".into())
            }
        }
    }

    fn handshake(
        &mut self,
        sasl: &SaslListener,
        requested: &str,
        version: i16,
        previous: Option<KafkaPrincipal>,
    ) -> Verdict {
        let names = sasl.mechanism_names();
        let mechanism = Mechanism::from_name(requested).filter(|m| sasl.mechanisms.contains(m));
        let same_as_before = match (&self.state, previous.is_some()) {
            (
                State::Authenticated {
                    mechanism: before, ..
                },
                true,
            ) => *before == mechanism,
            _ => true,
        };
        let Some(mechanism) = mechanism.filter(|_| same_as_before) else {
            let response =
                sasl_handshake::response(Some(ResponseError::UnsupportedSaslMechanism), &names);
            return Verdict::AnswerAndClose {
                response: ResponseKind::SaslHandshake(response),
                delay: Duration::ZERO,
                reason: format!("SASL mechanism {requested:?} is not enabled on this listener (or not the one authenticated with)"),
            };
        };
        let reauthenticates = match &self.state {
            State::Authenticated {
                reauthenticates, ..
            } => *reauthenticates,
            _ => false,
        };
        self.state = State::Exchanging {
            mechanism,
            exchange: Box::new(Exchange::new(mechanism)),
            framed: version >= 1,
            previous,
            reauthenticates,
        };
        Verdict::Answer(ResponseKind::SaslHandshake(sasl_handshake::response(
            None, &names,
        )))
    }

    fn exchange_token(
        &mut self,
        context: &BrokerContext,
        sasl: &SaslListener,
        token: &[u8],
        version: i16,
    ) -> Verdict {
        match self.step(context, sasl, token, version >= 1) {
            Ok((response, lifetime_ms)) => Verdict::Answer(ResponseKind::SaslAuthenticate(
                sasl_authenticate::response(Ok((response, lifetime_ms))),
            )),
            Err(failure) => Verdict::AnswerAndClose {
                response: ResponseKind::SaslAuthenticate(sasl_authenticate::response(Err((
                    ResponseError::SaslAuthenticationFailed,
                    failure.client_message.clone(),
                )))),
                delay: failure_delay(context),
                reason: failure.reason,
            },
        }
    }

    /// A raw token after a v0 handshake.
    pub(super) fn raw_token(&mut self, context: &BrokerContext, token: &[u8]) -> RawVerdict {
        let Some(sasl) = self.sasl.clone() else {
            return RawVerdict::Close("a raw SASL token on a listener without SASL".into());
        };
        match self.step(context, &sasl, token, false) {
            Ok((response, _)) => RawVerdict::Answer(response),
            Err(failure) => RawVerdict::Close(failure.reason),
        }
    }

    /// Takes one token; on the last, authenticated. The answer's token and session lifetime.
    fn step(
        &mut self,
        context: &BrokerContext,
        sasl: &SaslListener,
        token: &[u8],
        kip_368: bool,
    ) -> Result<(Vec<u8>, i64), Failure> {
        let State::Exchanging {
            mechanism,
            exchange,
            previous,
            reauthenticates,
            ..
        } = &mut self.state
        else {
            return Err(Failure::plain("a SASL token outside an exchange"));
        };
        let mechanism = *mechanism;
        let reauthenticating = previous.is_some();
        let credentials = BrokerCredentials { context, sasl };
        let counted = |result: &str| {
            context
                .metrics
                .authentications_total
                .with_label_values(&[&self.listener, mechanism.name(), result])
                .inc();
        };
        let step = match exchange.step(token, &credentials) {
            Ok(step) => step,
            Err(error) => {
                counted("failure");
                return Err(Failure {
                    client_message: error.client_message(mechanism, reauthenticating),
                    reason: format!("SASL/{mechanism} authentication failed: {error}"),
                });
            }
        };
        let (user, response, expires_at_ms) = match step {
            Step::Challenge(challenge) => return Ok((challenge, 0)),
            Step::Done {
                user,
                response,
                expires_at_ms,
            } => (user, response, expires_at_ms),
        };
        let principal = KafkaPrincipal::user(user);
        if let Some(previous) = previous.as_ref().filter(|p| **p != principal) {
            counted("failure");
            let message = format!(
                "Cannot change principals during re-authentication from {previous}: {principal}"
            );
            return Err(Failure {
                client_message: message.clone(),
                reason: message,
            });
        }
        counted("success");
        let reauthenticates = *reauthenticates || kip_368;
        let lifetime = session_lifetime_ms(
            sasl.max_reauth_ms(mechanism),
            expires_at_ms,
            context.clock.now_ms(),
        );
        let expires = lifetime.map(|ms| Instant::now() + Duration::from_millis(ms as u64));
        // What the client is told: 0 when the session never ends (or has just ended).
        let lifetime_ms = lifetime.unwrap_or(0);
        tracing::debug!(%principal, %mechanism, reauthenticating, lifetime_ms, "SASL authentication succeeded");
        self.principal = principal;
        self.state = State::Authenticated {
            mechanism: Some(mechanism),
            expires,
            reauthenticates,
        };
        Ok((response, lifetime_ms))
    }
}

/// KIP-368 as Kafka's `SaslServerAuthenticator` computes it: a session lasts
/// `connections.max.reauth.ms` when that is set, and never past the credential it was proved
/// with (an OAUTHBEARER token's expiry) — with or without the bound. `None`: for ever.
fn session_lifetime_ms(max_reauth_ms: i64, expires_at_ms: Option<i64>, now_ms: i64) -> Option<i64> {
    let bound = (max_reauth_ms > 0).then_some(max_reauth_ms);
    let credential_left = expires_at_ms.map(|at| (at - now_ms).max(0));
    bound.into_iter().chain(credential_left).min()
}

struct Failure {
    /// What the client is told.
    client_message: String,
    /// What the log says.
    reason: String,
}

impl Failure {
    fn plain(reason: &str) -> Failure {
        Failure {
            client_message: reason.to_string(),
            reason: reason.to_string(),
        }
    }
}

fn failure_delay(context: &BrokerContext) -> Duration {
    let ms = context
        .config()
        .long_or("connection.failed.authentication.delay.ms", 100);
    Duration::from_millis(ms.max(0) as u64)
}

/// What an exchange checks against: the broker's SCRAM users, the listener's PLAIN users.
struct BrokerCredentials<'a> {
    context: &'a BrokerContext,
    sasl: &'a SaslListener,
}

impl Credentials for BrokerCredentials<'_> {
    fn scram(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.context.scram_credential(user, mechanism)
    }

    fn plain_password(&self, user: &str) -> Option<String> {
        self.sasl.plain_users.get(user).cloned()
    }

    fn bearer_token(&self, token: &str) -> Result<ValidToken, String> {
        match &self.sasl.oauth {
            Some(validator) => validator.validate(token),
            None => Err("OAUTHBEARER is not enabled on this listener".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::session_lifetime_ms;

    #[test]
    fn a_session_lasts_the_reauthentication_bound_and_no_longer_than_its_credential() {
        assert_eq!(session_lifetime_ms(0, None, 0), None, "no bound: for ever");
        assert_eq!(
            session_lifetime_ms(0, Some(10_000), 2_000),
            Some(8_000),
            "a token's expiry ends the session without a bound too (as Kafka)"
        );
        assert_eq!(session_lifetime_ms(5_000, None, 0), Some(5_000));
        assert_eq!(
            session_lifetime_ms(60_000, Some(12_000), 2_000),
            Some(10_000)
        );
        assert_eq!(session_lifetime_ms(5_000, Some(12_000), 2_000), Some(5_000));
        assert_eq!(
            session_lifetime_ms(5_000, Some(1_000), 2_000),
            Some(0),
            "already expired (within the clock skew): ends now"
        );
    }
}
