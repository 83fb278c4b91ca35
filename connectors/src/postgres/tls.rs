//! TLS to PostgreSQL, configured as libpq is: `sslmode`, `sslrootcert`, `sslcert` and `sslkey` in
//! the connection URL (`postgres://…?sslmode=verify-full&sslrootcert=/etc/ca.pem`) or string
//! (`host=db sslmode=verify-ca sslrootcert=/etc/ca.pem`). tokio-postgres knows only `disable`,
//! `prefer` and `require` and no certificate options, so they are taken out here, the rest of the
//! string goes to tokio-postgres, and the checks are rustls':
//!
//! | sslmode | TLS | server certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `allow`, `prefer` (default) | when the server offers it | not checked |
//! | `require` | always | not checked; chain checked when `sslrootcert` is given (as libpq) |
//! | `verify-ca` | always | chain to `sslrootcert` |
//! | `verify-full` | always | chain and host name |
//!
//! `sslrootcert=system` trusts the system's CA store; without `sslrootcert`, `verify-*` use
//! `~/.postgresql/root.crt` as libpq does. `allow` tries TLS first (libpq tries plaintext first).
//! `sslcert` + `sslkey` present a client certificate (for `cert` authentication).

use std::sync::Arc;

use tokio_postgres::config::SslMode as DriverSslMode;
use tokio_postgres_rustls::MakeRustlsConnect;
use weir_tls::rustls;
use weir_tls::verify::{ChainOnly, TrustAnything};

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<Self, String> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                "sslmode={other} is not disable, allow, prefer, require, verify-ca or verify-full"
            ))
            }
        })
    }
}

/// The TLS options of a connection string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    pub mode: SslMode,
    pub root_cert: Option<String>,
    pub client_cert: Option<String>,
    pub client_key: Option<String>,
}

const TLS_KEYS: [&str; 4] = ["sslmode", "sslrootcert", "sslcert", "sslkey"];

impl TlsOptions {
    fn from_pairs(pairs: &[(String, String)]) -> Result<Self, String> {
        let get = |key: &str| {
            pairs
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let mode = get("sslmode").map_or(Ok(SslMode::Prefer), |v| SslMode::parse(&v))?;
        Ok(TlsOptions {
            mode,
            root_cert: get("sslrootcert"),
            client_cert: get("sslcert"),
            client_key: get("sslkey"),
        })
    }

    /// What tokio-postgres is told: whether TLS is tried, required or never used.
    pub fn driver_mode(&self) -> DriverSslMode {
        match self.mode {
            SslMode::Disable => DriverSslMode::Disable,
            SslMode::Allow | SslMode::Prefer => DriverSslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => DriverSslMode::Require,
        }
    }

    /// The rustls client for these options (read from their files now).
    pub fn connector(&self) -> Result<MakeRustlsConnect, String> {
        self.connector_in(&std::env::var("HOME").unwrap_or_default())
    }

    /// As [`Self::connector`], libpq's default CA file taken from the home directory `home`.
    fn connector_in(&self, home: &str) -> Result<MakeRustlsConnect, String> {
        let provider = weir_tls::provider();
        let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let checks_chain = match self.mode {
            SslMode::VerifyCa | SslMode::VerifyFull => true,
            SslMode::Require => self.root_cert.is_some(),
            SslMode::Disable | SslMode::Allow | SslMode::Prefer => false,
        };
        let builder = if checks_chain {
            let roots = Arc::new(self.trust_store(home)?);
            let webpki =
                rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
                    .build()
                    .map_err(|e| format!("sslrootcert: {e}"))?;
            if self.mode == SslMode::VerifyFull {
                builder.with_webpki_verifier(webpki)
            } else {
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(ChainOnly(webpki)))
            }
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(TrustAnything(provider)))
        };
        let config = match (&self.client_cert, &self.client_key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                let chain =
                    weir_tls::pem::certificates(cert).map_err(|e| format!("sslcert: {e}"))?;
                let key = weir_tls::pem::private_key(key).map_err(|e| format!("sslkey: {e}"))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("sslcert: {e}"))?
            }
            _ => return Err("sslcert and sslkey: a client certificate needs both".into()),
        };
        Ok(MakeRustlsConnect::new(config))
    }

    fn trust_store(&self, home: &str) -> Result<rustls::RootCertStore, String> {
        let store = match self.root_cert.as_deref() {
            Some("system") => weir_tls::pem::trust_store(None),
            Some(path) => weir_tls::pem::trust_store(Some(path)),
            None => {
                let default = format!("{home}/.postgresql/root.crt");
                if !std::path::Path::new(&default).exists() {
                    return Err(format!(
                        "sslmode={}: root certificate file \"{default}\" does not exist; name the \
                         CA file with sslrootcert=PATH, trust the system's CAs with \
                         sslrootcert=system, or use sslmode=require to skip the check",
                        self.mode_name()
                    ));
                }
                weir_tls::pem::trust_store(Some(&default))
            }
        };
        store.map_err(|e| format!("sslrootcert: {e}"))
    }

    fn mode_name(&self) -> &'static str {
        match self.mode {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// `url` without its TLS options, and those options.
pub fn split_tls_options(url: &str) -> Result<(String, TlsOptions), String> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        split_url(url)
    } else {
        split_key_values(url)
    }
}

