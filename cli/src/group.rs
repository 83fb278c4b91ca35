//! `weir group list|describe|delete|seek`: consumer groups, their members, committed offsets and lag.

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};

use crate::client::{ConnectArgs, REQUEST_TIMEOUT};

#[derive(Args)]
pub(crate) struct GroupArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: GroupCommand,
}

#[derive(Subcommand)]
enum GroupCommand {
    /// List consumer groups with their state.
    List,
    /// Members, committed offsets and lag (log end offset − committed) of a group.
    Describe { group: String },
    /// Delete empty groups and their committed offsets.
    Delete { groups: Vec<String> },
    /// Move an empty group's committed offsets for a topic (earliest, latest, offset or time).
    Seek(crate::group_seek::SeekArgs),
}

pub(crate) async fn run(args: GroupArgs) -> anyhow::Result<()> {
    match args.command {
        GroupCommand::List => {
            let consumer: BaseConsumer = args.connect.client_config()?.create()?;
            let groups = consumer
                .fetch_group_list(None, REQUEST_TIMEOUT)
                .context("ListGroups failed")?;
            for group in groups.groups() {
                println!(
                    "{}\t{}\t{}",
                    group.name(),
                    group.state(),
                    group.protocol_type()
                );
            }
        }
        GroupCommand::Describe { group } => describe(&args.connect, &group).await?,
        GroupCommand::Seek(seek) => crate::group_seek::run(&args.connect, seek).await?,
        GroupCommand::Delete { groups } => {
            let admin: AdminClient<DefaultClientContext> =
                args.connect.client_config()?.create()?;
            let names: Vec<&str> = groups.iter().map(String::as_str).collect();
            let options = AdminOptions::new().request_timeout(Some(REQUEST_TIMEOUT));
            for result in admin.delete_groups(&names, &options).await? {
                match result {
                    Ok(name) => println!("deleted group {name}"),
                    Err((name, code)) => bail!("cannot delete group {name}: {code}"),
                }
            }
        }
    }
    Ok(())
}

async fn describe(connect: &ConnectArgs, group: &str) -> anyhow::Result<()> {
    let consumer: BaseConsumer = connect.client_config()?.create()?;
    let groups = consumer
        .fetch_group_list(Some(group), REQUEST_TIMEOUT)
        .context("DescribeGroups failed")?;
    let Some(info) = groups.groups().first() else {
        bail!("group {group} not found");
    };
    println!(
        "group: {}\nstate: {}\nprotocol: {} {}",
        info.name(),
        info.state(),
        info.protocol_type(),
        info.protocol()
    );
    println!("members: {}", info.members().len());
    for member in info.members() {
        println!(
            "  {}\t{}\t{}",
            member.id(),
            member.client_id(),
            member.client_host()
        );
    }
    let committed = committed_offsets(connect, group).await?;
    if committed.is_empty() {
        println!("no committed offsets");
        return Ok(());
    }
    println!("TOPIC\tPARTITION\tCOMMITTED\tLOG-END\tLAG");
    for (topic, partition, offset) in committed {
        let (_, high) = consumer
            .fetch_watermarks(&topic, partition, REQUEST_TIMEOUT)
            .with_context(|| format!("ListOffsets for {topic}-{partition} failed"))?;
        let lag = if offset >= 0 {
            (high - offset).max(0).to_string()
        } else {
            "-".into()
        };
        println!("{topic}\t{partition}\t{offset}\t{high}\t{lag}");
    }
    Ok(())
}

/// Every committed offset of a group (OffsetFetch with all topics), sorted.
async fn committed_offsets(
    connect: &ConnectArgs,
    group: &str,
) -> anyhow::Result<Vec<(String, i32, i64)>> {
    use kafka_protocol::messages::{GroupId, OffsetFetchRequest};
    use kafka_protocol::protocol::StrBytes;
    // Offsets live on the group's coordinator, which need not be the bootstrap broker.
    let mut client = crate::protocol_client::connect_to_coordinator(
        connect,
        crate::protocol_client::GROUP_KEY,
        group,
    )
    .await?;
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_topics(None);
    let response = client.call(7, &request).await?;
    if response.error_code != 0 {
        bail!("OffsetFetch failed with error code {}", response.error_code);
    }
    let mut offsets: Vec<(String, i32, i64)> = response
        .topics
        .into_iter()
        .flat_map(|t| {
            let name = t.name.to_string();
            t.partitions
                .into_iter()
                .map(move |p| (name.clone(), p.partition_index, p.committed_offset))
        })
        .collect();
    offsets.sort();
    Ok(offsets)
}
