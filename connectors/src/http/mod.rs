//! The `http` source: `POST /ingest/<pipeline>` with NDJSON or plain lines. A request is
//! answered 200 only after every record it carried is durably acknowledged by the cluster;
//! 400 with the line number when a JSON line is not an object (nothing of that request is
//! kept); 413 over `max_body_bytes` or `max_lines`; 429 with `Retry-After` when more than
//! `max_pending_bytes` are being written (backpressure); 408 when a body does not arrive whole
//! within `read_timeout_seconds`; 503 with `Retry-After` when the
//! cluster does not acknowledge. Delivery is at-least-once: a client that retries after a lost
//! answer sends its lines again.
//!
//! Bounds: a body's bytes are reserved against `max_pending_bytes` as they arrive (a client that
//! trickles holds only what it sent) and the body must arrive whole within
//! `read_timeout_seconds` (408); the listener (`listener.rs`) holds at most `max_connections`
//! connections and closes one that is silent for `read_timeout_seconds`.
//!
//! Security: `tls:` serves HTTPS (PEM files followed when they change; `client_ca_file` requires
//! client certificates), `auth:` requires a bearer token or a basic user (`auth.rs`); a request
//! without accepted credentials is answered 401 with `WWW-Authenticate` before anything else.
//!
//! Modules: `config` (YAML), `serve` (start-up: files loaded, listener, routes), `listener`
//! (bounds, TLS handshakes), `auth` (credentials), `source` (the route's answers).

#[cfg(feature = "runtime")]
mod auth;
mod config;
#[cfg(feature = "runtime")]
mod listener;
#[cfg(feature = "runtime")]
mod serve;
#[cfg(feature = "runtime")]
mod source;

pub use config::{HttpAuthConfig, HttpSourceConfig, HttpTlsConfig};
#[cfg(feature = "runtime")]
pub use serve::serve;
#[cfg(feature = "runtime")]
pub use source::{IngestReport, IngestTarget};
