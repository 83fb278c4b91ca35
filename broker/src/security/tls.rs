//! TLS on SSL listeners, with rustls (ring provider) and PEM files, by Kafka's properties:
//! `ssl.keystore.location` (certificate chain and private key in one PEM file), Weir's
//! `ssl.keystore.key.location` beside it (the key in a file of its own, as a Kubernetes TLS
//! Secret mounts `tls.crt` and `tls.key`: `ssl.keystore.location` then holds the chain only),
//! or the inline `ssl.keystore.certificate.chain` + `ssl.keystore.key`; `ssl.truststore.location` or
//! `ssl.truststore.certificates` (the CAs client certificates must chain to);
//! `ssl.client.auth=none|requested|required`; `ssl.enabled.protocols` (TLSv1.2, TLSv1.3);
//! `ssl.cipher.suites` (IANA names, as Kafka's; the broker then prefers them in the order given,
//! as a Kafka broker on Java 13 or later does).
//! Each may be given for one listener as `listener.name.<listener>.<property>`.
//!
//! A listener's [`TlsAcceptorCell`] holds the acceptor built from the files; [`watch_files`]
//! rebuilds it when a file changes (cert-manager rotates certificates in place), keeping the old
//! one if the new files do not make a valid configuration. The handshake is bounded by
//! [`HANDSHAKE_TIMEOUT`].

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::watch;
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;

use crate::config::{BrokerConfig, ConfigError};

/// How long a client may take to complete the TLS handshake.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the key and trust files are checked for changes.
const RELOAD_CHECK_INTERVAL: Duration = Duration::from_secs(5);

/// Whether clients must present a certificate (Kafka's `ssl.client.auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientAuth {
    None,
    Requested,
    Required,
}

/// What a listener's TLS is made of, as configured.
#[derive(Debug, Clone)]
pub(crate) struct TlsSettings {
    listener: String,
    keystore: PemSource,
    key: Option<PemSource>,
    truststore: Option<PemSource>,
    client_auth: ClientAuth,
    protocols: Vec<&'static rustls::SupportedProtocolVersion>,
    /// `ssl.cipher.suites` in the order given; `None`: rustls' defaults, in the client's order.
    cipher_suites: Option<Vec<rustls::SupportedCipherSuite>>,
}

/// PEM text from a file (re-read when it changes) or given inline.
#[derive(Clone)]
enum PemSource {
    File(PathBuf),
    Inline(String),
}

/// Inline PEM may hold a private key: Debug names its size only.
impl std::fmt::Debug for PemSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PemSource::File(path) => write!(f, "File({})", path.display()),
            PemSource::Inline(text) => write!(f, "Inline({} bytes)", text.len()),
        }
    }
}

impl PemSource {
    fn read(&self) -> Result<Vec<u8>, String> {
        match self {
            PemSource::File(path) => {
                std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
            }
            PemSource::Inline(text) => Ok(text.as_bytes().to_vec()),
        }
    }

    /// The property that names this source when it holds the private key.
    fn key_property(&self) -> &'static str {
        match self {
            PemSource::File(_) => "ssl.keystore.key.location",
            PemSource::Inline(_) => "ssl.keystore.key",
        }
    }

    fn modified(&self) -> Option<SystemTime> {
        match self {
            PemSource::File(path) => std::fs::metadata(path).and_then(|m| m.modified()).ok(),
            PemSource::Inline(_) => None,
        }
    }
}

fn invalid(listener: &str, name: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        name: format!("{name} (listener {listener})"),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// One listener's TLS properties: its own (`listener.name.…`), else the broker's.
struct ListenerProperties<'a> {
    config: &'a BrokerConfig,
    listener: &'a str,
}

