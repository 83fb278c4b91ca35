//! The Kafka protocol client for the admin calls where rdkafka falls short (rust-rdkafka 0.39
//! drops per-resource errors of AlterConfigs, so a refused config change would be reported as
//! success). It lives in the broker crate, where followers fetch with it.

pub use weir_broker::client::ProtocolClient;
