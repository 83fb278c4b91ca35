//! Transaction version 2 (KIP-890 part 2) at the protocol level: the broker advertises
//! `transaction.version` 2; a Produce v12 adds its partition to the transaction; every EndTxn v5
//! bumps the epoch, so a late write or a late EndTxn of an earlier transaction is fenced instead
//! of landing in the next one, while a retry of the last EndTxn is answered as before.

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use crate::common;
use crate::raw::RawClient;

const TRANSACTIONAL_ID: &str = "tv2-app";
const TOPIC: &str = "tv2";

fn value_batch(producer_id: i64, epoch: i16, sequence: i32, value: &str) -> Bytes {
    crate::records::encode_producer_batch(&[value.as_bytes()], producer_id, epoch, sequence, true)
        .freeze()
}

async fn produce_v12(client: &mut RawClient, batch: Bytes) -> i16 {
    let partition = produce_request::PartitionProduceData::default()
        .with_index(0)
        .with_records(Some(batch));
    let topic = produce_request::TopicProduceData::default()
        .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
        .with_partition_data(vec![partition]);
    let request = ProduceRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str(
            TRANSACTIONAL_ID,
        ))))
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![topic]);
    let response = client.call(12, &request).await;
    response.responses[0].partition_responses[0].error_code
}

/// (error code, producer id, epoch) of an EndTxn v5.
async fn end_txn_v5(
    client: &mut RawClient,
    producer_id: i64,
    epoch: i16,
    commit: bool,
) -> (i16, i64, i16) {
    let request = EndTxnRequest::default()
        .with_transactional_id(TransactionalId(StrBytes::from_static_str(TRANSACTIONAL_ID)))
        .with_producer_id(ProducerId(producer_id))
        .with_producer_epoch(epoch)
        .with_committed(commit);
    let response = client.call(5, &request).await;
    (
        response.error_code,
        response.producer_id.0,
        response.producer_epoch,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_transaction_bumps_the_epoch_and_fences_what_came_late() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, TOPIC, 1, &[]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;

    let versions = client.call(3, &ApiVersionsRequest::default()).await;
    let feature = versions
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .expect("transaction.version is finalized");
    assert_eq!(feature.max_version_level, 2);

    let init = client
        .call(
            5,
            &InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str(
                    TRANSACTIONAL_ID,
                ))))
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        )
        .await;
    assert_eq!(init.error_code, 0);
    let (id, epoch) = (init.producer_id.0, init.producer_epoch);

    // Transaction 1: the write adds its partition itself (no AddPartitionsToTxn).
    assert_eq!(
        produce_v12(&mut client, value_batch(id, epoch, 0, "first")).await,
        0
    );
    assert_eq!(
        end_txn_v5(&mut client, id, epoch, true).await,
        (0, id, epoch + 1)
    );
    assert_eq!(
        end_txn_v5(&mut client, id, epoch, true).await,
        (0, id, epoch + 1),
        "a retried EndTxn is answered as the first"
    );
    // A write of transaction 1 arriving late is fenced: it cannot open a transaction.
    assert_eq!(
        produce_v12(&mut client, value_batch(id, epoch, 1, "late")).await,
        ResponseError::InvalidProducerEpoch.code()
    );

    // Transaction 2 with the new epoch; transaction 1's EndTxn cannot end it.
    let next = epoch + 1;
    assert_eq!(
        produce_v12(&mut client, value_batch(id, next, 0, "second")).await,
        0
    );
    let (late_end, _, _) = end_txn_v5(&mut client, id, epoch, false).await;
    assert_eq!(late_end, ResponseError::ProducerFenced.code());
    assert_eq!(
        end_txn_v5(&mut client, id, next, false).await,
        (0, id, next + 1)
    );

    // Transaction 3 commits; read_committed sees transactions 1 and 3 only.
    assert_eq!(
        produce_v12(&mut client, value_batch(id, next + 1, 0, "third")).await,
        0
    );
    assert_eq!(
        end_txn_v5(&mut client, id, next + 1, true).await,
        (0, id, next + 2)
    );
    let committed = crate::transactions::read_values(&bootstrap, TOPIC, "read_committed", 2);
    assert_eq!(committed, ["first", "third"]);
    let all = crate::transactions::read_values(&bootstrap, TOPIC, "read_uncommitted", 3);
    assert_eq!(all, ["first", "second", "third"]);
}
