//! SASL/OAUTHBEARER (RFC 7628) as Kafka's `OAuthBearerSaslServer` runs it: the client's first
//! message is a GS2 header (`n,,` or `n,a=<authzid>,`) and `\x01`-separated `key=value` pairs
//! ending in `\x01\x01`, one of them `auth=Bearer <token>` (others are SASL extensions, KIP-342,
//! which Kafka's validator ignores and so does Weir). A valid token authenticates its principal;
//! an invalid one is answered with the RFC's JSON error challenge (`{"status":"invalid_token"}`),
//! the client acknowledges it with a lone `\x01`, and the exchange fails with that JSON as the
//! error message, as Kafka's; the log says why.

use super::{Credentials, SaslError, Step};

/// The RFC 7628 error challenge Kafka sends for a token that fails validation.
const INVALID_TOKEN_CHALLENGE: &[u8] = br#"{"status":"invalid_token"}"#;
const SEPARATOR: char = '\u{1}';

/// Where an OAUTHBEARER exchange is.
#[derive(Debug, Default)]
pub enum OAuthBearerExchange {
    #[default]
    Start,
    /// The error challenge went out for this reason; the client's `\x01` ends the exchange.
    Refused(String),
    Over,
}

impl OAuthBearerExchange {
    pub fn step(&mut self, token: &[u8], credentials: &dyn Credentials) -> Result<Step, SaslError> {
        match std::mem::replace(self, OAuthBearerExchange::Over) {
            OAuthBearerExchange::Start => {}
            OAuthBearerExchange::Refused(reason) => {
                return Err(match token == [SEPARATOR as u8] {
                    true => SaslError::Explained {
                        told: String::from_utf8_lossy(INVALID_TOKEN_CHALLENGE).into_owned(),
                        reason,
                    },
                    false => SaslError::Visible(
                        "Received non-empty client response after the error challenge".into(),
                    ),
                })
            }
            OAuthBearerExchange::Over => {
                return Err(SaslError::Hidden(
                    "a token after the OAUTHBEARER exchange ended".into(),
                ))
            }
        }
        let first = ClientFirst::parse(token)?;
        match credentials.bearer_token(first.token) {
            Err(reason) => {
                *self = OAuthBearerExchange::Refused(reason);
                Ok(Step::Challenge(INVALID_TOKEN_CHALLENGE.to_vec()))
            }
            Ok(valid) => {
                if first
                    .authorization_id
                    .is_some_and(|id| id != valid.principal_name)
                {
                    return Err(SaslError::Visible(format!(
                        "Authentication failed: Client requested an authorization id ({}) that \
                         is different from the token's principal name ({})",
                        first.authorization_id.unwrap_or(""),
                        valid.principal_name
                    )));
                }
                Ok(Step::Done {
                    user: valid.principal_name,
                    response: Vec::new(),
                    expires_at_ms: Some(valid.expires_at_ms),
                })
            }
        }
    }
}

/// The client's first message.
#[derive(Debug, PartialEq, Eq)]
struct ClientFirst<'a> {
    authorization_id: Option<&'a str>,
    token: &'a str,
}

fn malformed(reason: &str) -> SaslError {
    SaslError::Visible(format!(
        "Invalid OAUTHBEARER client first message: {reason}"
    ))
}

