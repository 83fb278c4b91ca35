//! DescribeClientQuotas (`kafka-configs.sh --describe --entity-type users|clients`): the quotas
//! set (`quota::store`) of every entity that matches the filter, by Kafka's rules: each component
//! names an entity type and an exact name, the type's default, or any name; a strict filter
//! matches only entities with no other types. A filter Kafka would refuse is INVALID_REQUEST
//! with Kafka's words.

use std::sync::Arc;

use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::quota::{QuotaEntity, QuotaSet};

/// Kafka's match types: an exact name, the entity type's default, any specified name.
const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_SPECIFIED: i8 = 2;

pub fn handle(
    context: &Arc<BrokerContext>,
    request: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    if let Err(reason) = check(&request) {
        return DescribeClientQuotasResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code())
            .with_error_message(Some(StrBytes::from_string(reason)))
            .with_entries(None);
    }
    let entries = context
        .quotas
        .all()
        .iter()
        .filter(|(entity, _)| matches(entity, &request.components, request.strict))
        .map(|(entity, quotas)| entry(entity, quotas))
        .collect();
    DescribeClientQuotasResponse::default().with_entries(Some(entries))
}

fn matches(entity: &QuotaEntity, components: &[ComponentData], strict: bool) -> bool {
    let parts = entity.components();
    let each = components.iter().all(|component| {
        let Some((_, name)) = parts
            .iter()
            .find(|(entity_type, _)| *entity_type == component.entity_type.as_str())
        else {
            return false;
        };
        match component.match_type {
            MATCH_EXACT => *name == component._match.as_deref(),
            MATCH_DEFAULT => name.is_none(),
            _ => name.is_some(),
        }
    });
    each && (!strict || parts.len() == components.len())
}

fn entry(entity: &QuotaEntity, quotas: &QuotaSet) -> EntryData {
    let entity = entity
        .components()
        .into_iter()
        .map(|(entity_type, name)| {
            EntityData::default()
                .with_entity_type(StrBytes::from_static_str(entity_type))
                .with_entity_name(name.map(|name| StrBytes::from_string(name.to_string())))
        })
        .collect();
    let values = quotas
        .iter()
        .map(|(key, value)| {
            ValueData::default()
                .with_key(StrBytes::from_static_str(key.name()))
                .with_value(*value)
        })
        .collect();
    EntryData::default().with_entity(entity).with_values(values)
}

fn check(request: &DescribeClientQuotasRequest) -> Result<(), String> {
    let mut seen = Vec::new();
    for component in &request.components {
        let entity = component.entity_type.as_str();
        if seen.contains(&entity) {
            return Err(format!("Duplicate {entity} filter component entity type"));
        }
        seen.push(entity);
        match (component.match_type, &component._match) {
            (MATCH_EXACT, None) => return Err(format!("Request specified MATCH_EXACT match type for {entity} but no match string")),
            (MATCH_DEFAULT | MATCH_SPECIFIED, Some(_)) => {
                return Err(format!("Request specified a match string for {entity} with a match type other than MATCH_EXACT"))
            }
            (MATCH_EXACT | MATCH_DEFAULT | MATCH_SPECIFIED, _) => {}
            (other, _) => return Err(format!("Unknown match type {other}")),
        }
    }
    Ok(())
}
