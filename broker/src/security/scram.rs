//! SCRAM credentials (RFC 5802, RFC 7677) as Kafka keeps them: per user and mechanism a salt,
//! an iteration count, and the StoredKey and ServerKey derived from the salted password — never
//! the password itself. AlterUserScramCredentials sends the salted password; the broker derives
//! the two keys and forgets it.

use ring::{digest, hmac, pbkdf2};
use serde::{Deserialize, Serialize};

/// Kafka's bounds on the iteration count (`ScramMechanism.minIterations`, and the controller's
/// upper bound).
pub const MIN_ITERATIONS: i32 = 4096;
pub const MAX_ITERATIONS: i32 = 16384;

/// The two SCRAM mechanisms Kafka defines, with their type codes in the SCRAM APIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ScramMechanism {
    #[serde(rename = "SCRAM-SHA-256")]
    Sha256,
    #[serde(rename = "SCRAM-SHA-512")]
    Sha512,
}

impl ScramMechanism {
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    /// The mechanism of a DescribeUserScramCredentials / AlterUserScramCredentials type code
    /// (1, 2); `None` for Kafka's UNKNOWN (0) and anything else.
    pub fn from_type(code: i8) -> Option<ScramMechanism> {
        match code {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    pub fn type_code(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    /// The SASL mechanism name ("SCRAM-SHA-256").
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    fn hmac_algorithm(self) -> hmac::Algorithm {
        match self {
            ScramMechanism::Sha256 => hmac::HMAC_SHA256,
            ScramMechanism::Sha512 => hmac::HMAC_SHA512,
        }
    }

    fn digest_algorithm(self) -> &'static digest::Algorithm {
        match self {
            ScramMechanism::Sha256 => &digest::SHA256,
            ScramMechanism::Sha512 => &digest::SHA512,
        }
    }

    fn pbkdf2_algorithm(self) -> pbkdf2::Algorithm {
        match self {
            ScramMechanism::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            ScramMechanism::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }

    /// The hash's output length: the length of every key and proof.
    pub fn key_len(self) -> usize {
        self.digest_algorithm().output_len()
    }

    /// `Hi(password, salt, iterations)`: PBKDF2 with this mechanism's HMAC.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        let mut out = vec![0; self.key_len()];
        let rounds =
            std::num::NonZeroU32::new(iterations.max(1)).unwrap_or(std::num::NonZeroU32::MIN);
        pbkdf2::derive(self.pbkdf2_algorithm(), rounds, salt, password, &mut out);
        out
    }

    pub fn hmac(self, key: &[u8], message: &[u8]) -> Vec<u8> {
        let key = hmac::Key::new(self.hmac_algorithm(), key);
        hmac::sign(&key, message).as_ref().to_vec()
    }

    pub fn hash(self, message: &[u8]) -> Vec<u8> {
        digest::digest(self.digest_algorithm(), message)
            .as_ref()
            .to_vec()
    }

    /// `ClientKey = HMAC(SaltedPassword, "Client Key")`.
    pub fn client_key(self, salted_password: &[u8]) -> Vec<u8> {
        self.hmac(salted_password, b"Client Key")
    }

    /// `ServerKey = HMAC(SaltedPassword, "Server Key")`.
    pub fn server_key(self, salted_password: &[u8]) -> Vec<u8> {
        self.hmac(salted_password, b"Server Key")
    }
}

impl std::fmt::Display for ScramMechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

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