fn split_url(url: &str) -> Result<(String, TlsOptions), String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), TlsOptions::from_pairs(&[])?));
    };
    let mut taken = Vec::new();
    let mut kept = Vec::new();
    for parameter in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = parameter.split_once('=').unwrap_or((parameter, ""));
        if TLS_KEYS.contains(&key) {
            taken.push((key.to_string(), percent_decode(value)?));
        } else {
            kept.push(parameter);
        }
    }
    let rest = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, TlsOptions::from_pairs(&taken)?))
}

fn percent_decode(value: &str) -> Result<String, String> {
    let bytes = value.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = value
                .get(index + 1..index + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("url: bad percent-encoding in '{value}'"))?;
            decoded.push(hex);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).map_err(|_| format!("url: '{value}' is not UTF-8"))
}

/// libpq's `key=value key='quoted \' value'` form.
fn split_key_values(text: &str) -> Result<(String, TlsOptions), String> {
    let mut taken = Vec::new();
    let mut kept = Vec::new();
    for (key, value) in key_values(text)? {
        if TLS_KEYS.contains(&key.as_str()) {
            taken.push((key, value));
        } else {
            let quoted = value.replace('\\', "\\\\").replace('\'', "\\'");
            kept.push(format!("{key}='{quoted}'"));
        }
    }
    Ok((kept.join(" "), TlsOptions::from_pairs(&taken)?))
}

fn key_values(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let key: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !c.is_whitespace())).collect();
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(format!("url: '{key}' has no '=value'"));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => return Err(format!("url: the value of '{key}' has no closing quote")),
                    Some('\'') => break,
                    Some('\\') => value.extend(chars.next()),
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn url_options_are_taken_out_and_the_rest_is_kept() {
        let (rest, options) = split_tls_options(
            "postgres://weir@db:5432/analytics?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&connect_timeout=3",
        )
        .unwrap();
        assert_eq!(
            rest,
            "postgres://weir@db:5432/analytics?application_name=x&connect_timeout=3"
        );
        assert_eq!(options.mode, SslMode::VerifyFull);
        assert_eq!(options.root_cert.as_deref(), Some("/etc/ca.pem"));
        rest.parse::<tokio_postgres::Config>().unwrap();

        let (rest, options) = split_tls_options("postgres://db/x?sslmode=require").unwrap();
        assert_eq!(
            (rest.as_str(), options.mode),
            ("postgres://db/x", SslMode::Require)
        );
        let (_, options) = split_tls_options("postgresql://db/x").unwrap();
        assert_eq!(options.mode, SslMode::Prefer, "libpq's default");
        assert!(split_tls_options("postgres://db/x?sslmode=strict")
            .unwrap_err()
            .contains("verify-full"));
        assert!(split_tls_options("postgres://db/x?sslrootcert=%zz").is_err());
    }

    #[test]
    fn key_value_options_are_taken_out_and_quoting_survives() {
        let (rest, options) = split_tls_options(
            "host=db user = weir password='it\\'s secret' sslmode=verify-ca sslrootcert='/etc/my ca.pem'",
        )
        .unwrap();
        assert_eq!(rest, "host='db' user='weir' password='it\\'s secret'");
        assert_eq!(options.mode, SslMode::VerifyCa);
        assert_eq!(options.root_cert.as_deref(), Some("/etc/my ca.pem"));
        let config: tokio_postgres::Config = rest.parse().unwrap();
        assert_eq!(config.get_password(), Some(&b"it's secret"[..]));
        assert!(split_tls_options("host=db password='open").is_err());
        assert!(split_tls_options("host").is_err());
    }

    #[test]
    fn modes_map_to_the_driver_and_to_the_checks() {
        let options = |mode| TlsOptions {
            mode,
            root_cert: None,
            client_cert: None,
            client_key: None,
        };
        assert_eq!(
            options(SslMode::Disable).driver_mode(),
            DriverSslMode::Disable
        );
        assert_eq!(options(SslMode::Allow).driver_mode(), DriverSslMode::Prefer);
        assert_eq!(
            options(SslMode::VerifyCa).driver_mode(),
            DriverSslMode::Require
        );
        // No CA to check against: refused with the way out, not a handshake that cannot succeed.
        let error = options(SslMode::VerifyFull)
            .connector_in("/nonexistent-home")
            .err()
            .unwrap();
        assert!(error.contains("sslrootcert=system"), "{error}");
        options(SslMode::Require).connector().unwrap();
        let mut half = options(SslMode::Prefer);
        half.client_cert = Some("/etc/cert.pem".into());
        assert!(half.connector().err().unwrap().contains("needs both"));
    }
}
