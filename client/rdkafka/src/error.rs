//! What can go wrong talking to a cluster, carrying the operation and the client's error, and
//! [`Remedy`]: what whoever runs a job or a pipeline can do about an error (the connectors',
//! streams' and pipelines' errors answer it too).

use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("Kafka {operation}: {source}")]
    Kafka {
        operation: &'static str,
        source: KafkaError,
    },
    #[error(transparent)]
    Fenced(#[from] Fenced),
    /// An idempotent (non-transactional) checkpoint whose records were not all delivered: the
    /// positions they belong to must not be committed.
    #[error("{failed} records were not delivered (last error: {last_error})")]
    Undelivered { failed: u64, last_error: String },
    /// The cluster refused to create a topic (not because it exists: that is no error).
    #[error("cannot create topic {topic}: {code}")]
    TopicRefused {
        topic: String,
        code: RDKafkaErrorCode,
    },
}

/// What can be done about an error, as the broker's error codes say whether a client may retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// Something outside Weir is unavailable, slow or overloaded (a cluster, a database, an
    /// object store), or a newer copy took over: the same work may succeed when run again.
    Retry,
    /// The configuration, the query, an ACL or the data must change; the message says what.
    Fix,
    /// Weir broke an invariant of its own: a defect to report, with the message.
    Report,
}

impl Remedy {
    /// One line for a person reading the error.
    pub fn advice(self) -> &'static str {
        match self {
            Remedy::Retry => {
                "this may pass when run again (something it depends on was unavailable)"
            }
            Remedy::Fix => "this needs a change of configuration, query, permissions or data",
            Remedy::Report => "this is a defect in Weir: please report it with this message",
        }
    }

    /// The process exit code a supervisor can tell apart (sysexits.h): 75 (EX_TEMPFAIL) to
    /// restart, 78 (EX_CONFIG) not to restart before a change, 70 (EX_SOFTWARE) a defect.
    pub fn exit_code(self) -> u8 {
        match self {
            Remedy::Retry => 75,
            Remedy::Fix => 78,
            Remedy::Report => 70,
        }
    }
}

/// What can be done about a Kafka error code: authorization, authentication, configuration and
/// size refusals need a change; everything else (timeouts, leaders moving, coordinators
/// loading, transport) may pass when retried.
pub fn remedy_of_code(code: RDKafkaErrorCode) -> Remedy {
    use RDKafkaErrorCode as Code;
    match code {
        Code::TopicAuthorizationFailed
        | Code::GroupAuthorizationFailed
        | Code::ClusterAuthorizationFailed
        | Code::TransactionalIdAuthorizationFailed
        | Code::DelegationTokenAuthorizationFailed
        | Code::SaslAuthenticationFailed
        | Code::Authentication
        | Code::UnsupportedSASLMechanism
        | Code::UnknownTopicOrPartition
        | Code::UnknownTopic
        | Code::UnknownPartition
        | Code::InvalidTopic
        | Code::InvalidConfig
        | Code::InvalidPartitions
        | Code::InvalidReplicationFactor
        | Code::InvalidReplicaAssignment
        | Code::PolicyViolation
        | Code::MessageSizeTooLarge
        | Code::InvalidRecord
        | Code::MessageBatchTooLarge
        | Code::OffsetMetadataTooLarge
        | Code::InvalidArgument
        | Code::UnsupportedVersion
        | Code::UnsupportedForMessageFormat
        | Code::UnsupportedCompressionType
        | Code::InvalidRequiredAcks
        | Code::InvalidTransactionTimeout
        | Code::InvalidSessionTimeout => Remedy::Fix,
        _ => Remedy::Retry,
    }
}

/// What can be done about a librdkafka error: its configuration refused, or what its error
/// code says (none: a local failure, which may pass when retried).
pub fn remedy_of_kafka(error: &KafkaError) -> Remedy {
    match error {
        KafkaError::ClientConfig(..) | KafkaError::ClientCreation(_) => Remedy::Fix,
        other => other
            .rdkafka_error_code()
            .map_or(Remedy::Retry, remedy_of_code),
    }
}

/// A newer incarnation of this writer took over (its producer fenced this one, or it moved the
/// offsets this one started from): what this one has not committed must be dropped, and it
/// must not retry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fenced by a newer incarnation: {reason}")]
pub struct Fenced {
    pub reason: String,
}

impl Fenced {
    pub fn new(reason: impl Into<String>) -> Self {
        Fenced {
            reason: reason.into(),
        }
    }
}

impl ClientError {
    /// A client error of `operation`, for `map_err`.
    pub fn kafka(operation: &'static str) -> impl FnOnce(KafkaError) -> ClientError {
        move |source| ClientError::Kafka { operation, source }
    }

    /// A client error of `operation`, a fatal transactional error being [`Fenced`]: the only
    /// fatal errors a transactional producer meets in Weir's use come from a newer producer
    /// with the same transactional id (a fenced epoch).
    pub fn classify(operation: &'static str) -> impl FnOnce(KafkaError) -> ClientError {
        move |source| match &source {
            KafkaError::Transaction(error) if error.is_fatal() => {
                ClientError::Fenced(Fenced::new(error.to_string()))
            }
            _ => ClientError::Kafka { operation, source },
        }
    }

    pub fn is_fenced(&self) -> bool {
        matches!(self, ClientError::Fenced(_))
    }

    /// What can be done about it. Fenced: a newer copy owns the work now; this one, run again,
    /// rejoins and takes what is left to it.
    pub fn remedy(&self) -> Remedy {
        match self {
            ClientError::Kafka { source, .. } => remedy_of_kafka(source),
            ClientError::Fenced(_) | ClientError::Undelivered { .. } => Remedy::Retry,
            ClientError::TopicRefused { code, .. } => remedy_of_code(*code),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_need_a_change_and_unavailability_a_retry() {
        let refused = ClientError::TopicRefused {
            topic: "t".into(),
            code: RDKafkaErrorCode::TopicAuthorizationFailed,
        };
        assert_eq!(refused.remedy(), Remedy::Fix);
        let timed_out = ClientError::Kafka {
            operation: "producing",
            source: KafkaError::MessageProduction(RDKafkaErrorCode::MessageTimedOut),
        };
        assert_eq!(timed_out.remedy(), Remedy::Retry);
        let no_leader = ClientError::Kafka {
            operation: "fetching",
            source: KafkaError::MessageConsumption(RDKafkaErrorCode::NotLeaderForPartition),
        };
        assert_eq!(no_leader.remedy(), Remedy::Retry);
        let misconfigured = ClientError::Kafka {
            operation: "creating the consumer",
            source: KafkaError::ClientConfig(
                rdkafka::types::RDKafkaConfRes::RD_KAFKA_CONF_UNKNOWN,
                "no such property".into(),
                "bogus.property".into(),
                "1".into(),
            ),
        };
        assert_eq!(misconfigured.remedy(), Remedy::Fix);
        assert_eq!(
            ClientError::Fenced(Fenced::new("epoch")).remedy(),
            Remedy::Retry
        );
    }

    #[test]
    fn exit_codes_tell_the_remedies_apart() {
        let codes = [Remedy::Retry, Remedy::Fix, Remedy::Report].map(Remedy::exit_code);
        assert_eq!(codes, [75, 78, 70]);
    }
}