impl ListenerProperties<'_> {
    fn get(&self, name: &str) -> Option<String> {
        self.config.listener_property(self.listener, name)
    }

    fn bad(&self, name: &str, value: &str, reason: &str) -> ConfigError {
        invalid(self.listener, name, value, reason)
    }

    /// Key and trust stores other than PEM, and encrypted keys, are refused.
    fn check_unsupported(&self) -> Result<(), ConfigError> {
        for (name, wanted) in [("ssl.keystore.type", "PEM"), ("ssl.truststore.type", "PEM")] {
            if let Some(kind) = self.get(name) {
                if !kind.eq_ignore_ascii_case(wanted) {
                    return Err(self.bad(
                        name,
                        &kind,
                        "only PEM key and trust stores are supported",
                    ));
                }
            }
        }
        if self
            .get("ssl.key.password")
            .is_some_and(|password| !password.is_empty())
        {
            return Err(self.bad(
                "ssl.key.password",
                "(hidden)",
                "encrypted private keys are not supported yet: give the key unencrypted (PKCS#8 \
                 or RSA/EC PEM), as cert-manager writes it",
            ));
        }
        Ok(())
    }

    /// The certificate chain, and the key when it is not in the same PEM.
    fn keystore(&self) -> Result<(PemSource, Option<PemSource>), ConfigError> {
        match (
            self.get("ssl.keystore.location"),
            self.get("ssl.keystore.key.location"),
            self.get("ssl.keystore.certificate.chain"),
            self.get("ssl.keystore.key"),
        ) {
            (Some(path), key_path, None, None) => Ok((
                PemSource::File(PathBuf::from(path)),
                key_path.map(|key_path| PemSource::File(PathBuf::from(key_path))),
            )),
            (None, None, Some(chain), Some(key)) => {
                Ok((PemSource::Inline(chain), Some(PemSource::Inline(key))))
            }
            _ => Err(self.bad(
                "ssl.keystore.location",
                "",
                "an SSL listener needs ssl.keystore.location (a PEM file with the certificate \
                 chain and the private key, or the chain only with the key in \
                 ssl.keystore.key.location), or ssl.keystore.certificate.chain with \
                 ssl.keystore.key",
            )),
        }
    }

    fn truststore(&self) -> Result<Option<PemSource>, ConfigError> {
        match (
            self.get("ssl.truststore.location"),
            self.get("ssl.truststore.certificates"),
        ) {
            (Some(path), None) => Ok(Some(PemSource::File(PathBuf::from(path)))),
            (None, Some(certificates)) => Ok(Some(PemSource::Inline(certificates))),
            (None, None) => Ok(None),
            (Some(_), Some(_)) => Err(self.bad(
                "ssl.truststore.location",
                "",
                "give ssl.truststore.location or ssl.truststore.certificates, not both",
            )),
        }
    }

    fn client_auth(&self, has_truststore: bool) -> Result<ClientAuth, ConfigError> {
        let client_auth = match self.get("ssl.client.auth").as_deref().unwrap_or("none") {
            "none" => ClientAuth::None,
            "requested" => ClientAuth::Requested,
            "required" => ClientAuth::Required,
            other => {
                return Err(self.bad(
                    "ssl.client.auth",
                    other,
                    "expected none, requested or required",
                ))
            }
        };
        if client_auth != ClientAuth::None && !has_truststore {
            return Err(self.bad(
                "ssl.client.auth",
                "",
                "checking client certificates needs ssl.truststore.location (the CAs they chain to)",
            ));
        }
        Ok(client_auth)
    }

    fn protocols(&self) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, ConfigError> {
        let enabled = self
            .get("ssl.enabled.protocols")
            .unwrap_or_else(|| "TLSv1.2,TLSv1.3".into());
        let mut protocols = Vec::new();
        for protocol in enabled.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            protocols.push(match protocol {
                "TLSv1.2" => &rustls::version::TLS12,
                "TLSv1.3" => &rustls::version::TLS13,
                other => {
                    return Err(self.bad(
                        "ssl.enabled.protocols",
                        other,
                        "rustls offers TLSv1.2 and TLSv1.3 only",
                    ))
                }
            });
        }
        if protocols.is_empty() {
            return Err(self.bad("ssl.enabled.protocols", "", "no protocol enabled"));
        }
        Ok(protocols)
    }
}

impl TlsSettings {
    /// The TLS settings of `listener` from its own (`listener.name.…`) and the broker's
    /// properties.
    pub(crate) fn from_config(config: &BrokerConfig, listener: &str) -> Result<Self, ConfigError> {
        let properties = ListenerProperties { config, listener };
        properties.check_unsupported()?;
        let (keystore, key) = properties.keystore()?;
        let truststore = properties.truststore()?;
        let client_auth = properties.client_auth(truststore.is_some())?;
        let protocols = properties.protocols()?;
        let cipher_suites =
            match properties.get("ssl.cipher.suites") {
                Some(names) => Some(cipher_suites(&names, &protocols).map_err(
                    |(value, reason)| properties.bad("ssl.cipher.suites", &value, &reason),
                )?),
                None => None,
            };
        Ok(TlsSettings {
            listener: listener.to_string(),
            keystore,
            key,
            truststore,
            client_auth,
            protocols,
            cipher_suites,
        })
    }

    /// The listener's name, upper-cased as configured.
    pub(crate) fn listener(&self) -> &str {
        &self.listener
    }

    /// The certificate chain and key as PEM text, read now: the identity this broker shows
    /// when it connects to other brokers and controllers on this listener.
    pub(crate) fn identity_pem(&self) -> Result<(String, String), ConfigError> {
        let chain = self.read_text(&self.keystore, "ssl.keystore.location")?;
        let key = match &self.key {
            Some(key) => self.read_text(key, key.key_property())?,
            None => chain.clone(),
        };
        Ok((chain, key))
    }

