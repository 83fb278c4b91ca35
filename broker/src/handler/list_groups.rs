//! ListGroups: every group, with state (v4+) and type (v5, always "classic"). As Kafka: all of
//! them with DESCRIBE on the cluster, else those the principal may DESCRIBE.

use std::sync::Arc;

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::security::acl::Operation;

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let states: Vec<String> = request
        .states_filter
        .iter()
        .map(|s| s.to_lowercase())
        .collect();
    let types: Vec<String> = request
        .types_filter
        .iter()
        .map(|s| s.to_lowercase())
        .collect();
    let every_group = access.allows_cluster(Operation::Describe);
    let groups = context
        .groups
        .list()
        .into_iter()
        .filter(|(group_id, _, _)| {
            every_group || access.allows_group(Operation::Describe, group_id)
        })
        .filter(|(_, _, state)| states.is_empty() || states.contains(&state.to_lowercase()))
        .filter(|_| types.is_empty() || types.iter().any(|t| t == "classic"))
        .map(|(group_id, protocol_type, state)| {
            let mut group = ListedGroup::default()
                .with_group_id(GroupId(StrBytes::from_string(group_id)))
                .with_protocol_type(StrBytes::from_string(protocol_type));
            if version >= 4 {
                group.group_state = StrBytes::from_static_str(state);
            }
            if version >= 5 {
                group.group_type = StrBytes::from_static_str("classic");
            }
            group
        })
        .collect();
    ListGroupsResponse::default().with_groups(groups)
}
