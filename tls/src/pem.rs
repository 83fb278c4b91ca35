//! PEM files: certificate chains, private keys and trust stores, with errors naming the file.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::rustls::RootCertStore;

/// A PEM file that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct PemError {
    pub path: String,
    pub reason: String,
}

fn error(path: &str, reason: impl Into<String>) -> PemError {
    PemError {
        path: path.to_string(),
        reason: reason.into(),
    }
}

fn read(path: &str) -> Result<Vec<u8>, PemError> {
    std::fs::read(path).map_err(|e| error(path, format!("cannot read it: {e}")))
}

/// The certificates of a PEM text (`source` names it in errors); at least one.
pub fn certificates_from(
    source: &str,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| error(source, format!("not a PEM certificate file: {e}")))?;
    if chain.is_empty() {
        return Err(error(source, "holds no PEM certificate"));
    }
    Ok(chain)
}

/// The certificates of the PEM file at `path`.
pub fn certificates(path: &str) -> Result<Vec<CertificateDer<'static>>, PemError> {
    certificates_from(path, &read(path)?)
}

/// The (unencrypted: PKCS#8, PKCS#1 or SEC1) private key of the PEM file at `path`.
pub fn private_key(path: &str) -> Result<PrivateKeyDer<'static>, PemError> {
    let pem = read(path)?;
    if String::from_utf8_lossy(&pem).contains("ENCRYPTED") {
        return Err(error(
            path,
            "encrypted private keys are not supported; give an unencrypted PEM key",
        ));
    }
    PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| error(path, format!("holds no PEM private key: {e}")))
}

/// The CAs of the PEM file at `path`, or the system's store when `path` is `None`.
pub fn trust_store(path: Option<&str>) -> Result<RootCertStore, PemError> {
    let (source, certificates) = match path {
        Some(path) => (path, certificates(path)?),
        None => (
            "the system's CA store",
            rustls_native_certs::load_native_certs().certs,
        ),
    };
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(certificates);
    if added == 0 {
        return Err(error(source, "holds no usable CA certificate"));
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn files_that_cannot_serve_say_so_with_their_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let missing = missing.to_str().unwrap();
        let error = certificates(missing).unwrap_err();
        assert!(error.to_string().starts_with(missing), "{error}");
        assert!(error.to_string().contains("cannot read"), "{error}");

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not pem\n").unwrap();
        let empty = empty.to_str().unwrap();
        assert!(certificates(empty)
            .unwrap_err()
            .to_string()
            .contains("no PEM certificate"));
        assert!(private_key(empty)
            .unwrap_err()
            .to_string()
            .contains("no PEM private key"));
        assert!(trust_store(Some(empty)).is_err());

        let encrypted = dir.path().join("encrypted.pem");
        std::fs::write(
            &encrypted,
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAA==\n-----END ENCRYPTED PRIVATE KEY-----\n",
        )
        .unwrap();
        let reason = private_key(encrypted.to_str().unwrap()).unwrap_err().reason;
        assert!(reason.contains("encrypted private keys"), "{reason}");
    }

    #[test]
    fn a_generated_certificate_and_key_load() {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let certificate = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let cert_path = dir.path().join("cert.pem");
        let key_path = dir.path().join("key.pem");
        std::fs::write(&cert_path, certificate.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        assert_eq!(certificates(cert_path.to_str().unwrap()).unwrap().len(), 1);
        private_key(key_path.to_str().unwrap()).unwrap();
        assert_eq!(
            trust_store(Some(cert_path.to_str().unwrap()))
                .unwrap()
                .len(),
            1
        );
    }
}
