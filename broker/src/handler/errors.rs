//! The one place where internal errors become Kafka error codes. Every layer below the
//! handlers speaks its own errors (`BrokerError`, `LogError`, `GroupError`, `TxnError`, …);
//! each is mapped here by an exhaustive match, so a new variant cannot go unmapped. Handlers
//! use `ResponseError::from(error)` (or `?`) and [`code`].

use kafka_protocol::ResponseError;

use crate::cluster::ControllerError;
use crate::config::ConfigError;
use crate::error::BrokerError;
use crate::group::{GroupDeleteError, GroupError};
use crate::log::error::{BatchError, LogError};
use crate::partition::role::ReplicationError;
use crate::partition::LeaderEpochMismatch;
use crate::producer::ProducerError;
use crate::transaction::markers::MarkerWriteError;
use crate::transaction::TxnError;

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
        // Kafka answers INVALID_REQUEST for every refused broker config change.
        BrokerError::BrokerConfig(_) => ResponseError::InvalidRequest,
        BrokerError::Log(log) => log_error(log),
        BrokerError::ShuttingDown => ResponseError::NotLeaderOrFollower,
        BrokerError::Controller(controller) => controller_error(controller),
        BrokerError::ControllerUnavailable(_) => ResponseError::RequestTimedOut,
        BrokerError::DataDirectory { .. } => ResponseError::KafkaStorageError,
    }
}

fn controller_error(error: &ControllerError) -> ResponseError {
    match error {
        ControllerError::ExcessivelyLargeBatch { .. } => ResponseError::PolicyViolation,
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
        ConfigError::Unsupported { .. } | ConfigError::OpenToAnonymous { .. } => {
            ResponseError::InvalidConfig
        }
        ConfigError::NotDynamic { .. } => ResponseError::InvalidRequest,
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
        LogError::Io { .. } | LogError::CorruptCheckpoint { .. } | LogError::Offline { .. } => {
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
        BatchError::TimestampsOutOfRange { .. } => ResponseError::InvalidTimestamp,
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

impl From<LeaderEpochMismatch> for ResponseError {
    fn from(error: LeaderEpochMismatch) -> Self {
        match error {
            LeaderEpochMismatch::Unknown { .. } => ResponseError::UnknownLeaderEpoch,
            LeaderEpochMismatch::Fenced { .. } => ResponseError::FencedLeaderEpoch,
        }
    }
}

impl From<GroupError> for ResponseError {
    fn from(error: GroupError) -> Self {
        match error {
            GroupError::Unavailable => ResponseError::CoordinatorNotAvailable,
            GroupError::NotCoordinator { .. } => ResponseError::NotCoordinator,
            GroupError::UnknownMember { .. } => ResponseError::UnknownMemberId,
            GroupError::FencedInstance { .. } => ResponseError::FencedInstanceId,
            GroupError::MemberIdRequired { .. } => ResponseError::MemberIdRequired,
            GroupError::InvalidSessionTimeout { .. } => ResponseError::InvalidSessionTimeout,
            GroupError::InconsistentProtocol => ResponseError::InconsistentGroupProtocol,
            GroupError::Full { .. } => ResponseError::GroupMaxSizeReached,
            GroupError::IllegalGeneration { .. } => ResponseError::IllegalGeneration,
            GroupError::RebalanceInProgress => ResponseError::RebalanceInProgress,
            GroupError::NotEmpty => ResponseError::NonEmptyGroup,
            GroupError::NotFound { .. } => ResponseError::GroupIdNotFound,
            GroupError::SubscribedToTopic { .. } => ResponseError::GroupSubscribedToTopic,
        }
    }
}

impl From<GroupDeleteError> for ResponseError {
    fn from(error: GroupDeleteError) -> Self {
        match error {
            GroupDeleteError::Refused(refused) => refused.into(),
            GroupDeleteError::Storage(storage) => error_for(&storage),
        }
    }
}

impl From<ReplicationError> for ResponseError {
    fn from(error: ReplicationError) -> Self {
        match error {
            ReplicationError::NotLeader | ReplicationError::NotAReplica { .. } => {
                ResponseError::NotLeaderOrFollower
            }
            ReplicationError::NotEnoughReplicasAfterAppend { .. } => {
                ResponseError::NotEnoughReplicasAfterAppend
            }
        }
    }
}

impl From<TxnError> for ResponseError {
    fn from(error: TxnError) -> Self {
        match error {
            TxnError::InvalidRequest { .. } => ResponseError::InvalidRequest,
            TxnError::InvalidTimeout { .. } => ResponseError::InvalidTransactionTimeout,
            TxnError::UnknownTransactionalId | TxnError::ProducerIdMismatch { .. } => {
                ResponseError::InvalidProducerIdMapping
            }
            TxnError::Fenced { .. } => ResponseError::ProducerFenced,
            TxnError::Concurrent => ResponseError::ConcurrentTransactions,
            TxnError::InvalidState { .. } | TxnError::NotInTransaction { .. } => {
                ResponseError::InvalidTxnState
            }
            TxnError::NotCoordinator => ResponseError::NotCoordinator,
            TxnError::CoordinatorUnavailable => ResponseError::CoordinatorNotAvailable,
            TxnError::UnknownPartition { .. } => ResponseError::UnknownTopicOrPartition,
            TxnError::NotAttempted => ResponseError::OperationNotAttempted,
            TxnError::ProducerIds(ids) => producer_id_error(&ids),
        }
    }
}

impl From<MarkerWriteError> for ResponseError {
    fn from(error: MarkerWriteError) -> Self {
        match error {
            MarkerWriteError::UnknownPartition { .. } => ResponseError::UnknownTopicOrPartition,
            MarkerWriteError::NotLeader => ResponseError::NotLeaderOrFollower,
            MarkerWriteError::NotEnoughReplicas(_) => ResponseError::NotEnoughReplicas,
            MarkerWriteError::Log(log) => log_error(&log),
            MarkerWriteError::Replication(replication) => replication.into(),
            MarkerWriteError::TimedOut { .. } => ResponseError::RequestTimedOut,
        }
    }
}

/// The code of an optional error (0 for none).
pub fn code<E: Into<ResponseError>>(error: Option<E>) -> i16 {
    error.map_or(0, |e| e.into().code())
}

/// A fenced producer epoch as a client of `version` knows it: PRODUCER_FENCED came with
/// KIP-588 (`first_version`: InitProducerId v4, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
/// v2); before that the same fence is INVALID_PRODUCER_EPOCH, as Kafka answers it. Clients
/// treat either as fatal only at the version that expects it.
pub fn fenced_for_version(error: ResponseError, version: i16, first_version: i16) -> ResponseError {
    match error {
        ResponseError::ProducerFenced if version < first_version => {
            ResponseError::InvalidProducerEpoch
        }
        other => other,
    }
}