impl<'a> ClientFirst<'a> {
    fn parse(message: &'a [u8]) -> Result<ClientFirst<'a>, SaslError> {
        let text = std::str::from_utf8(message).map_err(|_| malformed("not UTF-8"))?;
        let (header, rest) = text
            .split_once(SEPARATOR)
            .ok_or_else(|| malformed("no key/value pairs"))?;
        let authorization_id = match header.strip_prefix("n,") {
            Some(",") => None,
            Some(rest) => match rest.strip_prefix("a=").and_then(|r| r.strip_suffix(',')) {
                Some(id) if !id.is_empty() => Some(id),
                _ => return Err(malformed("bad GS2 header")),
            },
            None => {
                return Err(malformed(
                    "the GS2 header must start with n, (no channel binding)",
                ))
            }
        };
        let pairs = rest
            .strip_suffix("\u{1}\u{1}")
            .or_else(|| (rest == "\u{1}").then_some(""))
            .ok_or_else(|| malformed("the key/value pairs must end with two \\x01"))?;
        let mut token = None;
        for pair in pairs.split(SEPARATOR) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| malformed("a pair without '='"))?;
            if key == "auth" {
                let bearer = value
                    .strip_prefix("Bearer ")
                    .or_else(|| value.strip_prefix("bearer "))
                    .ok_or_else(|| malformed("auth is not a Bearer token"))?;
                token = Some(bearer.trim());
            }
        }
        let token = token
            .filter(|token| !token.is_empty())
            .ok_or_else(|| malformed("no auth=Bearer token"))?;
        Ok(ClientFirst {
            authorization_id,
            token,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::oauth::ValidToken;
    use crate::security::scram::{ScramCredential, ScramMechanism};

    /// Accepts the token "good" as alice until 1 000 000 ms.
    struct Issuer;

    impl Credentials for Issuer {
        fn scram(&self, _: &str, _: ScramMechanism) -> Option<ScramCredential> {
            None
        }
        fn plain_password(&self, _: &str) -> Option<String> {
            None
        }
        fn bearer_token(&self, token: &str) -> Result<ValidToken, String> {
            match token {
                "good" => Ok(ValidToken {
                    principal_name: "alice".into(),
                    expires_at_ms: 1_000_000,
                    scopes: Default::default(),
                }),
                _ => Err("bad signature".into()),
            }
        }
    }

    fn first(token: &[u8]) -> Result<Step, SaslError> {
        OAuthBearerExchange::default().step(token, &Issuer)
    }

    #[test]
    fn a_valid_token_authenticates_its_principal_until_it_expires() {
        let done = Step::Done {
            user: "alice".into(),
            response: Vec::new(),
            expires_at_ms: Some(1_000_000),
        };
        assert_eq!(first(b"n,,\x01auth=Bearer good\x01\x01"), Ok(done));
        let with_extension = first(b"n,a=alice,\x01auth=Bearer good\x01traceId=1\x01\x01");
        assert!(matches!(with_extension, Ok(Step::Done { .. })));
        let other_user = first(b"n,a=bob,\x01auth=Bearer good\x01\x01");
        assert!(matches!(other_user, Err(SaslError::Visible(m)) if m.contains("authorization id")));
    }

    #[test]
    fn an_invalid_token_gets_the_error_challenge_then_fails_with_the_hidden_reason() {
        let mut exchange = OAuthBearerExchange::default();
        let challenge = exchange.step(b"n,,\x01auth=Bearer forged\x01\x01", &Issuer);
        assert_eq!(
            challenge,
            Ok(Step::Challenge(INVALID_TOKEN_CHALLENGE.to_vec()))
        );
        let failure = exchange.step(b"\x01", &Issuer).unwrap_err();
        assert_eq!(failure.to_string(), "bad signature");
        let told = failure.client_message(crate::security::sasl::Mechanism::OAuthBearer, false);
        assert_eq!(told, r#"{"status":"invalid_token"}"#);
        assert!(
            exchange.step(b"\x01", &Issuer).is_err(),
            "the exchange is over"
        );
    }

    #[test]
    fn malformed_first_messages_are_refused_with_the_reason() {
        for message in [
            &b"auth=Bearer good"[..],
            b"y,,\x01auth=Bearer good\x01\x01",
            b"n,,\x01auth=Bearer good\x01",
            b"n,,\x01auth=Basic good\x01\x01",
            b"n,,\x01\x01",
            b"n,,\x01auth=Bearer \x01\x01",
            b"n,a=,\x01auth=Bearer good\x01\x01",
            &[b'n', b',', b',', 1, 0xff, 1, 1],
        ] {
            assert!(
                matches!(first(message), Err(SaslError::Visible(_))),
                "{message:?}"
            );
        }
    }
}
