//! JoinGroup: parks until the rebalance completes (a deferred response, so the connection keeps
//! reading). v4+ first answers MEMBER_ID_REQUIRED with a member id (KIP-394).

use std::sync::Arc;

use futures::FutureExt;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;

use crate::context::BrokerContext;
use crate::group::state::JoinRequest;
use crate::handler::{HandlerOutput, RequestOrigin};

pub fn handle(
    context: &Arc<BrokerContext>,
    version: i16,
    origin: &RequestOrigin<'_>,
    request: JoinGroupRequest,
) -> HandlerOutput {
    let context = Arc::clone(context);
    let group_id = request.group_id.to_string();
    let join = JoinRequest {
        member_id: request.member_id.to_string(),
        client_id: origin.client_id.to_string(),
        client_host: origin.client_host(),
        session_timeout_ms: request.session_timeout_ms,
        // v0 has no rebalance timeout: it is the session timeout.
        rebalance_timeout_ms: if version >= 1 {
            request.rebalance_timeout_ms
        } else {
            request.session_timeout_ms
        },
        protocol_type: request.protocol_type.to_string(),
        protocols: request
            .protocols
            .iter()
            .map(|p| (p.name.to_string(), p.metadata.clone()))
            .collect(),
        require_known_member_id: version >= 4,
        group_instance_id: request.group_instance_id.as_ref().map(|i| i.to_string()),
    };
    HandlerOutput::Deferred(
        async move {
            let reply = context.groups.join(&context.topics, &group_id, join).await;
            let members = reply
                .members
                .into_iter()
                .map(|(member_id, metadata)| {
                    JoinGroupResponseMember::default()
                        .with_member_id(StrBytes::from_string(member_id))
                        .with_metadata(metadata)
                })
                .collect();
            let mut response = JoinGroupResponse::default()
                .with_error_code(super::errors::code(reply.error))
                .with_generation_id(reply.generation_id)
                .with_leader(StrBytes::from_string(reply.leader))
                .with_member_id(StrBytes::from_string(reply.member_id))
                .with_members(members);
            // v7+ carries the protocol type; the name is nullable from v7, required before.
            if version >= 7 {
                response.protocol_type = reply.protocol_type.map(StrBytes::from_string);
                response.protocol_name = reply.protocol_name.map(StrBytes::from_string);
            } else {
                response.protocol_name = Some(StrBytes::from_string(
                    reply.protocol_name.unwrap_or_default(),
                ));
            }
            ResponseKind::JoinGroup(response)
        }
        .boxed(),
    )
}
