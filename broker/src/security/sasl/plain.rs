//! SASL/PLAIN (RFC 4616): one token, `[authzid] NUL authcid NUL password`, checked against the
//! listener's `user_<name>` JAAS entries in constant time. Kafka's messages: the client learns
//! that the name or password is wrong, not which.

use subtle::ConstantTimeEq;

use super::{Credentials, SaslError, Step};

pub(super) fn authenticate(token: &[u8], credentials: &dyn Credentials) -> Result<Step, SaslError> {
    let text = std::str::from_utf8(token)
        .map_err(|_| SaslError::Visible("Invalid SASL/PLAIN response: not UTF-8".into()))?;
    let parts: Vec<&str> = text.split('\u{0}').collect();
    let [authorization_id, user, password] = parts[..] else {
        return Err(SaslError::Visible(format!(
            "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
            parts.len()
        )));
    };
    if user.is_empty() {
        return Err(SaslError::Visible(
            "Authentication failed: username not specified".into(),
        ));
    }
    if password.is_empty() {
        return Err(SaslError::Visible(
            "Authentication failed: password not specified".into(),
        ));
    }
    let expected = credentials.plain_password(user);
    // Compared even for an unknown user, so the time taken does not tell which it was.
    let expected_bytes = expected.as_deref().unwrap_or("").as_bytes();
    let matches: bool = expected_bytes.ct_eq(password.as_bytes()).into();
    if expected.is_none() || !matches {
        return Err(SaslError::Visible(
            "Authentication failed: Invalid username or password".into(),
        ));
    }
    if !authorization_id.is_empty() && authorization_id != user {
        return Err(SaslError::Visible(
            "Authentication failed: Client requested an authorization id that is different from username"
                .into(),
        ));
    }
    Ok(Step::Done {
        user: user.to_string(),
        response: Vec::new(),
        expires_at_ms: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::scram::{ScramCredential, ScramMechanism};

    struct Alice;

    impl Credentials for Alice {
        fn scram(&self, _: &str, _: ScramMechanism) -> Option<ScramCredential> {
            None
        }
        fn plain_password(&self, user: &str) -> Option<String> {
            (user == "alice").then(|| "alice-secret".to_string())
        }
    }

    fn outcome(token: &str) -> Result<Step, SaslError> {
        authenticate(token.as_bytes(), &Alice)
    }

    #[test]
    fn the_right_password_authenticates_the_user() {
        let done = Step::Done {
            user: "alice".into(),
            response: Vec::new(),
            expires_at_ms: None,
        };
        assert_eq!(outcome("\0alice\0alice-secret"), Ok(done));
        assert!(matches!(
            outcome("alice\0alice\0alice-secret"),
            Ok(Step::Done { .. })
        ));
    }

    #[test]
    fn wrong_unknown_or_malformed_tokens_fail_with_kafkas_messages() {
        let invalid = Err(SaslError::Visible(
            "Authentication failed: Invalid username or password".into(),
        ));
        assert_eq!(outcome("\0alice\0wrong"), invalid);
        assert_eq!(outcome("\0bob\0alice-secret"), invalid);
        assert_eq!(outcome("\0alice\0alice-secret2"), invalid);
        assert!(
            matches!(outcome("\0alice"), Err(SaslError::Visible(m)) if m.contains("expected 3 tokens, got 2"))
        );
        assert!(
            matches!(outcome("\0\0x"), Err(SaslError::Visible(m)) if m.contains("username not specified"))
        );
        assert!(
            matches!(outcome("\0alice\0"), Err(SaslError::Visible(m)) if m.contains("password not specified"))
        );
        assert!(
            matches!(outcome("bob\0alice\0alice-secret"), Err(SaslError::Visible(m)) if m.contains("authorization id"))
        );
        assert!(authenticate(&[0, 0xff, 0, b'x'], &Alice).is_err());
    }
}