    /// The truststore's CAs as PEM text, read now; `None` when none is configured.
    pub(crate) fn truststore_pem(&self) -> Result<Option<String>, ConfigError> {
        self.truststore
            .as_ref()
            .map(|source| self.read_text(source, "ssl.truststore.location"))
            .transpose()
    }

    fn read_text(&self, source: &PemSource, name: &str) -> Result<String, ConfigError> {
        let bytes = source
            .read()
            .map_err(|reason| invalid(&self.listener, name, "", reason))?;
        String::from_utf8(bytes).map_err(|_| {
            invalid(
                &self.listener,
                name,
                "",
                "PEM is text; the file is not UTF-8",
            )
        })
    }

    /// Reads the files and builds the acceptor.
    pub(crate) fn acceptor(&self) -> Result<TlsAcceptor, ConfigError> {
        let bad = |name: &str, reason: String| invalid(&self.listener, name, "", reason);
        let keystore = self
            .keystore
            .read()
            .map_err(|e| bad("ssl.keystore.location", e))?;
        let key_pem = match &self.key {
            Some(key) => key.read().map_err(|e| bad(key.key_property(), e))?,
            None => keystore.clone(),
        };
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&keystore)
            .collect::<Result<_, _>>()
            .map_err(|e| bad("ssl.keystore.location", format!("bad certificate PEM: {e}")))?;
        if chain.is_empty() {
            return Err(bad(
                "ssl.keystore.location",
                "no CERTIFICATE in the PEM".into(),
            ));
        }
        let key_property = self
            .key
            .as_ref()
            .map_or("ssl.keystore.location", PemSource::key_property);
        let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
            bad(
                key_property,
                format!("no unencrypted private key in the PEM: {e}"),
            )
        })?;
        let mut provider = rustls::crypto::ring::default_provider();
        if let Some(suites) = &self.cipher_suites {
            provider.cipher_suites = suites.clone();
        }
        let provider = Arc::new(provider);
        let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&self.protocols)
            .map_err(|e| bad("ssl.enabled.protocols", e.to_string()))?;
        let builder = match (&self.truststore, self.client_auth) {
            (Some(truststore), auth) if auth != ClientAuth::None => {
                let pem = truststore
                    .read()
                    .map_err(|e| bad("ssl.truststore.location", e))?;
                let mut roots = rustls::RootCertStore::empty();
                for certificate in CertificateDer::pem_slice_iter(&pem) {
                    let certificate = certificate.map_err(|e| {
                        bad(
                            "ssl.truststore.location",
                            format!("bad certificate PEM: {e}"),
                        )
                    })?;
                    roots
                        .add(certificate)
                        .map_err(|e| bad("ssl.truststore.location", format!("unusable CA: {e}")))?;
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                );
                let verifier = match auth {
                    ClientAuth::Requested => verifier.allow_unauthenticated(),
                    _ => verifier,
                };
                let verifier = verifier
                    .build()
                    .map_err(|e| bad("ssl.truststore.location", e.to_string()))?;
                builder.with_client_cert_verifier(verifier)
            }
            _ => builder.with_no_client_auth(),
        };
        let mut server = builder
            .with_single_cert(chain, key)
            .map_err(|e| bad("ssl.keystore.location", format!("key and certificate: {e}")))?;
        // Suites the operator listed are preferred in the operator's order.
        server.ignore_client_order = self.cipher_suites.is_some();
        Ok(TlsAcceptor::from(Arc::new(server)))
    }

    fn modified(&self) -> Vec<Option<SystemTime>> {
        [
            Some(&self.keystore),
            self.key.as_ref(),
            self.truststore.as_ref(),
        ]
        .into_iter()
        .flatten()
        .map(PemSource::modified)
        .collect()
    }
}

/// The suites `ssl.cipher.suites` names, in its order, by their IANA names (`TLS_AES_128_GCM_SHA256`,
/// `TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`, as Kafka and the JDK spell them) or rustls' (`TLS13_…`).
/// Refused, with the names offered: a suite rustls does not offer, and a list that leaves an
/// enabled protocol version without a suite (that version could never be negotiated).
fn cipher_suites(
    names: &str,
    protocols: &[&'static rustls::SupportedProtocolVersion],
) -> Result<Vec<rustls::SupportedCipherSuite>, (String, String)> {
    let offered = rustls::crypto::ring::ALL_CIPHER_SUITES;
    let mut chosen = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let suite = offered
            .iter()
            .find(|suite| {
                iana_name(suite).eq_ignore_ascii_case(name)
                    || rustls_name(suite).eq_ignore_ascii_case(name)
            })
            .ok_or_else(|| {
                let known: Vec<String> = offered.iter().map(iana_name).collect();
                (
                    name.to_string(),
                    format!(
                        "not a cipher suite Weir offers; it offers {}",
                        known.join(", ")
                    ),
                )
            })?;
        if !chosen.contains(suite) {
            chosen.push(*suite);
        }
    }
    for protocol in protocols {
        if !chosen
            .iter()
            .any(|suite| suite.version().version == protocol.version)
        {
            return Err((
                names.to_string(),
                format!(
                    "no {} suite listed while ssl.enabled.protocols enables it",
                    protocol_name(protocol)
                ),
            ));
        }
    }
    Ok(chosen)
}

