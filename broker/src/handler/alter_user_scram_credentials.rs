//! AlterUserScramCredentials (KIP-554): upserts (the client salts and hashes the password;
//! the broker keeps only the keys derived from it) and deletions, checked by Kafka's rules
//! (`user_credentials::check_changes`). Alone, stored in the broker's file; in a cluster,
//! through the controller as metadata records every broker applies.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::errors::error_for;
use crate::cluster::quorum::rpc::ControllerRequest;
use crate::context::BrokerContext;
use crate::handler::access::Access;
use crate::security::acl::Operation;
use crate::user_credentials::{check_changes, CredentialChange, Refusal, Upsertion};

pub async fn handle(
    context: &Arc<BrokerContext>,
    access: &Access,
    request: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let deletions = request
        .deletions
        .into_iter()
        .map(|deletion| CredentialChange {
            user: deletion.name.to_string(),
            mechanism: deletion.mechanism,
            upsert: None,
        });
    let upsertions = request
        .upsertions
        .into_iter()
        .map(|upsertion| CredentialChange {
            user: upsertion.name.to_string(),
            mechanism: upsertion.mechanism,
            upsert: Some(Upsertion {
                salt: upsertion.salt.to_vec(),
                salted_password: upsertion.salted_password.to_vec(),
                iterations: upsertion.iterations,
            }),
        });
    let changes: Vec<CredentialChange> = deletions.chain(upsertions).collect();
    let mut users: Vec<String> = Vec::new();
    for change in &changes {
        if !users.contains(&change.user) {
            users.push(change.user.clone());
        }
    }
    // Kafka: ALTER on the cluster, else every user is refused and nothing changes.
    if !access.allows_cluster(Operation::Alter) {
        let refusal = Refusal {
            code: kafka_protocol::ResponseError::ClusterAuthorizationFailed.code(),
            message: super::acl_requests::CLUSTER_REFUSED.to_string(),
        };
        let refused = users
            .iter()
            .map(|user| (user.clone(), refusal.clone()))
            .collect();
        return answer(users, &refused);
    }
    let refused = match alter(context, &changes).await {
        Ok(refused) => refused,
        // Nothing stored: every user gets the error.
        Err(error) => {
            tracing::warn!(%error, "SCRAM credentials not stored");
            let refusal = Refusal {
                code: error_for(&error).code(),
                message: error.to_string(),
            };
            users
                .iter()
                .map(|user| (user.clone(), refusal.clone()))
                .collect()
        }
    };
    answer(users, &refused)
}

fn answer(
    users: Vec<String>,
    refused: &BTreeMap<String, Refusal>,
) -> AlterUserScramCredentialsResponse {
    let results = users
        .into_iter()
        .map(|user| {
            let result = AlterUserScramCredentialsResult::default()
                .with_user(StrBytes::from_string(user.clone()));
            match refused.get(&user) {
                Some(refusal) => result
                    .with_error_code(refusal.code)
                    .with_error_message(Some(StrBytes::from_string(refusal.message.clone()))),
                None => result,
            }
        })
        .collect();
    AlterUserScramCredentialsResponse::default().with_results(results)
}

async fn alter(
    context: &Arc<BrokerContext>,
    changes: &[CredentialChange],
) -> Result<BTreeMap<String, Refusal>, crate::error::BrokerError> {
    let Some(cluster) = &context.cluster else {
        let refused = context.user_credentials.alter(changes)?;
        tracing::info!(
            changes = changes.len(),
            refused = refused.len(),
            "SCRAM credentials altered"
        );
        return Ok(refused);
    };
    let current = cluster.image().image.scram_credentials.clone();
    let (accepted, refused) = check_changes(&current, changes);
    if !accepted.is_empty() {
        cluster
            .request(ControllerRequest::AlterScramCredentials { changes: accepted })
            .await?;
    }
    Ok(refused)
}
