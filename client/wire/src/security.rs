//! How [`crate::ProtocolClient`] reaches a secured broker, configured with librdkafka's property
//! names so the CLI's `-X` flags mean the same to it as to rdkafka:
//!
//! - `security.protocol`: `plaintext` (default), `ssl`, `sasl_plaintext`, `sasl_ssl`;
//! - TLS: `ssl.ca.location` / `ssl.ca.pem` (the CAs the broker's certificate must chain to; the
//!   system's store otherwise), `ssl.certificate.location` + `ssl.key.location` or
//!   `ssl.certificate.pem` + `ssl.key.pem` (a client certificate, mTLS),
//!   `ssl.endpoint.identification.algorithm` (`https`, the default: the certificate must name the
//!   host; `none`: the chain alone), `enable.ssl.certificate.verification=false` (trust anything;
//!   for tests only, as in librdkafka);
//! - SASL: `sasl.mechanism` (or `sasl.mechanisms`) PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, with
//!   `sasl.username` and `sasl.password`.
//!
//! Properties of other kinds are left to rdkafka. What cannot be honoured (an encrypted private
//! key, GSSAPI, OAUTHBEARER) is refused here with the reason, not ignored.

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls;
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use weir_tls::verify::{ChainOnly, TrustAnything};

use crate::mechanism::Mechanism;

/// A property the client cannot honour, with the reason.
#[derive(Debug, thiserror::Error)]
#[error("client property {name}: {reason}")]
pub struct SecurityConfigError {
    pub name: String,
    pub reason: String,
}

fn refused(name: &str, reason: impl Into<String>) -> SecurityConfigError {
    SecurityConfigError {
        name: name.to_string(),
        reason: reason.into(),
    }
}

/// The SASL login a client makes after connecting (and after TLS on `sasl_ssl`).
#[derive(Clone)]
pub struct SaslLogin {
    pub mechanism: Mechanism,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for SaslLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslLogin")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

/// TLS and SASL for one client's connections; the default is PLAINTEXT.
#[derive(Clone, Default)]
pub struct ClientSecurity {
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
    pub(crate) sasl: Option<SaslLogin>,
}

impl std::fmt::Debug for ClientSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSecurity")
            .field("tls", &self.tls.is_some())
            .field("sasl", &self.sasl)
            .finish()
    }
}

impl ClientSecurity {
    /// PLAINTEXT: neither TLS nor SASL.
    pub fn plaintext() -> ClientSecurity {
        ClientSecurity::default()
    }

    pub fn uses_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The TLS configuration when the connection is TLS.
    pub fn tls_config(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.tls.clone()
    }

    pub fn sasl(&self) -> Option<&SaslLogin> {
        self.sasl.as_ref()
    }

    /// The same TLS with `sasl` as the login (a broker's inter-broker login comes from its
    /// JAAS config, not from client properties).
    pub fn with_sasl(self, sasl: Option<SaslLogin>) -> ClientSecurity {
        ClientSecurity { sasl, ..self }
    }

    /// The security librdkafka-named properties describe (names compared case-insensitively
    /// for `security.protocol`'s value, as librdkafka does).
    pub fn from_properties<'a>(
        properties: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<ClientSecurity, SecurityConfigError> {
        let properties: Vec<(&str, &str)> = properties.into_iter().collect();
        let get = |name: &str| {
            properties
                .iter()
                .rev()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| *value)
        };
        let protocol = get("security.protocol").unwrap_or("plaintext");
        let (tls, sasl) = match protocol.to_ascii_lowercase().as_str() {
            "plaintext" => (false, false),
            "ssl" => (true, false),
            "sasl_plaintext" => (false, true),
            "sasl_ssl" => (true, true),
            other => {
                return Err(refused(
                    "security.protocol",
                    format!("{other} is not plaintext, ssl, sasl_plaintext or sasl_ssl"),
                ))
            }
        };
        Ok(ClientSecurity {
            tls: match tls {
                true => Some(Arc::new(tls_config(&get)?)),
                false => None,
            },
            sasl: match sasl {
                true => Some(sasl_login(&get)?),
                false => None,
            },
        })
    }
}

fn sasl_login<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<SaslLogin, SecurityConfigError> {
    let (name, mechanism) = match get("sasl.mechanism") {
        Some(value) => ("sasl.mechanism", value),
        None => (
            "sasl.mechanisms",
            get("sasl.mechanisms").unwrap_or("GSSAPI"),
        ),
    };
    let mechanism = match Mechanism::from_name(mechanism.trim()) {
        Some(Mechanism::OAuthBearer) => {
            return Err(refused(
                name,
                "OAUTHBEARER tokens are not fetched by Weir's protocol client yet (its admin \
                 commands log in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)",
            ))
        }
        Some(mechanism) => mechanism,
        None => {
            return Err(refused(
                name,
                format!(
                    "{mechanism} is not served by Weir's protocol client (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"
                ),
            ))
        }
    };
    let required = |property: &str| {
        get(property)
            .map(str::to_string)
            .ok_or_else(|| refused(property, format!("{} needs it", mechanism.name())))
    };
    Ok(SaslLogin {
        mechanism,
        username: required("sasl.username")?,
        password: required("sasl.password")?,
    })
}

