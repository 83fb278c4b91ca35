//! `weir acl create|list|delete`: ACLs through Kafka's own APIs (CreateAcls, DescribeAcls,
//! DeleteAcls v3), so they work against Weir and any Kafka cluster with an authorizer. The
//! flags follow kafka-acls.sh: `--principal User:alice`, `--operation Read` (repeatable),
//! `--topic`/`--group`/`--transactional-id` (repeatable) or `--cluster`, `--pattern-type`,
//! `--host`, `--deny`.

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};
use kafka_protocol::protocol::StrBytes;
use weir_broker::security::acl::{
    supported_operations, Operation, PatternType, Permission, ResourceType, CLUSTER_NAME, WILDCARD,
};

use crate::client::ConnectArgs;

/// The ACL APIs' version spoken (v3: flexible; Kafka 2.4+ and Weir).
const ACL_API_VERSION: i16 = 3;
/// Filter codes for "any" (resource type, pattern type, operation, permission).
const ANY: i8 = 1;
/// The MATCH pattern filter: literal, wildcard and prefixed bindings that cover a name.
const MATCH: i8 = 2;

#[derive(Args)]
pub(crate) struct AclArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: AclCommand,
}

#[derive(Subcommand)]
enum AclCommand {
    /// Add ACLs: every principal × operation × resource given.
    Create {
        #[command(flatten)]
        resources: Resources,
        /// `User:<name>`, or `User:*` for everyone (repeatable).
        #[arg(long = "principal", required = true)]
        principals: Vec<String>,
        /// READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
        /// ALTER_CONFIGS, IDEMPOTENT_WRITE or ALL (case and `_` ignored; repeatable).
        #[arg(long = "operation", required = true)]
        operations: Vec<String>,
        /// The client address the ACLs apply to (`*`: any).
        #[arg(long, default_value = WILDCARD)]
        host: String,
        /// Deny instead of allow (a deny wins over every allow).
        #[arg(long)]
        deny: bool,
        /// literal or prefixed.
        #[arg(long, default_value = "literal")]
        pattern_type: String,
    },
    /// List ACLs: all of them, or those of the resources and principal given.
    List {
        #[command(flatten)]
        resources: Resources,
        #[arg(long)]
        principal: Option<String>,
        /// any, match (the bindings that cover the named resources), literal or prefixed.
        #[arg(long)]
        pattern_type: Option<String>,
    },
    /// Delete the ACLs of the resources given (optionally only a principal's, one operation's).
    Delete {
        #[command(flatten)]
        resources: Resources,
        #[arg(long)]
        principal: Option<String>,
        #[arg(long = "operation")]
        operations: Vec<String>,
        /// any, match, literal (default) or prefixed.
        #[arg(long, default_value = "literal")]
        pattern_type: String,
    },
}

#[derive(Args)]
struct Resources {
    #[arg(long = "topic")]
    topics: Vec<String>,
    #[arg(long = "group")]
    groups: Vec<String>,
    #[arg(long = "transactional-id")]
    transactional_ids: Vec<String>,
    /// The cluster resource (kafka-cluster).
    #[arg(long)]
    cluster: bool,
}

