//! Client quotas (KIP-13, KIP-55, KIP-546): how fast one user or client id may produce and
//! consume, so that one client cannot take the whole broker.
//!
//! - `entity`: who a quota is for (a user, a client id or both; a name or the type's default),
//!   the validation of AlterClientQuotas entries, and Kafka's precedence when a connection's
//!   (user, client id) is matched against what is set.
//! - `store`: the quotas set, kept by a broker running alone in `meta/client-quotas.json`
//!   (replaced atomically and durably).
//! - `throttle`: rates over Kafka's sample windows (`quota.window.num` windows of
//!   `quota.window.size.seconds`) and the throttle time a request earns over its quota.
//!
//! Data flow: AlterClientQuotas → `store` (validated whole first). A Produce records its request
//! bytes, a Fetch its response bytes, against the quota that applies to the connection; over
//! it, the response carries `throttle_time_ms` and the connection reads nothing more from the
//! client until that time has passed (Kafka's muting, KIP-219) — data is never dropped.
//!
//! Enforced: `producer_byte_rate`, `consumer_byte_rate`. Kafka's `request_percentage`,
//! `controller_mutation_rate` and `connection_creation_rate` (per IP) are refused by
//! AlterClientQuotas with the reason until they are enforced, rather than accepted and ignored.

pub mod entity;
pub mod store;
pub mod throttle;

pub use entity::{EntityName, QuotaEntity, QuotaKey};
pub use store::{QuotaSet, QuotaStore};
pub use throttle::QuotaSensors;