fn tls_config<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<rustls::ClientConfig, SecurityConfigError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| refused("security.protocol", e.to_string()))?;
    let verify = get("enable.ssl.certificate.verification").unwrap_or("true");
    let builder = if verify.eq_ignore_ascii_case("false") {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(TrustAnything(provider)))
    } else {
        let roots = Arc::new(trusted_roots(get)?);
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| refused("ssl.ca.location", e.to_string()))?;
        let check_host = get("ssl.endpoint.identification.algorithm").unwrap_or("https");
        match check_host.to_ascii_lowercase().as_str() {
            "https" => builder.with_webpki_verifier(webpki),
            "none" => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly(webpki))),
            other => {
                return Err(refused(
                    "ssl.endpoint.identification.algorithm",
                    format!("{other} is not https or none"),
                ))
            }
        }
    };
    if get("ssl.key.password").is_some() {
        return Err(refused(
            "ssl.key.password",
            "encrypted private keys are not supported; give an unencrypted PEM key",
        ));
    }
    let certificate = pem_text(get, "ssl.certificate.pem", "ssl.certificate.location")?;
    let key = pem_text(get, "ssl.key.pem", "ssl.key.location")?;
    match (certificate, key) {
        (None, None) => Ok(builder.with_no_client_auth()),
        (Some((name, chain)), Some((key_name, key))) => {
            let chain = CertificateDer::pem_slice_iter(&chain)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| refused(name, e.to_string()))?;
            let key = PrivateKeyDer::from_pem_slice(&key)
                .map_err(|e| refused(key_name, e.to_string()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| refused(name, e.to_string()))
        }
        (Some((name, _)), None) | (None, Some((name, _))) => Err(refused(
            name,
            "a client certificate needs both ssl.certificate.* and ssl.key.*",
        )),
    }
}

/// PEM bytes given inline (`inline`) or in a file (`location`), with the property's name.
fn pem_text<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    inline: &'static str,
    location: &'static str,
) -> Result<Option<(&'static str, Vec<u8>)>, SecurityConfigError> {
    if let Some(text) = get(inline) {
        return Ok(Some((inline, text.as_bytes().to_vec())));
    }
    match get(location) {
        None => Ok(None),
        Some(path) => std::fs::read(path)
            .map(|bytes| Some((location, bytes)))
            .map_err(|e| refused(location, format!("cannot read {path}: {e}"))),
    }
}

fn trusted_roots<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<rustls::RootCertStore, SecurityConfigError> {
    let mut roots = rustls::RootCertStore::empty();
    let given = pem_text(get, "ssl.ca.pem", "ssl.ca.location")?;
    let certificates = match given {
        Some((name, pem)) => CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| refused(name, e.to_string()))?,
        None => rustls_native_certs::load_native_certs().certs,
    };
    let (added, _ignored) = roots.add_parsable_certificates(certificates);
    if added == 0 {
        return Err(refused(
            "ssl.ca.location",
            "no CA certificate found (name a PEM file of the CAs that sign the broker's certificate)",
        ));
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(properties: &[(&str, &str)]) -> Result<ClientSecurity, SecurityConfigError> {
        ClientSecurity::from_properties(properties.iter().copied())
    }

    #[test]
    fn plaintext_by_default_and_other_properties_are_left_alone() {
        let security = parse(&[("acks", "all"), ("linger.ms", "5")]).unwrap();
        assert!(!security.uses_tls());
        assert!(security.sasl().is_none());
    }

    #[test]
    fn sasl_needs_a_mechanism_it_knows_and_credentials() {
        let security = parse(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanisms", "SCRAM-SHA-512"),
            ("sasl.username", "alice"),
            ("sasl.password", "secret"),
        ])
        .unwrap();
        let login = security.sasl().unwrap();
        assert_eq!(
            login.mechanism,
            Mechanism::Scram(crate::mechanism::ScramMechanism::Sha512)
        );
        assert_eq!(login.username, "alice");
        assert!(!format!("{security:?}").contains("secret"));

        let error = parse(&[("security.protocol", "sasl_plaintext")]).unwrap_err();
        assert_eq!(error.name, "sasl.mechanisms");
        assert!(error.reason.contains("GSSAPI"), "{error}");
        let error = parse(&[
            ("security.protocol", "sasl_plaintext"),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "alice"),
        ])
        .unwrap_err();
        assert_eq!(error.name, "sasl.password");
    }

    #[test]
    fn tls_refuses_what_it_cannot_honour() {
        let error = parse(&[("security.protocol", "tls")]).unwrap_err();
        assert_eq!(error.name, "security.protocol");
        let error = parse(&[
            ("security.protocol", "ssl"),
            ("ssl.ca.location", "/nonexistent/ca.pem"),
        ])
        .unwrap_err();
        assert_eq!(error.name, "ssl.ca.location");
        assert!(error.reason.contains("/nonexistent/ca.pem"), "{error}");
        let error = parse(&[
            ("security.protocol", "ssl"),
            ("enable.ssl.certificate.verification", "false"),
            ("ssl.key.password", "x"),
        ])
        .unwrap_err();
        assert_eq!(error.name, "ssl.key.password");
        let security = parse(&[
            ("security.protocol", "ssl"),
            ("enable.ssl.certificate.verification", "false"),
        ])
        .unwrap();
        assert!(security.uses_tls());
    }
}
