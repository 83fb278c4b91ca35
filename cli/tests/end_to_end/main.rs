//! The `weir` binary end to end: every test here starts `weir` processes (brokers, clusters,
//! pipelines, stream jobs, `weir sql`) and drives them with real clients, many of them killing
//! processes with -9 and checking what survived against an oracle.
//!
//! One test binary for all of them: each integration-test file used to be a binary of its own,
//! and each linked DataFusion and librdkafka again (scripts/build_budget.py counts them).
//! `support/` holds what several tests share (broker and job processes, the history checker,
//! the workload, the cluster nodes and network namespaces).
//!
//! At most two tests run at once (`support::test_slot`): each drives processes, mostly waiting
//! for them (a third of a core on average over the whole binary, measured one at a time), and
//! several check progress against deadlines, which more at once would make a matter of load.

#![allow(clippy::unwrap_used)] // a test that cannot unwrap has failed
#![allow(clippy::too_many_lines)] // a test is one scenario, read top to bottom

mod support;

mod acls;
mod broker_tls;
mod cluster_failover;
mod cluster_partition;
mod cluster_processes;
mod crash;
mod exit_status;
mod http_pipeline;
mod job_crash;
mod job_metrics;
mod kafka_bridge;
mod nexmark;
mod pipeline_copies;
mod pipeline_crash;
mod pipeline_metrics;
mod pipeline_streams;
mod pipeline_tables;
mod pipeline_view;
mod pipeline_windows;
mod session_crash;
mod sql;
mod table_crash;
mod users;
mod view_crash;
mod window_crash;
