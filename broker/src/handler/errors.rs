//! The one place where internal errors become Kafka error codes.

use kafka_protocol::ResponseError;

use crate::cluster::ControllerError;
use crate::error::{BatchError, BrokerError, ConfigError, LogError};
use crate::producer::ProducerError;

/// The Kafka error for a broker error. Exhaustive on purpose: a new variant must be mapped here.
pub fn error_for(error: &BrokerError) -> ResponseError {
    match error {
        BrokerError::UnknownTopicOrPartition { .. } | BrokerError::UnknownTopic { .. } => {
            ResponseError::UnknownTopicOrPartition
        }
        BrokerError::UnknownTopicId { .. } => ResponseError::UnknownTopicId,
        BrokerError::InvalidTopic { .. } => ResponseError::InvalidTopicException,
        BrokerError::TopicAlreadyExists { .. } => ResponseError::TopicAlreadyExists,
        BrokerError::InvalidPartitions { .. } => ResponseError::InvalidPartitions,
        BrokerError::InvalidReplicationFactor { .. } => ResponseError::InvalidReplicationFactor,
        BrokerError::InvalidReplicaAssignment(_) => ResponseError::InvalidReplicaAssignment,
        BrokerError::InvalidRequest(_) => ResponseError::InvalidRequest,
        BrokerError::Config(config) => config_error(config),
        BrokerError::Log(log) => log_error(log),
        BrokerError::ShuttingDown => ResponseError::NotLeaderOrFollower,
        BrokerError::Controller(controller) => controller_error(controller),
        BrokerError::ControllerUnavailable(_) => ResponseError::RequestTimedOut,
    }
}

fn controller_error(error: &ControllerError) -> ResponseError {
    match error {
        ControllerError::InvalidReplicationFactor { .. } => ResponseError::InvalidReplicationFactor,
        ControllerError::InvalidPartitions { .. }
        | ControllerError::PartitionsNotIncreased { .. } => ResponseError::InvalidPartitions,
        ControllerError::UnknownTopic { .. } => ResponseError::UnknownTopicOrPartition,
        ControllerError::NoReassignmentInProgress { .. } => ResponseError::NoReassignmentInProgress,
        ControllerError::InvalidReplicaAssignment { .. } => ResponseError::InvalidReplicaAssignment,
        ControllerError::TopicAlreadyExists { .. } => ResponseError::TopicAlreadyExists,
        ControllerError::UnknownTopicId { .. } => ResponseError::UnknownTopicId,
        ControllerError::UnknownPartition { .. } => ResponseError::UnknownTopicOrPartition,
        ControllerError::UnknownBroker { .. } => ResponseError::BrokerIdNotRegistered,
        ControllerError::StaleBrokerEpoch { .. } => ResponseError::StaleBrokerEpoch,
        ControllerError::DuplicateBrokerRegistration { .. } => {
            ResponseError::DuplicateBrokerRegistration
        }
        ControllerError::NotLeader { .. } => ResponseError::NotLeaderOrFollower,
        ControllerError::InvalidUpdateVersion { .. } => ResponseError::InvalidUpdateVersion,
        ControllerError::IneligibleReplica { .. } => ResponseError::IneligibleReplica,
        ControllerError::VoterCannotObserve { .. } => ResponseError::InvalidRequest,
    }
}

fn config_error(error: &ConfigError) -> ResponseError {
    match error {
        ConfigError::Unknown { .. } | ConfigError::InvalidValue { .. } => {
            ResponseError::InvalidConfig
        }
        ConfigError::Unsupported { .. } => ResponseError::InvalidConfig,
    }
}

/// A producer id could not be handed out: storage failed, or no block from the controller yet
/// (retriable, as Kafka answers while its block is on the way).
pub fn producer_id_error(error: &crate::producer::id_manager::ProducerIdError) -> ResponseError {
    match error {
        crate::producer::id_manager::ProducerIdError::Io(error) => log_error(error),
        crate::producer::id_manager::ProducerIdError::Unavailable => {
            ResponseError::CoordinatorLoadInProgress
        }
    }
}

pub fn log_error(error: &LogError) -> ResponseError {
    match error {
        LogError::Io { .. } | LogError::CorruptCheckpoint { .. } => {
            ResponseError::KafkaStorageError
        }
        LogError::Batch(batch) => batch_error(batch),
        LogError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
        LogError::Closed | LogError::NotLeader { .. } | LogError::NotFollower => {
            ResponseError::NotLeaderOrFollower
        }
        LogError::Producer(producer) => producer_error(producer),
    }
}

pub fn batch_error(error: &BatchError) -> ResponseError {
    match error {
        BatchError::Truncated { .. }
        | BatchError::InvalidLength(_)
        | BatchError::CrcMismatch { .. } => ResponseError::CorruptMessage,
        BatchError::UnsupportedMagic(_) => ResponseError::UnsupportedForMessageFormat,
        BatchError::MoreThanOneBatch
        | BatchError::InvalidRecords(_)
        | BatchError::MissingKey { .. } => ResponseError::InvalidRecord,
        BatchError::TooLarge { .. } => ResponseError::MessageTooLarge,
        BatchError::UnknownCompression(_) => ResponseError::UnsupportedCompressionType,
        BatchError::Decompression { .. } => ResponseError::CorruptMessage,
        BatchError::DecompressedTooLarge { .. } => ResponseError::MessageTooLarge,
        BatchError::Compression { .. } => ResponseError::UnknownServerError,
    }
}

fn producer_error(error: &ProducerError) -> ResponseError {
    match error {
        ProducerError::InvalidEpoch { .. } => ResponseError::InvalidProducerEpoch,
        ProducerError::OutOfOrderSequence { .. } => ResponseError::OutOfOrderSequenceNumber,
        ProducerError::UnknownProducerId { .. } => ResponseError::UnknownProducerId,
        ProducerError::CoordinatorFenced { .. } => ResponseError::TransactionCoordinatorFenced,
    }
}

/// The code of an optional error (0 for none).
pub fn code(error: Option<ResponseError>) -> i16 {
    error.map_or(0, |e| e.code())
}
