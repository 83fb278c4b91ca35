//! LeaveGroup: one member (v0–2) or a batch of members (v3+).

use std::sync::Arc;

use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};

use crate::context::BrokerContext;

pub fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    request: LeaveGroupRequest,
) -> LeaveGroupResponse {
    if version < 3 {
        let error =
            context
                .groups
                .leave(&context.topics, &request.group_id, &request.member_id, None);
        return LeaveGroupResponse::default().with_error_code(super::errors::code(error));
    }
    let members = request
        .members
        .into_iter()
        .map(|member| {
            let error = context.groups.leave(
                &context.topics,
                &request.group_id,
                &member.member_id,
                member.group_instance_id.as_deref(),
            );
            MemberResponse::default()
                .with_member_id(member.member_id)
                .with_group_instance_id(member.group_instance_id)
                .with_error_code(super::errors::code(error))
        })
        .collect();
    LeaveGroupResponse::default().with_members(members)
}
