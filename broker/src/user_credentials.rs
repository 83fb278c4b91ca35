//! SCRAM users (KIP-554): where their credentials are kept and how a change is checked.
//!
//! AlterUserScramCredentials upserts or deletes one credential per user and mechanism; Kafka's
//! rules decide what is refused (an empty name, an unknown mechanism, iterations outside
//! 4096..=16384, deleting what does not exist, one user twice in a request). Alone, the broker
//! keeps them in `<data dir>/meta/scram-credentials.json` (replaced atomically and durably,
//! `durable_file`; read at start-up); in a cluster they are metadata records, in every broker's
//! image.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::durable_file;
use crate::error::BrokerError;
use crate::log::error::LogError;
pub use crate::security::scram::UserCredentials;
use crate::security::scram::{
    apply_change, ScramCredential, ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS,
};

const FILE_NAME: &str = "scram-credentials.json";
/// Bound on the file read at start-up (some hundred bytes a credential).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// One change of an AlterUserScramCredentials request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialChange {
    pub user: String,
    /// The request's mechanism code (unknown codes are refused by [`check_changes`]).
    pub mechanism: i8,
    /// `Some`: upsert (salt, salted password, iterations); `None`: delete.
    pub upsert: Option<Upsertion>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upsertion {
    pub salt: Vec<u8>,
    pub salted_password: Vec<u8>,
    pub iterations: i32,
}

/// A change accepted: the credential to store, or `None` to remove it.
pub type AcceptedChange = (String, ScramMechanism, Option<ScramCredential>);

/// Why a user's change was refused: a Kafka error code and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: i16,
    pub message: String,
}

const UNACCEPTABLE_CREDENTIAL: i16 = 93;
const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
const RESOURCE_NOT_FOUND: i16 = 91;
const DUPLICATE_RESOURCE: i16 = 92;

fn refusal(code: i16, message: &str) -> Refusal {
    Refusal {
        code,
        message: message.to_string(),
    }
}

/// Kafka's rules for a request's changes against the current credentials: per user, the
/// accepted change or its refusal. Deletions are looked at before upsertions, and a user
/// named twice is refused whole.
pub fn check_changes(
    current: &UserCredentials,
    changes: &[CredentialChange],
) -> (Vec<AcceptedChange>, BTreeMap<String, Refusal>) {
    let mut refused: BTreeMap<String, Refusal> = BTreeMap::new();
    let mut accepted: BTreeMap<String, AcceptedChange> = BTreeMap::new();
    let (deletions, upsertions): (Vec<_>, Vec<_>) =
        changes.iter().partition(|change| change.upsert.is_none());
    let mut seen = BTreeSet::new();
    for change in deletions.into_iter().chain(upsertions) {
        let user = &change.user;
        if refused.contains_key(user) {
            continue;
        }
        if !seen.insert(user.clone()) {
            accepted.remove(user);
            refused.insert(
                user.clone(),
                refusal(
                    DUPLICATE_RESOURCE,
                    "A user credential cannot be altered twice in the same request",
                ),
            );
            continue;
        }
        match check_change(current, change) {
            Ok(change) => {
                accepted.insert(user.clone(), change);
            }
            Err(why) => {
                refused.insert(user.clone(), why);
            }
        }
    }
    (accepted.into_values().collect(), refused)
}

