//! `weir user create|list|delete`: SCRAM users, through Kafka's own APIs
//! (AlterUserScramCredentials, DescribeUserScramCredentials — KIP-554), so they work against
//! Weir and any Kafka cluster. The password is salted and hashed here, as Kafka's tools do;
//! only the salted password crosses the wire, and it is read from a file or standard input,
//! never from the command line.

use std::io::Read;

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::{Args, Subcommand};
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
};
use kafka_protocol::protocol::StrBytes;
use weir_broker::security::scram::{random_salt, ScramMechanism, MIN_ITERATIONS};

use crate::client::ConnectArgs;
use crate::protocol_client::ProtocolClient;

#[derive(Args)]
pub(crate) struct UserArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: UserCommand,
}

#[derive(Subcommand)]
enum UserCommand {
    /// Create a SCRAM user, or set a new password (per mechanism).
    Create {
        name: String,
        /// File holding the password (its first line); `-` reads standard input.
        #[arg(long, value_name = "PATH")]
        password_file: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable).
        #[arg(long = "mechanism", default_value = "SCRAM-SHA-512")]
        mechanisms: Vec<String>,
        /// PBKDF2 iterations (Kafka takes 4096..=16384).
        #[arg(long, default_value_t = MIN_ITERATIONS)]
        iterations: i32,
    },
    /// List SCRAM users with their mechanisms and iterations.
    List,
    /// Delete a user's credentials (every mechanism it has unless named).
    Delete {
        name: String,
        #[arg(long = "mechanism")]
        mechanisms: Vec<String>,
    },
}

pub(crate) async fn run(args: UserArgs) -> anyhow::Result<()> {
    let mut client = crate::protocol_client::connect(&args.connect).await?;
    match args.command {
        UserCommand::Create {
            name,
            password_file,
            mechanisms,
            iterations,
        } => {
            let password = read_password(&password_file)?;
            let mut upsertions = Vec::new();
            for mechanism in parse_mechanisms(&mechanisms)? {
                let salt =
                    random_salt().map_err(|_| anyhow::anyhow!("no randomness for a salt"))?;
                let salted =
                    mechanism.salted_password(password.as_bytes(), &salt, iterations.max(1) as u32);
                upsertions.push(
                    ScramCredentialUpsertion::default()
                        .with_name(StrBytes::from_string(name.clone()))
                        .with_mechanism(mechanism.type_code())
                        .with_iterations(iterations)
                        .with_salt(Bytes::from(salt))
                        .with_salted_password(Bytes::from(salted)),
                );
            }
            let request = AlterUserScramCredentialsRequest::default().with_upsertions(upsertions);
            alter(&mut client, &request).await?;
            println!("user {name}: credentials set");
        }
        UserCommand::List => {
            let described = client
                .call(0, &DescribeUserScramCredentialsRequest::default())
                .await?;
            if described.error_code != 0 {
                bail!(
                    "DescribeUserScramCredentials failed with error code {}",
                    described.error_code
                );
            }
            println!("USER\tMECHANISM\tITERATIONS");
            for user in &described.results {
                for info in &user.credential_infos {
                    let mechanism = ScramMechanism::from_type(info.mechanism).map_or_else(
                        || format!("unknown ({})", info.mechanism),
                        |m| m.name().to_string(),
                    );
                    println!("{}\t{mechanism}\t{}", user.user.as_str(), info.iterations);
                }
            }
        }
        UserCommand::Delete { name, mechanisms } => {
            let mechanisms = match mechanisms.is_empty() {
                false => parse_mechanisms(&mechanisms)?,
                true => existing_mechanisms(&mut client, &name).await?,
            };
            let deletions = mechanisms
                .iter()
                .map(|mechanism| {
                    ScramCredentialDeletion::default()
                        .with_name(StrBytes::from_string(name.clone()))
                        .with_mechanism(mechanism.type_code())
                })
                .collect();
            let request = AlterUserScramCredentialsRequest::default().with_deletions(deletions);
            alter(&mut client, &request).await?;
            println!("user {name}: credentials deleted");
        }
    }
    Ok(())
}

fn parse_mechanisms(names: &[String]) -> anyhow::Result<Vec<ScramMechanism>> {
    let mut mechanisms = Vec::new();
    for name in names {
        let mechanism =
            ScramMechanism::from_name(&name.to_ascii_uppercase()).with_context(|| {
                format!("{name} is not a SCRAM mechanism (SCRAM-SHA-256, SCRAM-SHA-512)")
            })?;
        if !mechanisms.contains(&mechanism) {
            mechanisms.push(mechanism);
        }
    }
    Ok(mechanisms)
}

fn read_password(source: &str) -> anyhow::Result<String> {
    let mut text = String::new();
    if source == "-" {
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the password from standard input")?;
    } else {
        text = std::fs::read_to_string(source)
            .with_context(|| format!("cannot read the password file {source}"))?;
    }
    let password = text.lines().next().unwrap_or("").to_string();
    if password.is_empty() {
        bail!("the password is empty");
    }
    Ok(password)
}

async fn existing_mechanisms(
    client: &mut ProtocolClient,
    name: &str,
) -> anyhow::Result<Vec<ScramMechanism>> {
    let request = DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
        UserName::default().with_name(StrBytes::from_string(name.to_string())),
    ]));
    let described = client.call(0, &request).await?;
    let Some(user) = described.results.first() else {
        bail!("user {name} not described");
    };
    if user.error_code != 0 {
        bail!(
            "user {name}: {}",
            user.error_message.as_deref().unwrap_or("not found")
        );
    }
    Ok(user
        .credential_infos
        .iter()
        .filter_map(|info| ScramMechanism::from_type(info.mechanism))
        .collect())
}

async fn alter(
    client: &mut ProtocolClient,
    request: &AlterUserScramCredentialsRequest,
) -> anyhow::Result<()> {
    let response = client.call(0, request).await?;
    let refused: Vec<String> = response
        .results
        .iter()
        .filter(|result| result.error_code != 0)
        .map(|result| {
            format!(
                "{}: {} (error code {})",
                result.user.as_str(),
                result.error_message.as_deref().unwrap_or("refused"),
                result.error_code
            )
        })
        .collect();
    if !refused.is_empty() {
        bail!("AlterUserScramCredentials refused {}", refused.join("; "));
    }
    Ok(())
}
