//! Why a producer batch is refused (the log's append reports it as a batch error).

/// Why a producer batch is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProducerError {
    #[error(
        "producer {producer_id} epoch {epoch} is older than the current epoch {current_epoch}"
    )]
    InvalidEpoch {
        producer_id: i64,
        epoch: i16,
        current_epoch: i16,
    },
    #[error(
        "out of order sequence from producer {producer_id} (epoch {epoch}): batch starts at \
         {first_sequence}, expected {expected}"
    )]
    OutOfOrderSequence {
        producer_id: i64,
        epoch: i16,
        first_sequence: i32,
        expected: i32,
    },
    #[error(
        "transaction marker from coordinator epoch {coordinator_epoch} for producer {producer_id} \
         is older than the last one ({current_coordinator_epoch})"
    )]
    CoordinatorFenced {
        producer_id: i64,
        coordinator_epoch: i32,
        current_coordinator_epoch: i32,
    },
    #[error(
        "producer {producer_id} is unknown to this partition and its batch starts at sequence \
         {first_sequence}, not 0 (its state expired or was lost): re-initialise the producer"
    )]
    UnknownProducerId {
        producer_id: i64,
        first_sequence: i32,
    },
}
