//! What the group coordinator and a group's state machine refuse, with the facts of the refusal.
//! `handler::errors` turns each into its Kafka error code.

use crate::error::BrokerError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// The group is being unloaded or was deleted while the request waited.
    #[error("the group is not available on this coordinator")]
    Unavailable,
    /// This broker does not lead the group's `__consumer_offsets` partition.
    #[error("this broker does not coordinate group {group_id}")]
    NotCoordinator { group_id: String },
    #[error("member {member_id} is not in the group")]
    UnknownMember { member_id: String },
    /// KIP-345: the member's `group.instance.id` belongs to a newer member now.
    #[error("member {member_id} is fenced: its group.instance.id belongs to another member")]
    FencedInstance { member_id: String },
    /// KIP-394: a new member must join again with the member id it was given.
    #[error("member id {member_id} was given; join again with it")]
    MemberIdRequired { member_id: String },
    #[error("session timeout {requested_ms} ms is outside [{min_ms}, {max_ms}]")]
    InvalidSessionTimeout {
        requested_ms: i32,
        min_ms: i32,
        max_ms: i32,
    },
    #[error("protocol type or protocols do not match the group's")]
    InconsistentProtocol,
    #[error("the group already has its maximum of {max_members} members")]
    Full { max_members: usize },
    #[error("generation {requested} is not the group's generation {current}")]
    IllegalGeneration { requested: i32, current: i32 },
    #[error("the group is rebalancing")]
    RebalanceInProgress,
    #[error("the group still has members")]
    NotEmpty,
    #[error("group {group_id} does not exist")]
    NotFound { group_id: String },
    /// OffsetDelete of a partition of a topic the group's members subscribe to.
    #[error("the group subscribes to topic {topic}")]
    SubscribedToTopic { topic: String },
}

/// DeleteGroups and OffsetDelete: refused, or their tombstones could not be written.
#[derive(Debug, thiserror::Error)]
pub enum GroupDeleteError {
    #[error(transparent)]
    Refused(#[from] GroupError),
    #[error("cannot write the group's tombstones: {0}")]
    Storage(#[from] BrokerError),
}

impl GroupError {
    pub(crate) fn unknown_member(member_id: &str) -> Self {
        GroupError::UnknownMember {
            member_id: member_id.to_string(),
        }
    }

    pub(crate) fn fenced_instance(member_id: &str) -> Self {
        GroupError::FencedInstance {
            member_id: member_id.to_string(),
        }
    }
}
