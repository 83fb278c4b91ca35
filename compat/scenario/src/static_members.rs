//! The static-membership section of the differential scenario (KIP-345): a member joining with
//! a `group.instance.id`, and every field DescribeGroups gives of it — at v5 (instance ids) and
//! v4, with and without the authorized operations (KIP-430).

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::*;
use serde_json::{json, Value};

use crate::{text, Scenario};

impl Scenario {
    pub(crate) async fn static_members_section(&mut self) -> anyhow::Result<()> {
        let group = GroupId(text(&self.topic("compat-static-group")));
        self.find_group_coordinator(group.as_str()).await?;
        let instance = text("instance-1");
        let protocol = join_group_request::JoinGroupRequestProtocol::default()
            .with_name(text("range"))
            .with_metadata(Bytes::from_static(b"static-subscription"));
        let join = JoinGroupRequest::default()
            .with_group_id(group.clone())
            .with_group_instance_id(Some(instance.clone()))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_protocol_type(text("consumer"))
            .with_protocols(vec![protocol]);
        let mut joined = self.client.call(5, &join).await?;
        for _ in 0..100 {
            if ![14, 15, 16].contains(&joined.error_code) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            joined = self.client.call(5, &join).await?;
        }
        self.note(
            "static_group/join",
            json!({"error": joined.error_code, "has_member_id": !joined.member_id.is_empty(), "is_leader": joined.leader == joined.member_id}),
        );
        let sync = SyncGroupRequest::default()
            .with_group_id(group.clone())
            .with_generation_id(joined.generation_id)
            .with_member_id(joined.member_id.clone())
            .with_group_instance_id(Some(instance.clone()))
            .with_assignments(vec![
                sync_group_request::SyncGroupRequestAssignment::default()
                    .with_member_id(joined.member_id.clone())
                    .with_assignment(Bytes::from_static(b"static-assignment")),
            ]);
        let synced = self.client.call(3, &sync).await?;
        self.note("static_group/sync", json!({"error": synced.error_code}));
        for (version, operations) in [(5, true), (5, false), (4, true), (3, true)] {
            let step = self
                .describe_group(version, &group, operations, &joined.member_id)
                .await?;
            let key = format!("static_group/describe_v{version}_operations_{operations}");
            self.note(&key, step);
        }
        let leave = LeaveGroupRequest::default()
            .with_group_id(group.clone())
            .with_members(vec![leave_group_request::MemberIdentity::default()
                .with_member_id(joined.member_id.clone())
                .with_group_instance_id(Some(instance))]);
        let left = self.client.call(3, &leave).await?;
        let members: Vec<(String, i16)> = left
            .members
            .iter()
            .map(|m| {
                let instance = m.group_instance_id.as_ref().map(|i| i.to_string());
                (instance.unwrap_or_default(), m.error_code)
            })
            .collect();
        self.note(
            "static_group/leave",
            json!({"error": left.error_code, "members": members}),
        );
        Ok(())
    }

    /// Every field DescribeGroups gives of the group and its one member (the member id as
    /// whether it is the one that joined, since brokers make up different ones).
    async fn describe_group(
        &mut self,
        version: i16,
        group: &GroupId,
        include_authorized_operations: bool,
        member_id: &kafka_protocol::protocol::StrBytes,
    ) -> anyhow::Result<Value> {
        let request = DescribeGroupsRequest::default()
            .with_groups(vec![group.clone()])
            .with_include_authorized_operations(include_authorized_operations);
        let response = self.client.call(version, &request).await?;
        let described = &response.groups[0];
        let members: Vec<BTreeMap<&str, Value>> = described
            .members
            .iter()
            .map(|m| {
                BTreeMap::from([
                    ("same_member_id", json!(m.member_id == *member_id)),
                    (
                        "group_instance_id",
                        json!(m.group_instance_id.as_ref().map(|i| i.to_string())),
                    ),
                    ("client_id", json!(m.client_id.to_string())),
                    ("client_host", json!(m.client_host.to_string())),
                    (
                        "metadata",
                        json!(String::from_utf8_lossy(&m.member_metadata)),
                    ),
                    (
                        "assignment",
                        json!(String::from_utf8_lossy(&m.member_assignment)),
                    ),
                ])
            })
            .collect();
        Ok(json!({
            "error": described.error_code,
            "state": described.group_state.to_string(),
            "protocol_type": described.protocol_type.to_string(),
            "protocol": described.protocol_data.to_string(),
            "authorized_operations": described.authorized_operations,
            "members": members,
        }))
    }
}
