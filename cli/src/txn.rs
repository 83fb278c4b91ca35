//! `weir txn list|describe|producers|abort`: transactions, like Kafka's kafka-transactions.sh
//! (KIP-664). In a cluster, `list` asks every broker, `describe` the id's coordinator, and
//! `producers`/`abort` the partition's leader. `abort` ends a hanging transaction in one partition by writing an abort marker
//! for the producer whose open transaction starts at the given offset (or has the given id).

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::describe_producers_response::ProducerState;
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    DescribeProducersRequest, DescribeTransactionsRequest, ListTransactionsRequest, TopicName,
    TransactionalId, WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::ConnectArgs;
use crate::protocol_client::{
    broker_addresses, connect_at, connect_to_coordinator, connect_to_leader, ProtocolClient,
    TRANSACTION_KEY,
};

#[derive(Args)]
pub(crate) struct TxnArgs {
    #[command(flatten)]
    connect: ConnectArgs,
    #[command(subcommand)]
    command: TxnCommand,
}

#[derive(Subcommand)]
enum TxnCommand {
    /// Transactional ids with their producer id and state.
    List {
        /// Only ids in this state (Ongoing, PrepareCommit, CompleteAbort, …); repeatable.
        #[arg(long)]
        state: Vec<String>,
    },
    /// One transactional id: state, producer, timeout, start time, partitions.
    Describe { transactional_id: String },
    /// The producers a partition knows, with their open transaction's first offset.
    Producers {
        #[arg(long)]
        topic: String,
        #[arg(long, short = 'p')]
        partition: i32,
    },
    /// Abort a hanging transaction in one partition.
    Abort {
        #[arg(long)]
        topic: String,
        #[arg(long, short = 'p')]
        partition: i32,
        /// The first offset of the open transaction to abort (see `weir txn producers`).
        #[arg(long, conflicts_with = "producer_id")]
        start_offset: Option<i64>,
        /// Or the producer whose open transaction to abort.
        #[arg(long)]
        producer_id: Option<i64>,
    },
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

#[allow(clippy::too_many_lines)] // one arm per subcommand
pub(crate) async fn run(args: TxnArgs) -> anyhow::Result<()> {
    let connect = &args.connect;
    match args.command {
        TxnCommand::List { state } => {
            // Each broker lists the ids it coordinates (as Kafka's admin client, ask them all).
            let request = ListTransactionsRequest::default()
                .with_state_filters(state.iter().map(|s| text(s)).collect())
                .with_duration_filter(-1);
            let mut listed = Vec::new();
            for address in broker_addresses(connect).await? {
                let mut client = connect_at(connect, &address).await?;
                let response = client.call(1, &request).await?;
                if response.error_code != 0 {
                    bail!(
                        "ListTransactions at {address} failed with error code {}",
                        response.error_code
                    );
                }
                listed.extend(response.transaction_states.into_iter().map(|txn| {
                    (
                        txn.transactional_id.to_string(),
                        txn.producer_id.0,
                        txn.transaction_state.to_string(),
                    )
                }));
            }
            listed.sort();
            println!("TRANSACTIONAL-ID\tPRODUCER-ID\tSTATE");
            for (transactional_id, producer_id, state) in listed {
                println!("{transactional_id}\t{producer_id}\t{state}");
            }
        }
        TxnCommand::Describe { transactional_id } => {
            let mut client =
                connect_to_coordinator(connect, TRANSACTION_KEY, &transactional_id).await?;
            let request = DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![TransactionalId(text(&transactional_id))]);
            let response = client.call(0, &request).await?;
            let Some(txn) = response.transaction_states.into_iter().next() else {
                bail!("no answer for {transactional_id}");
            };
            if txn.error_code != 0 {
                bail!(
                    "transactional id {transactional_id}: error code {}",
                    txn.error_code
                );
            }
            println!("transactional id: {transactional_id}");
            println!("state: {}", txn.transaction_state.as_str());
            println!(
                "producer: id {} epoch {}",
                txn.producer_id.0, txn.producer_epoch
            );
            println!("timeout ms: {}", txn.transaction_timeout_ms);
            println!("started ms: {}", txn.transaction_start_time_ms);
            for topic in txn.topics {
                println!("  {}\t{:?}", topic.topic.as_str(), topic.partitions);
            }
        }
        TxnCommand::Producers { topic, partition } => {
            let mut client = connect_to_leader(connect, &topic, partition).await?;
            println!("PRODUCER-ID\tEPOCH\tLAST-SEQUENCE\tCOORDINATOR-EPOCH\tTXN-START-OFFSET");
            for producer in producers(&mut client, &topic, partition).await? {
                println!(
                    "{}\t{}\t{}\t{}\t{}",
                    producer.producer_id.0,
                    producer.producer_epoch,
                    producer.last_sequence,
                    producer.coordinator_epoch,
                    producer.current_txn_start_offset
                );
            }
        }
        TxnCommand::Abort {
            topic,
            partition,
            start_offset,
            producer_id,
        } => {
            // The marker is written by the partition's leader.
            let mut client = connect_to_leader(connect, &topic, partition).await?;
            let candidates = producers(&mut client, &topic, partition).await?;
            let found = candidates.iter().find(|p| {
                p.current_txn_start_offset >= 0
                    && (start_offset == Some(p.current_txn_start_offset)
                        || producer_id == Some(p.producer_id.0))
            });
            let Some(producer) = found else {
                bail!(
                    "no open transaction in {topic}-{partition} matches (see `weir txn producers`)"
                );
            };
            let marker = WritableTxnMarker::default()
                .with_producer_id(producer.producer_id)
                .with_producer_epoch(producer.producer_epoch as i16)
                .with_transaction_result(false)
                .with_coordinator_epoch(producer.coordinator_epoch.max(0))
                .with_topics(vec![WritableTxnMarkerTopic::default()
                    .with_name(TopicName(text(&topic)))
                    .with_partition_indexes(vec![partition])]);
            let response = client
                .call(
                    1,
                    &WriteTxnMarkersRequest::default().with_markers(vec![marker]),
                )
                .await?;
            let code = response
                .markers
                .first()
                .and_then(|m| m.topics.first())
                .and_then(|t| t.partitions.first())
                .map_or(-1, |p| p.error_code);
            if code != 0 {
                bail!("WriteTxnMarkers failed with error code {code}");
            }
            println!(
                "aborted the transaction of producer {} (epoch {}) starting at offset {} in {topic}-{partition}",
                producer.producer_id.0, producer.producer_epoch, producer.current_txn_start_offset
            );
        }
    }
    Ok(())
}

async fn producers(
    client: &mut ProtocolClient,
    topic: &str,
    partition: i32,
) -> anyhow::Result<Vec<ProducerState>> {
    let request = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(TopicName(text(topic)))
        .with_partition_indexes(vec![partition])]);
    let response = client.call(0, &request).await?;
    let result = response
        .topics
        .into_iter()
        .next()
        .and_then(|t| t.partitions.into_iter().next())
        .context("DescribeProducers returned no partition")?;
    if result.error_code != 0 {
        bail!(
            "DescribeProducers for {topic}-{partition} failed with error code {}",
            result.error_code
        );
    }
    Ok(result.active_producers)
}
