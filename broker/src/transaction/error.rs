//! What the transaction coordinator and a transactional id's state machine refuse, with the
//! facts of the refusal. `handler::errors` turns each into its Kafka error code.

use crate::producer::id_manager::ProducerIdError;
use crate::transaction::state::TxnState;

#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    #[error("invalid request: {reason}")]
    InvalidRequest { reason: &'static str },
    #[error("transaction timeout {timeout_ms} ms is not within (0, {max_timeout_ms}]")]
    InvalidTimeout {
        timeout_ms: i32,
        max_timeout_ms: i32,
    },
    /// The coordinator holds no state for the transactional id.
    #[error("the transactional id has no producer id")]
    UnknownTransactionalId,
    #[error("producer id {requested} is not the transactional id's {current}")]
    ProducerIdMismatch { requested: i64, current: i64 },
    /// A newer incarnation of the producer took the transactional id.
    #[error("producer epoch {requested} is fenced by epoch {current}")]
    Fenced { requested: i16, current: i16 },
    /// Another change of the id (or the end of its transaction) is under way.
    #[error("another change of the transactional id is under way")]
    Concurrent,
    #[error("not allowed while the transaction is {state:?}")]
    InvalidState { state: TxnState },
    /// This broker does not (or no longer) coordinate the id's `__transaction_state` partition.
    #[error("this broker does not coordinate the transactional id")]
    NotCoordinator,
    /// The state could not be written or replicated now; the client retries.
    #[error("the coordinator cannot persist the transaction state now")]
    CoordinatorUnavailable,
    /// A transactional write to a partition the producer's open transaction does not hold.
    #[error("the producer's open transaction does not hold {topic}-{partition}")]
    NotInTransaction { topic: String, partition: i32 },
    #[error("partition {topic}-{partition} does not exist")]
    UnknownPartition { topic: String, partition: i32 },
    /// Another partition of the same request was refused, so this one was not added.
    #[error("not attempted: another partition of the request was refused")]
    NotAttempted,
    #[error("no producer id: {0}")]
    ProducerIds(#[from] ProducerIdError),
}
