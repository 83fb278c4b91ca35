//! DescribeClientQuotas: Weir enforces no client quotas (byte rates, request percentages), so
//! no entity has one and every valid filter matches nothing — the true answer, which
//! `kafka-configs.sh --describe --entity-type users` asks before it lists SCRAM credentials.
//! A filter Kafka would refuse is INVALID_REQUEST with Kafka's words.

use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

/// Kafka's match types: an exact name, the entity type's default, any specified name.
const MATCH_EXACT: i8 = 0;
const MATCH_DEFAULT: i8 = 1;
const MATCH_SPECIFIED: i8 = 2;

pub fn handle(request: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse {
    match check(&request) {
        Ok(()) => DescribeClientQuotasResponse::default().with_entries(Some(Vec::new())),
        Err(reason) => DescribeClientQuotasResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code())
            .with_error_message(Some(StrBytes::from_string(reason)))
            .with_entries(None),
    }
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
