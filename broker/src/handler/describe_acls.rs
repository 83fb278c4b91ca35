//! DescribeAcls: the ACLs a filter matches, grouped by resource pattern (MATCH: every binding
//! that would apply to the named resource). Without an authorizer: SECURITY_DISABLED.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{DescribeAclsRequest, DescribeAclsResponse};
use kafka_protocol::ResponseError;

use super::acl_requests::{filter_of, needs_cluster_permission, text, AclFields, NO_AUTHORIZER};
use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::security::acl::Operation;
use crate::security::acl::PatternType;

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    version: i16,
    request: DescribeAclsRequest,
) -> DescribeAclsResponse {
    let failed = |error: ResponseError, message: &str| {
        DescribeAclsResponse::default()
            .with_error_code(error.code())
            .with_error_message(Some(text(message)))
    };
    if !access.allows_cluster(Operation::Describe) {
        let message = needs_cluster_permission(access, "DescribeAcls", Operation::Describe);
        return failed(ResponseError::ClusterAuthorizationFailed, &message);
    }
    if crate::acls::authorizer_settings(&context.config()).is_none() {
        return failed(ResponseError::SecurityDisabled, NO_AUTHORIZER);
    }
    // v0 has no pattern type: literal only.
    let pattern_type = if version == 0 {
        PatternType::Literal.code()
    } else {
        request.pattern_type_filter
    };
    let filter = match filter_of(&AclFields::of_describe(&request, pattern_type)) {
        Ok(filter) => filter,
        Err(reason) => return failed(ResponseError::InvalidRequest, &reason),
    };
    let mut resources: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    let acls = context.acl_snapshot();
    for binding in acls.bindings().iter().filter(|b| filter.matches(b)) {
        let key = (
            binding.resource_type.code(),
            binding.resource_name.clone(),
            binding.pattern_type.code(),
        );
        resources.entry(key).or_default().push(
            AclDescription::default()
                .with_principal(text(&binding.principal))
                .with_host(text(&binding.host))
                .with_operation(binding.operation.code())
                .with_permission_type(binding.permission.code()),
        );
    }
    let resources = resources
        .into_iter()
        .map(|((resource_type, name, pattern_type), acls)| {
            DescribeAclsResource::default()
                .with_resource_type(resource_type)
                .with_resource_name(text(&name))
                .with_pattern_type(pattern_type)
                .with_acls(acls)
        })
        .collect();
    DescribeAclsResponse::default().with_resources(resources)
}