fn check_change(
    current: &UserCredentials,
    change: &CredentialChange,
) -> Result<AcceptedChange, Refusal> {
    if change.user.is_empty() {
        return Err(refusal(
            UNACCEPTABLE_CREDENTIAL,
            "Username must not be empty",
        ));
    }
    let mechanism = ScramMechanism::from_type(change.mechanism)
        .ok_or_else(|| refusal(UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"))?;
    let Some(upsert) = &change.upsert else {
        let exists = current
            .get(&change.user)
            .is_some_and(|by_mechanism| by_mechanism.contains_key(&mechanism));
        if !exists {
            return Err(refusal(
                RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            ));
        }
        return Ok((change.user.clone(), mechanism, None));
    };
    if upsert.iterations < MIN_ITERATIONS {
        return Err(refusal(UNACCEPTABLE_CREDENTIAL, "Too few iterations"));
    }
    if upsert.iterations > MAX_ITERATIONS {
        return Err(refusal(UNACCEPTABLE_CREDENTIAL, "Too many iterations"));
    }
    let credential = ScramCredential::from_salted_password(
        mechanism,
        upsert.salt.clone(),
        &upsert.salted_password,
        upsert.iterations,
    );
    Ok((change.user.clone(), mechanism, Some(credential)))
}

/// Applies accepted changes to a set of credentials.
pub fn apply_changes(credentials: &mut UserCredentials, changes: &[AcceptedChange]) {
    for (user, mechanism, credential) in changes {
        apply_change(credentials, user, *mechanism, credential.as_ref());
    }
}

/// The credentials of a broker running alone, on disk.
pub struct UserCredentialStore {
    path: PathBuf,
    credentials: Mutex<UserCredentials>,
}

impl UserCredentialStore {
    /// Reads `meta_dir`'s file (none yet: no users).
    pub fn open(meta_dir: &Path) -> Result<Self, BrokerError> {
        let path = meta_dir.join(FILE_NAME);
        let credentials = read_credentials(&path)?;
        Ok(UserCredentialStore {
            path,
            credentials: Mutex::new(credentials),
        })
    }

    pub fn credentials(&self) -> UserCredentials {
        self.lock().clone()
    }

    /// One user's credential for one mechanism.
    pub fn get(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.lock().get(user)?.get(&mechanism).cloned()
    }

    /// Checks a request's changes and stores the accepted ones durably; the refusals come back.
    pub fn alter(
        &self,
        changes: &[CredentialChange],
    ) -> Result<BTreeMap<String, Refusal>, BrokerError> {
        let mut credentials = self.lock();
        let (accepted, refused) = check_changes(&credentials, changes);
        if accepted.is_empty() {
            return Ok(refused);
        }
        let mut next = credentials.clone();
        apply_changes(&mut next, &accepted);
        let bytes = serde_json::to_vec_pretty(&next)
            .map_err(|e| BrokerError::InvalidRequest(e.to_string()))?;
        durable_file::replace(&self.path, &bytes).map_err(|e| LogError::io(&self.path, e))?;
        *credentials = next;
        Ok(refused)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, UserCredentials> {
        self.credentials.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn read_credentials(path: &Path) -> Result<UserCredentials, BrokerError> {
    let corrupt = |reason: String| BrokerError::DataDirectory {
        path: path.to_path_buf(),
        reason,
    };
    let credentials: UserCredentials =
        crate::durable_file::read_json(path, MAX_FILE_BYTES, "the SCRAM credentials")
            .map_err(|e| BrokerError::metadata_file(path, e))?
            .unwrap_or_default();
    for (user, by_mechanism) in &credentials {
        for (mechanism, credential) in by_mechanism {
            if credential.stored_key.len() != mechanism.key_len()
                || credential.server_key.len() != mechanism.key_len()
            {
                return Err(corrupt(format!(
                    "user {user:?}'s {mechanism} keys have the wrong length"
                )));
            }
        }
    }
    Ok(credentials)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upsert(user: &str, mechanism: i8, iterations: i32) -> CredentialChange {
        CredentialChange {
            user: user.into(),
            mechanism,
            upsert: Some(Upsertion {
                salt: b"salt".to_vec(),
                salted_password: vec![9; 32],
                iterations,
            }),
        }
    }

    fn delete(user: &str, mechanism: i8) -> CredentialChange {
        CredentialChange {
            user: user.into(),
            mechanism,
            upsert: None,
        }
    }

    #[test]
    fn kafkas_refusals() {
        let (accepted, refused) = check_changes(
            &BTreeMap::new(),
            &[
                upsert("", 1, 4096),
                upsert("unknown-mechanism", 0, 4096),
                upsert("few", 1, 4095),
                upsert("many", 2, 16385),
                delete("missing", 1),
                upsert("twice", 1, 4096),
                upsert("twice", 2, 4096),
                upsert("fine", 2, 8192),
            ],
        );
        let code = |user: &str| refused.get(user).map(|r| r.code);
        assert_eq!(code(""), Some(UNACCEPTABLE_CREDENTIAL));
        assert_eq!(code("unknown-mechanism"), Some(UNSUPPORTED_SASL_MECHANISM));
        assert_eq!(refused["few"].message, "Too few iterations");
        assert_eq!(refused["many"].message, "Too many iterations");
        assert_eq!(code("missing"), Some(RESOURCE_NOT_FOUND));
        assert_eq!(code("twice"), Some(DUPLICATE_RESOURCE));
        assert_eq!(accepted.len(), 1);
        assert_eq!(accepted[0].0, "fine");
        assert_eq!(accepted[0].1, ScramMechanism::Sha512);
    }

    #[test]
    fn stored_credentials_survive_a_reopen_and_deletes_remove_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = UserCredentialStore::open(dir.path()).unwrap();
        let refused = store
            .alter(&[upsert("alice", 1, 4096), upsert("bob", 2, 4096)])
            .unwrap();
        assert!(refused.is_empty());
        let reopened = UserCredentialStore::open(dir.path()).unwrap();
        let alice = reopened.get("alice", ScramMechanism::Sha256).unwrap();
        assert_eq!(alice.iterations, 4096);
        assert_eq!(alice.salt, b"salt");
        assert!(reopened.get("alice", ScramMechanism::Sha512).is_none());
        reopened.alter(&[delete("alice", 1)]).unwrap();
        let credentials = UserCredentialStore::open(dir.path()).unwrap().credentials();
        assert_eq!(credentials.keys().collect::<Vec<_>>(), ["bob"]);
    }

    #[test]
    fn a_damaged_file_is_a_clear_start_up_error() {
        let dir = tempfile::tempdir().unwrap();
        for bytes in [&b"{oops"[..], br#"{"a":{"SCRAM-SHA-256":{"salt":"","stored_key":"AA==","server_key":"AA==","iterations":4096}}}"#] {
            std::fs::write(dir.path().join(FILE_NAME), bytes).unwrap();
            let error = UserCredentialStore::open(dir.path()).err().unwrap().to_string();
            assert!(error.contains(FILE_NAME), "{error}");
        }
    }
}
