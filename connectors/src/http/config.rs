//! The `http` source's YAML settings.

use serde::{Deserialize, Serialize};

use crate::weblog::LogFormat;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSourceConfig {
    /// Address to listen on, e.g. `0.0.0.0:8080`.
    pub listen: String,
    /// How each line of a body is parsed (`json` for NDJSON).
    pub format: LogFormat,
    /// Larger bodies are refused with 413.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// Bodies being written at once, in bytes; beyond it requests get 429.
    #[serde(default = "default_max_pending_bytes")]
    pub max_pending_bytes: usize,
    /// Bodies with more lines are refused with 413.
    #[serde(default = "default_max_lines")]
    pub max_lines: usize,
    /// Open connections; further clients wait (in the kernel's backlog) until one closes.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// A connection that sends nothing for this long (stalled headers or body, or idle between
    /// requests) is closed, and a body must arrive whole within it (else 408). Above the time a
    /// write may take to be acknowledged.
    #[serde(default = "default_read_timeout_seconds")]
    pub read_timeout_seconds: u64,
    /// The `Retry-After` of 429 and 503 answers.
    #[serde(default = "default_retry_after_seconds")]
    pub retry_after_seconds: u64,
    /// HTTPS instead of HTTP.
    #[serde(default)]
    pub tls: Option<HttpTlsConfig>,
    /// Requests without accepted credentials are answered 401.
    #[serde(default)]
    pub auth: Option<HttpAuthConfig>,
}

/// The endpoint's certificate (PEM files, followed when they change: cert-manager's `tls.crt`,
/// `tls.key` and `ca.crt` of a Secret fit as they are).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpTlsConfig {
    pub certificate_file: String,
    pub key_file: String,
    /// When given, clients must present a certificate signed by one of these CAs (mTLS).
    #[serde(default)]
    pub client_ca_file: Option<String>,
}

/// Credentials files (see `http::auth`): at least one.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpAuthConfig {
    /// One token a line; clients send `Authorization: Bearer <token>`.
    #[serde(default)]
    pub bearer_tokens_file: Option<String>,
    /// `user:password` lines; clients send `Authorization: Basic …`.
    #[serde(default)]
    pub basic_users_file: Option<String>,
}

fn default_max_body_bytes() -> usize {
    10 << 20
}
fn default_max_pending_bytes() -> usize {
    64 << 20
}
fn default_max_lines() -> usize {
    100_000
}
fn default_max_connections() -> usize {
    1024
}
fn default_read_timeout_seconds() -> u64 {
    60
}
fn default_retry_after_seconds() -> u64 {
    1
}

impl HttpSourceConfig {
    pub fn new(listen: &str, format: LogFormat) -> Self {
        HttpSourceConfig {
            listen: listen.into(),
            format,
            max_body_bytes: default_max_body_bytes(),
            max_pending_bytes: default_max_pending_bytes(),
            max_lines: default_max_lines(),
            max_connections: default_max_connections(),
            read_timeout_seconds: default_read_timeout_seconds(),
            retry_after_seconds: default_retry_after_seconds(),
            tls: None,
            auth: None,
        }
    }

    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.listen.parse::<std::net::SocketAddr>().is_err() {
            problems.push(format!(
                "listen: '{}' is not HOST:PORT (an IP address and a port)",
                self.listen
            ));
        }
        if self.max_body_bytes == 0 || self.max_pending_bytes < self.max_body_bytes {
            problems.push(
                "max_pending_bytes: must be at least max_body_bytes (and both positive)".into(),
            );
        }
        if self.max_lines == 0 || self.max_connections == 0 || self.read_timeout_seconds == 0 {
            problems.push(
                "max_lines, max_connections and read_timeout_seconds: must be positive".into(),
            );
        }
        if let Some(tls) = &self.tls {
            for (field, path) in [
                ("certificate_file", Some(&tls.certificate_file)),
                ("key_file", Some(&tls.key_file)),
                ("client_ca_file", tls.client_ca_file.as_ref()),
            ] {
                if let Some(path) = path.filter(|p| !std::path::Path::new(p).is_file()) {
                    problems.push(format!("tls.{field}: {path} is not a file"));
                }
            }
        }
        if let Some(auth) = &self.auth {
            let files = [
                ("bearer_tokens_file", &auth.bearer_tokens_file),
                ("basic_users_file", &auth.basic_users_file),
            ];
            if files.iter().all(|(_, path)| path.is_none()) {
                problems.push("auth: name bearer_tokens_file or basic_users_file (or both)".into());
            }
            for (field, path) in files {
                if let Some(path) = path.as_ref().filter(|p| !std::path::Path::new(p).is_file()) {
                    problems.push(format!("auth.{field}: {path} is not a file"));
                }
            }
        }
        problems
    }
}

#[cfg(feature = "runtime")]
impl crate::connector::SourceConnector for HttpSourceConfig {
    fn problems(&self) -> Vec<String> {
        HttpSourceConfig::problems(self)
    }

    fn format(&self) -> LogFormat {
        self.format
    }

    fn open(&self) -> Result<Box<dyn crate::source::Source>, crate::ConnectorError> {
        Err(crate::ConnectorError::Config(
            "the http source is served, not polled".into(),
        ))
    }
}
