//! AlterClientQuotas (`kafka-configs.sh --alter --entity-type users|clients`): sets or removes
//! byte-rate quotas of users and client ids. Needs ALTER_CONFIGS on the cluster (each entry is
//! refused otherwise, as Kafka does). Every entry is validated; the valid ones are applied
//! together and stored durably before the answer (`quota::store`). Quota types Weir does not
//! enforce yet, and IP entities, are refused with the reason rather than accepted and ignored;
//! in a cluster the request is refused (quotas are not replicated through the controller yet).

use std::sync::Arc;

use kafka_protocol::messages::alter_client_quotas_response::{EntityData, EntryData};
use kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::handler::acl_requests::CLUSTER_REFUSED;
use crate::quota::entity::check_value;
use crate::quota::store::QuotaChange;
use crate::quota::{QuotaEntity, QuotaKey};
use crate::security::acl::Operation;

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    let refusal = if !access.allows_cluster(Operation::AlterConfigs) {
        Some((
            ResponseError::ClusterAuthorizationFailed,
            CLUSTER_REFUSED.to_string(),
        ))
    } else if context.cluster.is_some() {
        let reason = "client quotas are kept by a broker running alone; in a cluster they are \
                      not replicated through the controller yet, so none is set";
        Some((ResponseError::InvalidRequest, reason.to_string()))
    } else {
        None
    };
    let mut outcomes = Vec::with_capacity(request.entries.len());
    let mut changes: Vec<QuotaChange> = Vec::new();
    for entry in &request.entries {
        let outcome = match &refusal {
            Some(refused) => Err(refused.clone()),
            None => change_of(entry).map_err(|reason| (ResponseError::InvalidRequest, reason)),
        };
        if let Ok(change) = &outcome {
            changes.push(change.clone());
        }
        outcomes.push(outcome.map(|_| ()));
    }
    if !changes.is_empty() {
        if let Err(error) = context.quotas.alter(&changes, request.validate_only) {
            let failed = (ResponseError::UnknownServerError, error.to_string());
            outcomes = outcomes
                .into_iter()
                .map(|outcome| outcome.and(Err(failed.clone())))
                .collect();
        }
    }
    let entries = request
        .entries
        .iter()
        .zip(outcomes)
        .map(|(entry, outcome)| {
            let entity = entry
                .entity
                .iter()
                .map(|part| {
                    EntityData::default()
                        .with_entity_type(part.entity_type.clone())
                        .with_entity_name(part.entity_name.clone())
                })
                .collect();
            let (code, message) = match outcome {
                Ok(()) => (0, None),
                Err((error, reason)) => (error.code(), Some(StrBytes::from_string(reason))),
            };
            EntryData::default()
                .with_error_code(code)
                .with_error_message(message)
                .with_entity(entity)
        })
        .collect();
    AlterClientQuotasResponse::default().with_entries(entries)
}

/// One entry as a change, or why it is refused.
fn change_of(
    entry: &kafka_protocol::messages::alter_client_quotas_request::EntryData,
) -> Result<QuotaChange, String> {
    let parts = entry
        .entity
        .iter()
        .map(|part| (part.entity_type.as_str(), part.entity_name.as_deref()));
    let entity = QuotaEntity::from_components(parts)?;
    let mut keys = Vec::with_capacity(entry.ops.len());
    for op in &entry.ops {
        let key = QuotaKey::parse(op.key.as_str())?;
        if keys.iter().any(|(seen, _)| *seen == key) {
            return Err(format!("Duplicate quota key {}", key.name()));
        }
        match op.remove {
            true => keys.push((key, None)),
            false => {
                check_value(key, op.value)?;
                keys.push((key, Some(op.value)));
            }
        }
    }
    Ok((entity, keys))
}
