//! DescribeUserScramCredentials (KIP-554): each user's mechanisms and iteration counts — never
//! salts or keys. No users named (or an empty list): every user. A user named twice is
//! DUPLICATE_RESOURCE, one without credentials RESOURCE_NOT_FOUND, as Kafka answers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::security::acl::Operation;
use crate::security::scram::{ScramMechanism, UserCredentials};

pub fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    if !access.allows_cluster(Operation::Describe) {
        return DescribeUserScramCredentialsResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code())
            .with_error_message(Some(StrBytes::from_static_str(
                super::acl_requests::CLUSTER_REFUSED,
            )));
    }
    let credentials: UserCredentials = match &context.cluster {
        Some(cluster) => cluster.image().image.scram_credentials.clone(),
        None => context.user_credentials.credentials(),
    };
    let named: Vec<String> = request
        .users
        .unwrap_or_default()
        .into_iter()
        .map(|user| user.name.to_string())
        .collect();
    let results = if named.is_empty() {
        credentials
            .iter()
            .map(|(user, by_mechanism)| described(user, by_mechanism))
            .collect()
    } else {
        results_for(&credentials, &named)
    };
    DescribeUserScramCredentialsResponse::default().with_results(results)
}

fn results_for(
    credentials: &UserCredentials,
    named: &[String],
) -> Vec<DescribeUserScramCredentialsResult> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for user in named {
        *counts.entry(user).or_default() += 1;
    }
    let mut answered = BTreeSet::new();
    named
        .iter()
        .filter(|user| answered.insert(user.as_str()))
        .map(|user| {
            if counts[user.as_str()] > 1 {
                return failed(
                    user,
                    ResponseError::DuplicateResource,
                    format!("Cannot describe SCRAM credentials for the same user twice in a single request: {user}"),
                );
            }
            match credentials.get(user) {
                Some(by_mechanism) => described(user, by_mechanism),
                None => failed(
                    user,
                    ResponseError::ResourceNotFound,
                    format!("Attempt to describe a user credential that does not exist: {user}"),
                ),
            }
        })
        .collect()
}

fn described(
    user: &str,
    by_mechanism: &BTreeMap<ScramMechanism, crate::security::scram::ScramCredential>,
) -> DescribeUserScramCredentialsResult {
    let infos = by_mechanism
        .iter()
        .map(|(mechanism, credential)| {
            CredentialInfo::default()
                .with_mechanism(mechanism.type_code())
                .with_iterations(credential.iterations)
        })
        .collect();
    DescribeUserScramCredentialsResult::default()
        .with_user(StrBytes::from_string(user.to_string()))
        .with_credential_infos(infos)
}

fn failed(user: &str, error: ResponseError, message: String) -> DescribeUserScramCredentialsResult {
    DescribeUserScramCredentialsResult::default()
        .with_user(StrBytes::from_string(user.to_string()))
        .with_error_code(error.code())
        .with_error_message(Some(StrBytes::from_string(message)))
}
