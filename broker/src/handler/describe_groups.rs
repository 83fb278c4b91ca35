//! DescribeGroups: state, protocol and members (with static members' instance ids, metadata
//! and assignment) of each group, and (v3+, when asked) the operations allowed on it. An
//! unknown group is described as Dead with no error, as Kafka does.

use std::sync::Arc;

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse, GroupId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::handler::access::{Access, NOT_REQUESTED};
use crate::security::acl::{Operation, ResourceType};

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let requested = request.include_authorized_operations;
    let groups = request
        .groups
        .into_iter()
        .map(|group_id| {
            if !access.allows_group(Operation::Describe, &group_id) {
                return DescribedGroup::default()
                    .with_group_id(group_id)
                    .with_error_code(ResponseError::GroupAuthorizationFailed.code())
                    .with_authorized_operations(NOT_REQUESTED);
            }
            if let Some(error) = context.groups.coordinator_error(&group_id) {
                return DescribedGroup::default()
                    .with_group_id(group_id)
                    .with_error_code(super::errors::code(Some(error)));
            }
            let operations =
                access.authorized_operations(requested, ResourceType::Group, &group_id);
            describe(context, group_id).with_authorized_operations(operations)
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

fn describe(context: &BrokerContext, group_id: GroupId) -> DescribedGroup {
    match context.groups.describe(&group_id) {
        Some(summary) => DescribedGroup::default()
            .with_group_id(group_id)
            .with_group_state(StrBytes::from_static_str(summary.state))
            .with_protocol_type(StrBytes::from_string(summary.protocol_type))
            .with_protocol_data(StrBytes::from_string(summary.protocol_name))
            .with_members(
                summary
                    .members
                    .into_iter()
                    .map(|member| {
                        DescribedGroupMember::default()
                            .with_member_id(StrBytes::from_string(member.member_id))
                            .with_group_instance_id(
                                member.group_instance_id.map(StrBytes::from_string),
                            )
                            .with_client_id(StrBytes::from_string(member.client_id))
                            .with_client_host(StrBytes::from_string(member.client_host))
                            .with_member_metadata(member.metadata)
                            .with_member_assignment(member.assignment)
                    })
                    .collect(),
            ),
        None if context
            .groups
            .list()
            .iter()
            .any(|(id, _, _)| id.as_str() == group_id.as_str()) =>
        {
            DescribedGroup::default()
                .with_group_id(group_id)
                .with_group_state(StrBytes::from_static_str("Empty"))
                .with_protocol_type(StrBytes::from_static_str("consumer"))
        }
        None => DescribedGroup::default()
            .with_group_id(group_id)
            .with_group_state(StrBytes::from_static_str("Dead")),
    }
}