impl Resources {
    fn list(&self) -> Vec<(ResourceType, String)> {
        let named = |resource_type: ResourceType, names: &[String]| {
            names
                .iter()
                .map(move |name| (resource_type, name.clone()))
                .collect::<Vec<_>>()
        };
        let mut resources = named(ResourceType::Topic, &self.topics);
        resources.extend(named(ResourceType::Group, &self.groups));
        resources.extend(named(
            ResourceType::TransactionalId,
            &self.transactional_ids,
        ));
        if self.cluster {
            resources.push((ResourceType::Cluster, CLUSTER_NAME.to_string()));
        }
        resources
    }
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

#[allow(clippy::too_many_lines)] // one arm per subcommand
pub(crate) async fn run(args: AclArgs) -> anyhow::Result<()> {
    let mut client = crate::protocol_client::connect(&args.connect).await?;
    match args.command {
        AclCommand::Create {
            resources,
            principals,
            operations,
            host,
            deny,
            pattern_type,
        } => {
            let creations = creations(
                &resources,
                &principals,
                &operations,
                &host,
                deny,
                &pattern_type,
            )?;
            let count = creations.len();
            let request = CreateAclsRequest::default().with_creations(creations);
            let response = client.call(ACL_API_VERSION, &request).await?;
            let refused: Vec<String> = response
                .results
                .iter()
                .filter(|result| result.error_code != 0)
                .map(|result| refusal(result.error_code, result.error_message.as_deref()))
                .collect();
            if !refused.is_empty() {
                bail!(
                    "CreateAcls refused {} of {count}: {}",
                    refused.len(),
                    refused.join("; ")
                );
            }
            println!("{count} ACLs created");
        }
        AclCommand::List {
            resources,
            principal,
            pattern_type,
        } => {
            let pattern = match pattern_type {
                Some(name) => filter_pattern_code(&name)?,
                None => ANY,
            };
            let mut selected: Vec<(i8, Option<String>)> = resources
                .list()
                .into_iter()
                .map(|(resource_type, name)| (resource_type.code(), Some(name)))
                .collect();
            if selected.is_empty() {
                selected.push((ANY, None));
            }
            println!("RESOURCE-TYPE\tNAME\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION");
            for (resource_type, name) in selected {
                let request = DescribeAclsRequest::default()
                    .with_resource_type_filter(resource_type)
                    .with_resource_name_filter(name.as_deref().map(text))
                    .with_pattern_type_filter(pattern)
                    .with_principal_filter(principal.as_deref().map(text))
                    .with_host_filter(None)
                    .with_operation(ANY)
                    .with_permission_type(ANY);
                let response = client.call(ACL_API_VERSION, &request).await?;
                if response.error_code != 0 {
                    bail!(
                        "DescribeAcls failed: {}",
                        refusal(response.error_code, response.error_message.as_deref())
                    );
                }
                for resource in &response.resources {
                    for acl in &resource.acls {
                        println!(
                            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
                            resource_type_name(resource.resource_type),
                            resource.resource_name.as_str(),
                            pattern_name(resource.pattern_type),
                            acl.principal.as_str(),
                            acl.host.as_str(),
                            operation_name(acl.operation),
                            permission_name(acl.permission_type)
                        );
                    }
                }
            }
        }
        AclCommand::Delete {
            resources,
            principal,
            operations,
            pattern_type,
        } => {
            let selected = resources.list();
            if selected.is_empty() {
                bail!("name the resources whose ACLs to delete (--topic, --group, --transactional-id, --cluster)");
            }
            let pattern = filter_pattern_code(&pattern_type)?;
            let operations = match operations.is_empty() {
                true => vec![ANY],
                false => operations
                    .iter()
                    .map(|name| parse_operation(name).map(Operation::code))
                    .collect::<anyhow::Result<_>>()?,
            };
            let mut filters = Vec::new();
            for (resource_type, name) in &selected {
                for operation in &operations {
                    filters.push(
                        DeleteAclsFilter::default()
                            .with_resource_type_filter(resource_type.code())
                            .with_resource_name_filter(Some(text(name)))
                            .with_pattern_type_filter(pattern)
                            .with_principal_filter(principal.as_deref().map(text))
                            .with_host_filter(None)
                            .with_operation(*operation)
                            .with_permission_type(ANY),
                    );
                }
            }
            let request = DeleteAclsRequest::default().with_filters(filters);
            let response = client.call(ACL_API_VERSION, &request).await?;
            let mut deleted = 0;
            for result in &response.filter_results {
                if result.error_code != 0 {
                    bail!(
                        "DeleteAcls failed: {}",
                        refusal(result.error_code, result.error_message.as_deref())
                    );
                }
                deleted += result.matching_acls.len();
            }
            println!("{deleted} ACLs deleted");
        }
    }
    Ok(())
}

fn creations(
    resources: &Resources,
    principals: &[String],
    operations: &[String],
    host: &str,
    deny: bool,
    pattern_type: &str,
) -> anyhow::Result<Vec<AclCreation>> {
    let selected = resources.list();
    if selected.is_empty() {
        bail!("name at least one resource (--topic, --group, --transactional-id, --cluster)");
    }
    let pattern = match pattern_type.to_ascii_lowercase().as_str() {
        "literal" => PatternType::Literal,
        "prefixed" => PatternType::Prefixed,
        other => bail!("--pattern-type {other}: an ACL's pattern is literal or prefixed"),
    };
    let operations: Vec<Operation> = operations
        .iter()
        .map(|name| parse_operation(name))
        .collect::<anyhow::Result<_>>()?;
    for principal in principals {
        if !principal.starts_with("User:") || principal.len() == "User:".len() {
            bail!("principal {principal}: write it User:<name> (or User:* for everyone)");
        }
    }
    let permission = if deny {
        Permission::Deny
    } else {
        Permission::Allow
    };
    let mut creations = Vec::new();
    for (resource_type, name) in &selected {
        for operation in &operations {
            let supported = supported_operations(*resource_type);
            if *operation != Operation::All && !supported.contains(operation) {
                let names: Vec<&str> = supported.iter().map(|o| o.name()).collect();
                bail!(
                    "{} is not an operation of a {} resource (it has {})",
                    operation.name(),
                    resource_type_name(resource_type.code()),
                    names.join(", ")
                );
            }
            for principal in principals {
                creations.push(
                    AclCreation::default()
                        .with_resource_type(resource_type.code())
                        .with_resource_name(text(name))
                        .with_resource_pattern_type(pattern.code())
                        .with_principal(text(principal))
                        .with_host(text(host))
                        .with_operation(operation.code())
                        .with_permission_type(permission.code()),
                );
            }
        }
    }
    Ok(creations)
}

fn parse_operation(name: &str) -> anyhow::Result<Operation> {
    Operation::from_name(name).with_context(|| {
        format!("{name} is not an ACL operation (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALL)")
    })
}

fn filter_pattern_code(name: &str) -> anyhow::Result<i8> {
    Ok(match name.to_ascii_lowercase().as_str() {
        "any" => ANY,
        "match" => MATCH,
        "literal" => PatternType::Literal.code(),
        "prefixed" => PatternType::Prefixed.code(),
        other => bail!("--pattern-type {other}: any, match, literal or prefixed"),
    })
}

fn refusal(code: i16, message: Option<&str>) -> String {
    let name = kafka_protocol::ResponseError::try_from_code(code)
        .map(|error| format!("{error:?}"))
        .unwrap_or_else(|| format!("error code {code}"));
    match message {
        Some(message) if !message.is_empty() => format!("{name}: {message}"),
        _ => name,
    }
}

fn resource_type_name(code: i8) -> String {
    match ResourceType::from_code(code) {
        Some(ResourceType::Topic) => "TOPIC".into(),
        Some(ResourceType::Group) => "GROUP".into(),
        Some(ResourceType::Cluster) => "CLUSTER".into(),
        Some(ResourceType::TransactionalId) => "TRANSACTIONAL_ID".into(),
        Some(ResourceType::DelegationToken) => "DELEGATION_TOKEN".into(),
        Some(ResourceType::User) => "USER".into(),
        None => format!("UNKNOWN({code})"),
    }
}

fn pattern_name(code: i8) -> String {
    match PatternType::from_code(code) {
        Some(PatternType::Literal) => "LITERAL".into(),
        Some(PatternType::Prefixed) => "PREFIXED".into(),
        None => format!("UNKNOWN({code})"),
    }
}

fn operation_name(code: i8) -> String {
    Operation::from_code(code).map_or_else(|| format!("UNKNOWN({code})"), |o| o.name().into())
}

fn permission_name(code: i8) -> String {
    match Permission::from_code(code) {
        Some(Permission::Allow) => "ALLOW".into(),
        Some(Permission::Deny) => "DENY".into(),
        None => format!("UNKNOWN({code})"),
    }
}
