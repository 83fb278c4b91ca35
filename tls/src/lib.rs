//! Weir's rustls building blocks, shared by the broker (its Kafka client and listeners) and the
//! connectors (the PostgreSQL sink, the HTTP ingest endpoint).
//!
//! - [`provider`]: the one crypto provider (ring; no cmake/aws-lc build).
//! - [`pem`]: certificate chains, private keys and trust stores read from PEM, with errors that
//!   name the file.
//! - [`verify`]: the two weaker server checks users ask for by name — the chain without the host
//!   name ([`verify::ChainOnly`]: Kafka's `ssl.endpoint.identification.algorithm=none`,
//!   libpq's `sslmode=verify-ca`) and none at all ([`verify::TrustAnything`]: librdkafka's
//!   `enable.ssl.certificate.verification=false`, libpq's `sslmode=require`). Both still check
//!   the handshake's signatures, so the peer holds the key of the certificate it shows.
//! - [`followed`]: a server certificate that follows its files (cert-manager rewrites them in
//!   place), looked at again at most once a second.

pub mod followed;
pub mod pem;
pub mod verify;

use std::sync::Arc;

pub use tokio_rustls::rustls;

/// The crypto provider every Weir TLS config is built with.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
