//! What CreateAcls, DescribeAcls and DeleteAcls share: the request's codes made into bindings
//! and filters (unknown codes are INVALID_REQUEST, with Kafka's words), bindings made into
//! response fields, and the change itself — alone in the broker's store, in a cluster through
//! the controller.

use std::sync::Arc;

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};
use kafka_protocol::protocol::StrBytes;

use super::access::Access;
use crate::cluster::quorum::rpc::ControllerRequest;
use crate::context::BrokerContext;
use crate::error::BrokerError;
use crate::security::acl::{
    AclBinding, AclFilter, Operation, PatternFilter, PatternType, Permission, ResourceType,
};
use kafka_protocol::messages::RequestKind;

/// The request fields of one binding or filter, as codes and strings.
pub struct AclFields<'a> {
    pub resource_type: i8,
    pub resource_name: Option<&'a str>,
    pub pattern_type: i8,
    pub principal: Option<&'a str>,
    pub host: Option<&'a str>,
    pub operation: i8,
    pub permission: i8,
}

/// Kafka's UNKNOWN (0) for a resource type, pattern type, operation or permission.
const UNKNOWN_CODE: i8 = 0;

impl<'a> AclFields<'a> {
    pub fn of_creation(creation: &'a AclCreation) -> AclFields<'a> {
        AclFields {
            resource_type: creation.resource_type,
            resource_name: Some(creation.resource_name.as_str()),
            pattern_type: creation.resource_pattern_type,
            principal: Some(creation.principal.as_str()),
            host: Some(creation.host.as_str()),
            operation: creation.operation,
            permission: creation.permission_type,
        }
    }

    /// DescribeAcls' filter (`pattern_type`: the request's, or LITERAL for v0, which has none).
    pub fn of_describe(request: &'a DescribeAclsRequest, pattern_type: i8) -> AclFields<'a> {
        AclFields {
            resource_type: request.resource_type_filter,
            resource_name: request.resource_name_filter.as_deref(),
            pattern_type,
            principal: request.principal_filter.as_deref(),
            host: request.host_filter.as_deref(),
            operation: request.operation,
            permission: request.permission_type,
        }
    }

    pub fn of_delete_filter(filter: &'a DeleteAclsFilter) -> AclFields<'a> {
        AclFields {
            resource_type: filter.resource_type_filter,
            resource_name: filter.resource_name_filter.as_deref(),
            pattern_type: filter.pattern_type_filter,
            principal: filter.principal_filter.as_deref(),
            host: filter.host_filter.as_deref(),
            operation: filter.operation,
            permission: filter.permission_type,
        }
    }

    /// Whether a field carries UNKNOWN: Kafka refuses such a request while parsing it
    /// (`CreateAclsRequest.validate`, `DescribeAclsRequest`/`DeleteAclsRequest`
    /// `normalizeAndValidate`) and closes the connection without an answer.
    pub fn has_unknown_code(&self) -> bool {
        [
            self.resource_type,
            self.pattern_type,
            self.operation,
            self.permission,
        ]
        .contains(&UNKNOWN_CODE)
    }
}

/// Why Kafka would refuse an ACL request while parsing it (an UNKNOWN code), closing the
/// connection; `None` when it is well formed.
pub fn unknown_element(request: &RequestKind) -> Option<&'static str> {
    match request {
        RequestKind::CreateAcls(r) if creations_unknown(r) => {
            Some("CreatableAcls contain unknown elements")
        }
        RequestKind::DescribeAcls(r)
            if AclFields::of_describe(r, r.pattern_type_filter).has_unknown_code() =>
        {
            Some("DescribeAclsRequest contains UNKNOWN elements")
        }
        RequestKind::DeleteAcls(r) if filters_unknown(r) => {
            Some("Filters contain UNKNOWN elements")
        }
        _ => None,
    }
}

fn creations_unknown(request: &CreateAclsRequest) -> bool {
    request
        .creations
        .iter()
        .any(|creation| AclFields::of_creation(creation).has_unknown_code())
}

fn filters_unknown(request: &DeleteAclsRequest) -> bool {
    request
        .filters
        .iter()
        .any(|filter| AclFields::of_delete_filter(filter).has_unknown_code())
}

/// A binding to create, or Kafka's reason it is invalid.
pub fn binding_of(fields: &AclFields<'_>) -> Result<AclBinding, String> {
    let resource_type = ResourceType::from_code(fields.resource_type)
        .ok_or_else(|| format!("Invalid resourceType {}", fields.resource_type))?;
    let pattern_type = PatternType::from_code(fields.pattern_type)
        .ok_or_else(|| format!("Invalid patternType {}", fields.pattern_type))?;
    let operation = Operation::from_code(fields.operation)
        .ok_or_else(|| format!("Invalid operation {}", fields.operation))?;
    let permission = Permission::from_code(fields.permission)
        .ok_or_else(|| format!("Invalid permissionType {}", fields.permission))?;
    let binding = AclBinding {
        resource_type,
        resource_name: fields.resource_name.unwrap_or("").to_string(),
        pattern_type,
        principal: fields.principal.unwrap_or("").to_string(),
        host: fields.host.unwrap_or("").to_string(),
        operation,
        permission,
    };
    crate::acls::check_new_binding(&binding)?;
    Ok(binding)
}

/// A filter (ANY codes match everything), or why it is invalid.
pub fn filter_of(fields: &AclFields<'_>) -> Result<AclFilter, String> {
    let any = |code: i8, any_code: i8| code == any_code;
    let resource_type = match fields.resource_type {
        code if any(code, ResourceType::ANY_CODE) => None,
        code => Some(
            ResourceType::from_code(code).ok_or_else(|| format!("Invalid resourceType {code}"))?,
        ),
    };
    let pattern = PatternFilter::from_code(fields.pattern_type)
        .ok_or_else(|| format!("Invalid patternType {}", fields.pattern_type))?;
    let operation = match fields.operation {
        code if any(code, Operation::ANY_CODE) => None,
        code => {
            Some(Operation::from_code(code).ok_or_else(|| format!("Invalid operation {code}"))?)
        }
    };
    let permission = match fields.permission {
        code if any(code, Permission::ANY_CODE) => None,
        code => Some(
            Permission::from_code(code).ok_or_else(|| format!("Invalid permissionType {code}"))?,
        ),
    };
    Ok(AclFilter {
        resource_type,
        resource_name: fields.resource_name.map(str::to_string),
        pattern,
        principal: fields.principal.map(str::to_string),
        host: fields.host.map(str::to_string),
        operation,
        permission,
    })
}

/// Kafka's words when no authorizer is configured.
pub const NO_AUTHORIZER: &str = "No Authorizer is configured.";
/// Kafka's default message of CLUSTER_AUTHORIZATION_FAILED.
/// Kafka's refusal of an ACL API without its cluster permission: "Request <request> needs
/// ALTER permission." (Kafka prints its internal request object; Weir the API and principal).
pub fn needs_cluster_permission(access: &Access, api: &str, operation: Operation) -> String {
    format!(
        "Request {api} by {} needs {} permission.",
        access.principal(),
        operation.name()
    )
}

pub const CLUSTER_REFUSED: &str = "Cluster authorization failed.";

pub fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

/// Adds `created` and removes `removed` (bindings a filter matched here).
pub async fn change(
    context: &Arc<BrokerContext>,
    created: Vec<AclBinding>,
    filters: &[AclFilter],
) -> Result<Vec<AclBinding>, BrokerError> {
    let Some(cluster) = &context.cluster else {
        let removed = context.acls.change(&created, filters)?;
        tracing::info!(
            created = created.len(),
            removed = removed.len(),
            "ACLs changed"
        );
        return Ok(removed);
    };
    let current = cluster.image().image.acls.clone();
    let removed: Vec<AclBinding> = current
        .iter()
        .filter(|binding| filters.iter().any(|filter| filter.matches(binding)))
        .cloned()
        .collect();
    if !created.is_empty() || !removed.is_empty() {
        cluster
            .request(ControllerRequest::ChangeAcls {
                created,
                removed: removed.clone(),
            })
            .await?;
    }
    Ok(removed)
}
