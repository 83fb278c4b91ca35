//! SCRAM credentials (RFC 5802, RFC 7677) as Kafka keeps them: per user and mechanism a salt,
//! an iteration count, and the StoredKey and ServerKey derived from the salted password — never
//! the password itself. AlterUserScramCredentials sends the salted password; the broker derives
//! the two keys and forgets it.

use serde::{Deserialize, Serialize};
pub use weir_wire::ScramMechanism;

/// Kafka's bounds on the iteration count (`ScramMechanism.minIterations`, and the controller's
/// upper bound).
pub const MIN_ITERATIONS: i32 = 4096;
pub const MAX_ITERATIONS: i32 = 16384;

/// What the broker keeps of one user's password for one mechanism.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    #[serde(with = "base64_bytes")]
    pub salt: Vec<u8>,
    #[serde(with = "base64_bytes")]
    pub stored_key: Vec<u8>,
    #[serde(with = "base64_bytes")]
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredential")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// The credential of a salted password (what AlterUserScramCredentials carries).
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salt: Vec<u8>,
        salted_password: &[u8],
        iterations: i32,
    ) -> ScramCredential {
        ScramCredential {
            salt,
            stored_key: mechanism.hash(&mechanism.client_key(salted_password)),
            server_key: mechanism.server_key(salted_password),
            iterations,
        }
    }

    /// The credential of a password, salted with `salt` (the CLI, tests).
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &str,
        salt: Vec<u8>,
        iterations: i32,
    ) -> ScramCredential {
        let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations as u32);
        Self::from_salted_password(mechanism, salt, &salted, iterations)
    }
}

/// Bytes of salt a new credential gets (the CLI, tests).
pub const SALT_BYTES: usize = 32;

/// A random salt for a new credential.
pub fn random_salt() -> Result<Vec<u8>, ring::error::Unspecified> {
    use ring::rand::SecureRandom;
    let mut salt = vec![0u8; SALT_BYTES];
    ring::rand::SystemRandom::new().fill(&mut salt)?;
    Ok(salt)
}

/// Every user's credentials, by name and mechanism.
pub type UserCredentials =
    std::collections::BTreeMap<String, std::collections::BTreeMap<ScramMechanism, ScramCredential>>;

/// Stores or removes one user's credential for one mechanism (a user without any is removed).
pub fn apply_change(
    credentials: &mut UserCredentials,
    user: &str,
    mechanism: ScramMechanism,
    credential: Option<&ScramCredential>,
) {
    match credential {
        Some(credential) => {
            credentials
                .entry(user.to_string())
                .or_default()
                .insert(mechanism, credential.clone());
        }
        None => {
            if let Some(by_mechanism) = credentials.get_mut(user) {
                by_mechanism.remove(&mechanism);
                if by_mechanism.is_empty() {
                    credentials.remove(user);
                }
            }
        }
    }
}

/// Byte strings as base64 text in the stored JSON.
mod base64_bytes {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's SCRAM-SHA-256 example: user "user", password "pencil", 4096 iterations.
    #[test]
    fn keys_match_rfc_7677() {
        use base64::engine::general_purpose::STANDARD;
        use base64::Engine;
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let mechanism = ScramMechanism::Sha256;
        let salted = mechanism.salted_password(b"pencil", &salt, 4096);
        let client_first_bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
        let server_first =
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let client_final_without_proof =
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let auth_message =
            format!("{client_first_bare},{server_first},{client_final_without_proof}");
        let client_key = mechanism.client_key(&salted);
        let stored_key = mechanism.hash(&client_key);
        let signature = mechanism.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        assert_eq!(
            STANDARD.encode(proof),
            "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        let server_signature =
            mechanism.hmac(&mechanism.server_key(&salted), auth_message.as_bytes());
        assert_eq!(
            STANDARD.encode(server_signature),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        let credential = ScramCredential::from_password(mechanism, "pencil", salt, 4096);
        assert_eq!(credential.stored_key, stored_key);
    }

    #[test]
    fn mechanisms_by_code_and_name() {
        for mechanism in ScramMechanism::ALL {
            assert_eq!(
                ScramMechanism::from_type(mechanism.type_code()),
                Some(mechanism)
            );
            assert_eq!(ScramMechanism::from_name(mechanism.name()), Some(mechanism));
        }
        assert_eq!(ScramMechanism::from_type(0), None);
        assert_eq!(ScramMechanism::Sha512.key_len(), 64);
    }

    #[test]
    fn a_credential_round_trips_through_json_without_showing_its_keys() {
        let credential =
            ScramCredential::from_password(ScramMechanism::Sha512, "secret", vec![1, 2, 3], 4096);
        let json = serde_json::to_string(&credential).unwrap();
        assert_eq!(
            serde_json::from_str::<ScramCredential>(&json).unwrap(),
            credential
        );
        assert!(!format!("{credential:?}").contains("stored_key"));
    }
}
