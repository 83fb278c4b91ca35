//! # weir-wire
//!
//! Weir's own Kafka protocol client, on the `kafka-protocol` crate: one connection to one
//! broker, one request at a time, any API at any version. Brokers use it to reach each other
//! (followers fetch from leaders, the transaction coordinator writes markers, controllers and
//! observers talk); the CLI and the compatibility tools use it for the admin calls rdkafka falls
//! short on. Works against Weir and Apache Kafka. The clients of jobs, connectors and pipelines
//! are librdkafka's, made in `weir-client` (`client/rdkafka`): this crate does not depend on
//! rdkafka, so the broker can use it.
//!
//! ## Module map
//! - [`connection`]: [`ProtocolClient`] — connect (TCP, then TLS, then the SASL login, all within
//!   the connect timeout), `call` a request and decode its answer; [`ClientError`].
//! - [`security`]: [`ClientSecurity`] — TLS and the SASL login from librdkafka's property
//!   names, so `-X` flags mean the same as to rdkafka; what cannot be honoured is refused
//!   ([`SecurityConfigError`]), not ignored.
//! - `sasl_login`: the client's side of SaslHandshake / SaslAuthenticate (PLAIN, SCRAM).
//! - [`scram_client`]: SCRAM's client messages as pure functions (RFC 5802, RFC 7677).
//! - [`mechanism`]: [`Mechanism`] and [`ScramMechanism`] with its primitives — the names and
//!   the cryptography both sides of a login share (the broker's SCRAM server derives its stored
//!   keys with the same functions).
//!
//! ## Data flow
//! `ClientSecurity::from_properties` → `ProtocolClient::connect_secured` (TCP → TLS → SASL) →
//! `call(version, request)`: header and body encoded, one length-prefixed frame written, one
//! read back (its size checked first), the correlation id matched, the body decoded.
//!
//! ## Invariants and bounds
//! A response's declared size is checked against [`MAX_RESPONSE_BYTES`] before any buffer is
//! reserved; connecting and every call have a deadline ([`DEFAULT_TIMEOUT`] unless given); a
//! SCRAM login verifies the broker's signature, so a broker without the credential cannot pass
//! for one with it; a server asking for more than [`scram_client::MAX_SERVER_ITERATIONS`] is
//! refused. Passwords are never printed (`Debug` leaves them out).

pub mod connection;
pub mod mechanism;
mod sasl_login;
pub mod scram_client;
pub mod security;

pub use connection::{
    tls_handshake, ClientError, ProtocolClient, DEFAULT_TIMEOUT, MAX_RESPONSE_BYTES,
};
pub use mechanism::{Mechanism, ScramMechanism};
pub use security::{ClientSecurity, SaslLogin, SecurityConfigError};
