//! Bridges to other Kafka clusters (real Apache Kafka, Redpanda, another Weir) through rdkafka,
//! configured by `weir_client::ClientSettings`.
//!
//! - `kafka` source: reads a topic of a far cluster (read_committed). Its positions — the next
//!   offset of every far partition — are committed in the pipeline's positions topic in the same
//!   transaction as the records they produced, so a restarted pipeline resumes exactly there.
//! - `kafka` sink: writes rows as JSON records to a topic of a far cluster with a transactional
//!   producer; the input offsets they cover go, in the same transaction, to a compacted offsets
//!   topic on that cluster, read back on open. A read_committed consumer of the far topic sees
//!   every row exactly once.

mod config;
#[cfg(feature = "runtime")]
mod sink;
#[cfg(feature = "runtime")]
mod source;

pub use config::{KafkaSinkConfig, KafkaSourceConfig, StartAt};
#[cfg(feature = "runtime")]
pub use sink::KafkaSink;
#[cfg(feature = "runtime")]
pub use source::KafkaSource;
