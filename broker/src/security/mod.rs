//! Authentication: who a connection speaks for, and how a client proves it.
//!
//! - [`principal`]: `User:<name>`, `User:ANONYMOUS` where nothing was proved.
//! - [`sasl`]: the server side of PLAIN and SCRAM-SHA-256/512 exchanges, token by token.
//! - [`scram`]: SCRAM credentials (salt, iterations, StoredKey, ServerKey) and their crypto.
//! - [`jaas`]: Kafka's `sasl.jaas.config` values (PLAIN's `user_<name>` entries).
//! - [`listener`]: what one SASL listener accepts, read from the broker's properties.
//! - [`oauth`]: OAUTHBEARER tokens (JWTs) checked against a JWKS, as Kafka's validator does.
//! - [`ssl_principal`]: a client certificate's subject (RFC 2253) and `ssl.principal.mapping.rules`.
//! - [`tls`]: an SSL listener's rustls acceptor from PEM files, rebuilt when they change (the
//!   client and controller listeners share it).
//! - [`anonymous_reach`]: refuses at start-up listeners that would let connections proving
//!   nothing reach the controllers, or be super users, from beyond loopback.
//! - [`broker_identity`]: the other side — what this broker presents when it connects to
//!   other brokers and controllers (TLS files, the inter-broker SASL login), as the
//!   [`weir_wire::ClientSecurity`] its protocol client connects with.
//!
//! Data flow: a connection on a SASL listener (`server::authentication`) takes ApiVersions and
//! SaslHandshake, runs an [`sasl::Exchange`] over SaslAuthenticate requests (or raw tokens
//! after a v0 handshake) against [`sasl::Credentials`] (the stored SCRAM credentials,
//! `user_credentials`; the listener's PLAIN users), and only then serves other requests, as the
//! principal the exchange named.
//!
//! Invariants: no password is stored, only what SCRAM derives from it; a failed exchange closes
//! the connection; nothing but ApiVersions, SaslHandshake and SaslAuthenticate is handled
//! before authentication succeeds.

pub mod acl;
pub mod anonymous_reach;
pub mod broker_identity;
pub mod jaas;
pub mod listener;
pub mod oauth;
pub mod principal;
pub mod sasl;
pub mod scram;
pub mod ssl_principal;
pub mod tls;

pub use broker_identity::BrokerIdentity;
pub use principal::KafkaPrincipal;
