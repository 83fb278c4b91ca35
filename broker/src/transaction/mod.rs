//! Transactions (KIP-98, KIP-447, KIP-890 part 1): the transaction coordinator.
//!
//! - `state`: one transactional id as a pure state machine (Empty → Ongoing → Prepare* →
//!   Complete*), fencing by epoch, timeouts.
//! - `records`: its `__transaction_state` records (Kafka's format).
//! - `coordinator`: the service — persists each decision before acting on it, writes the
//!   markers to every partition of a transaction (and completes pending offsets in
//!   `__consumer_offsets`), finishes decided transactions after a restart, aborts timed-out ones.
//!
//! Partitions keep their side (open transactions, the last stable offset, the aborted index) in
//! the log and producer state; a transactional produce is accepted only for a partition the
//! producer's open transaction added (`TransactionCoordinator::verify`).
//!
//! Not yet: KIP-890 part 2 (an epoch bump per transaction, EndTxn v5), DescribeProducers.

pub mod coordinator;
pub mod records;
pub mod state;

pub use coordinator::{TransactionCoordinator, TransactionSettings, TxnServices};
