//! The crash tests' input side: an idempotent producer (librdkafka retries without duplicates),
//! so what the oracle counts is exactly what reached the input topics.

use rdkafka::config::ClientConfig;
use rdkafka::producer::{DefaultProducerContext, ThreadedProducer};

pub(crate) fn idempotent_producer(bootstrap: &str) -> ThreadedProducer<DefaultProducerContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .create()
        .expect("an idempotent producer")
}
