//! A server certificate that follows its PEM files: when a handshake finds the files changed
//! (looked at no more than once a second), the new chain and key are loaded; if they cannot be
//! (a half-written rotation), the previous pair keeps serving and the reason is logged.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::pem::{self, PemError};
use crate::rustls;
use crate::rustls::server::{ClientHello, ResolvesServerCert};
use crate::rustls::sign::CertifiedKey;

/// How often a handshake may look at the files again.
const RECHECK_INTERVAL: Duration = Duration::from_secs(1);

/// The certificate chain and key files a server presents.
#[derive(Debug)]
pub struct FollowedCertificate {
    certificate_path: String,
    key_path: String,
    provider: Arc<rustls::crypto::CryptoProvider>,
    state: Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    key: Arc<CertifiedKey>,
    modified: (Option<SystemTime>, Option<SystemTime>),
    checked_at: Instant,
}

impl FollowedCertificate {
    /// Loads the pair now: an error here is a configuration error to report at start-up.
    pub fn load(certificate_path: &str, key_path: &str) -> Result<Self, PemError> {
        let provider = crate::provider();
        let key = certified_key(&provider, certificate_path, key_path)?;
        Ok(FollowedCertificate {
            certificate_path: certificate_path.to_string(),
            key_path: key_path.to_string(),
            state: Mutex::new(Loaded {
                key,
                modified: modified_times(certificate_path, key_path),
                checked_at: Instant::now(),
            }),
            provider,
        })
    }

    fn current(&self) -> Option<Arc<CertifiedKey>> {
        let mut state = self.state.lock().ok()?;
        if state.checked_at.elapsed() >= RECHECK_INTERVAL {
            state.checked_at = Instant::now();
            let modified = modified_times(&self.certificate_path, &self.key_path);
            if modified != state.modified {
                match certified_key(&self.provider, &self.certificate_path, &self.key_path) {
                    Ok(key) => {
                        tracing::info!(certificate = %self.certificate_path, "TLS certificate reloaded");
                        state.key = key;
                        state.modified = modified;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "TLS certificate changed but cannot be loaded; the previous one stays")
                    }
                }
            }
        }
        Some(Arc::clone(&state.key))
    }
}

impl ResolvesServerCert for FollowedCertificate {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current()
    }
}

fn modified_times(certificate: &str, key: &str) -> (Option<SystemTime>, Option<SystemTime>) {
    let modified = |path: &str| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    (modified(certificate), modified(key))
}

fn certified_key(
    provider: &rustls::crypto::CryptoProvider,
    certificate_path: &str,
    key_path: &str,
) -> Result<Arc<CertifiedKey>, PemError> {
    let chain = pem::certificates(certificate_path)?;
    let key = pem::private_key(key_path)?;
    let signing_key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| PemError {
            path: key_path.to_string(),
            reason: format!("unusable private key: {e}"),
        })?;
    let certified = CertifiedKey::new(chain, signing_key);
    certified.keys_match().map_err(|e| PemError {
        path: key_path.to_string(),
        reason: format!("is not the key of {certificate_path}: {e}"),
    })?;
    Ok(Arc::new(certified))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write_pair(dir: &std::path::Path, name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let certificate = rcgen::CertificateParams::new(vec![name.into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let cert_path = dir.join("cert.pem");
        let key_path = dir.join("key.pem");
        std::fs::write(&cert_path, certificate.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        (
            cert_path.to_str().unwrap().into(),
            key_path.to_str().unwrap().into(),
        )
    }

    fn leaf(followed: &FollowedCertificate) -> Vec<u8> {
        followed.current().unwrap().cert[0].to_vec()
    }

    #[test]
    fn a_rewritten_pair_is_served_and_a_broken_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = write_pair(dir.path(), "first.example");
        let followed = FollowedCertificate::load(&cert, &key).unwrap();
        let first = leaf(&followed);

        // Backdate the last look so the next handshake checks the files.
        let rewind = |followed: &FollowedCertificate| {
            let mut state = followed.state.lock().unwrap();
            state.checked_at -= RECHECK_INTERVAL;
            state.modified = (None, None);
        };
        write_pair(dir.path(), "second.example");
        rewind(&followed);
        let second = leaf(&followed);
        assert_ne!(first, second);

        std::fs::write(&key, "half-written").unwrap();
        rewind(&followed);
        assert_eq!(
            leaf(&followed),
            second,
            "a broken rotation keeps the previous pair"
        );

        let other_key = rcgen::KeyPair::generate().unwrap();
        std::fs::write(&key, other_key.serialize_pem()).unwrap();
        let error = FollowedCertificate::load(&cert, &key).unwrap_err();
        assert!(error.reason.contains("is not the key of"), "{error}");
    }
}
