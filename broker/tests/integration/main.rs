//! Integration tests: the real broker in-process on 127.0.0.1:0, driven by real Kafka clients
//! (rdkafka) and, for protocol edge cases no client will send, by raw kafka-protocol frames.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![allow(clippy::too_many_lines)] // a test is one scenario, read top to bottom

mod acl_refusals;
mod acls;
mod admin;
mod authorized_operations;
mod bad_input;
mod broker_configs;
mod cluster;
mod cluster_admin;
mod cluster_health;
mod cluster_observers;
mod cluster_security;
mod cluster_transactions;
mod common;
mod compaction;
mod damaged_files;
mod disk_faults;
mod durability;
mod exactly_once;
mod fetch;
mod groups;
mod idempotence;
mod limits;
mod listeners;
mod metadata_limits;
mod oauthbearer;
mod produce_consume;
mod quotas;
mod raw;
#[path = "../support/records.rs"]
mod records;
mod retention;
mod sasl;
mod tls;
mod transaction_v2;
mod transactions;
mod versions;