/// rustls' name of a suite: `TLS13_AES_128_GCM_SHA256`, `TLS_ECDHE_…`.
fn rustls_name(suite: &rustls::SupportedCipherSuite) -> &'static str {
    suite.suite().as_str().unwrap_or("unnamed")
}

/// The IANA name (Kafka's and the JDK's): TLS 1.3 suites as `TLS_AES_128_GCM_SHA256`.
fn iana_name(suite: &rustls::SupportedCipherSuite) -> String {
    let name = rustls_name(suite);
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name.to_string(),
    }
}

fn protocol_name(protocol: &rustls::SupportedProtocolVersion) -> &'static str {
    match protocol.version {
        rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3",
        _ => "TLSv1.2",
    }
}

/// A listener's current acceptor, replaced when its files change.
pub(crate) struct TlsAcceptorCell {
    settings: TlsSettings,
    current: RwLock<TlsAcceptor>,
}

impl TlsAcceptorCell {
    pub(crate) fn new(settings: TlsSettings) -> Result<Arc<Self>, ConfigError> {
        let acceptor = settings.acceptor()?;
        Ok(Arc::new(TlsAcceptorCell {
            settings,
            current: RwLock::new(acceptor),
        }))
    }

    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Rebuilds `cell`'s acceptor whenever one of its files changes, until shutdown.
pub(crate) async fn watch_files(cell: Arc<TlsAcceptorCell>, mut shutdown: watch::Receiver<bool>) {
    let mut seen = cell.settings.modified();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(RELOAD_CHECK_INTERVAL) => {}
            _ = crate::shutdown::stopped(&mut shutdown) => return,
        }
        let now = cell.settings.modified();
        if now == seen {
            continue;
        }
        seen = now;
        match cell.settings.acceptor() {
            Ok(acceptor) => {
                *cell.current.write().unwrap_or_else(|p| p.into_inner()) = acceptor;
                tracing::info!(listener = %cell.settings.listener, "TLS certificates reloaded");
            }
            Err(error) => {
                tracing::error!(listener = %cell.settings.listener, %error, "TLS files changed but do not make a valid configuration: the previous certificates stay")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: &[&rustls::SupportedProtocolVersion] =
        &[&rustls::version::TLS12, &rustls::version::TLS13];

    fn names(suites: &[rustls::SupportedCipherSuite]) -> Vec<String> {
        suites.iter().map(iana_name).collect()
    }

    #[test]
    fn cipher_suites_keep_the_order_given_by_iana_or_rustls_names() {
        let suites = cipher_suites(
            "TLS_CHACHA20_POLY1305_SHA256, tls13_aes_128_gcm_sha256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256",
            BOTH,
        )
        .unwrap();
        assert_eq!(
            names(&suites),
            [
                "TLS_CHACHA20_POLY1305_SHA256",
                "TLS_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
            ]
        );
    }

    #[test]
    fn an_unknown_suite_is_refused_with_the_suites_offered() {
        let (value, reason) = cipher_suites(
            "TLS_AES_128_GCM_SHA256,TLS_RSA_WITH_AES_128_CBC_SHA",
            &[&rustls::version::TLS13],
        )
        .unwrap_err();
        assert_eq!(value, "TLS_RSA_WITH_AES_128_CBC_SHA");
        assert!(reason.contains("TLS_AES_256_GCM_SHA384"), "{reason}");
        assert!(
            reason.contains("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
            "{reason}"
        );
    }

    #[test]
    fn an_enabled_protocol_without_a_listed_suite_is_refused() {
        let (_, reason) = cipher_suites("TLS_AES_128_GCM_SHA256", BOTH).unwrap_err();
        assert!(reason.contains("no TLSv1.2 suite"), "{reason}");
        let tls13_only = cipher_suites("TLS_AES_128_GCM_SHA256", &[&rustls::version::TLS13]);
        assert_eq!(names(&tls13_only.unwrap()), ["TLS_AES_128_GCM_SHA256"]);
    }
}
