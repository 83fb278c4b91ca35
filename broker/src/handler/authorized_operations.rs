//! KIP-430: the operations a client may perform on a resource, answered when it asks for them
//! (DescribeGroups v3+). Weir has no authorizer yet, so — as Kafka without one — every
//! operation the resource type supports is allowed.

/// The field's value when the client did not ask.
pub const NOT_REQUESTED: i32 = i32::MIN;

/// Kafka's ACL operation codes (`org.apache.kafka.common.acl.AclOperation`), as bit numbers.
#[derive(Clone, Copy)]
enum Operation {
    Read = 3,
    Delete = 6,
    Describe = 8,
    DescribeConfigs = 10,
    AlterConfigs = 11,
}

/// What a consumer group supports (Kafka 4: its configs too, KIP-848).
const GROUP_OPERATIONS: &[Operation] = &[
    Operation::Read,
    Operation::Delete,
    Operation::Describe,
    Operation::DescribeConfigs,
    Operation::AlterConfigs,
];

/// The bit field of a group's authorized operations, or [`NOT_REQUESTED`].
pub fn group_operations(requested: bool) -> i32 {
    if !requested {
        return NOT_REQUESTED;
    }
    GROUP_OPERATIONS
        .iter()
        .fold(0, |bits, operation| bits | 1 << *operation as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_supports_read_delete_describe_and_its_configs() {
        // READ 3, DELETE 6, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11.
        let expected = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11);
        assert_eq!(group_operations(true), expected);
        assert_eq!(group_operations(false), NOT_REQUESTED);
    }
}
