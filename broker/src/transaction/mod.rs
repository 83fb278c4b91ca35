//! Transactions (KIP-98, KIP-447, KIP-890): the transaction coordinator.
//!
//! - `error`: what the coordinator and the state machine refuse ([`TxnError`]).
//! - `state`: one transactional id as a pure state machine (Empty → Ongoing → Prepare* →
//!   Complete*), fencing by epoch, timeouts.
//! - `records`: its `__transaction_state` records (Kafka's format).
//! - `coordinator`: the service — persists each decision (replicated, in a cluster) before
//!   acting on it, follows the leadership of `__transaction_state` partitions, finishes decided
//!   transactions, aborts timed-out ones.
//! - `markers`: COMMIT/ABORT markers to every partition of a transaction, at its leader (here,
//!   or with WriteTxnMarkers); on `__consumer_offsets` they apply or drop pending offsets.
//! - `verify`: a partition leader checking a transactional write with the coordinator of its
//!   transaction (KIP-890 part 1), here or on another broker.
//! - `channel`: connections to the other brokers (markers; verification of transactional
//!   writes with the coordinator of their transaction).
//!
//! Partitions keep their side (open transactions, the last stable offset, the aborted index) in
//! the log and producer state; a transactional produce is accepted only for a partition the
//! producer's open transaction added (KIP-890 part 1 — asked of the coordinator, wherever it is).

pub mod channel;
pub mod coordinator;
pub mod error;
pub mod markers;
pub mod records;
pub mod state;
pub mod verify;

pub use channel::BrokerChannel;
pub use coordinator::{TransactionCoordinator, TransactionSettings, TxnServices};
pub use error::TxnError;
