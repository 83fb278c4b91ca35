//! The connectors against real counterparts: the HTTP source's answers and security, the kafka
//! source and sink against Weir's broker in-process, the postgres sink against a real
//! PostgreSQL (`WEIR_TEST_POSTGRES_URL`; scripts/test.sh starts one).
//!
//! One test binary for all of them (each file used to link DataFusion and librdkafka again).

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed

mod http_source;
mod http_source_security;
mod kafka_sink;
mod kafka_source;
mod postgres;
