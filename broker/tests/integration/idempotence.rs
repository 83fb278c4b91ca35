//! Idempotent producers: sequence rules at the protocol level (duplicate, gap, stale epoch,
//! unknown producer), deduplication across a kill -9 of the broker, and rdkafka with
//! `enable.idempotence=true`.

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use rdkafka::Offset;

use crate::common;
use crate::raw::RawClient;

async fn init_producer_id(client: &mut RawClient) -> i64 {
    let response = client
        .call(
            4,
            &InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        )
        .await;
    assert_eq!(response.error_code, 0);
    response.producer_id.0
}

/// (error code, base offset) of producing one idempotent batch to `topic`-0.
async fn produce(client: &mut RawClient, topic: &str, batch: Bytes) -> (i16, i64) {
    let partition = produce_request::PartitionProduceData::default()
        .with_index(0)
        .with_records(Some(batch));
    let topic = produce_request::TopicProduceData::default()
        .with_name(TopicName(StrBytes::from_string(topic.to_string())))
        .with_partition_data(vec![partition]);
    let response = client
        .call(
            9,
            &ProduceRequest::default()
                .with_acks(-1)
                .with_timeout_ms(5000)
                .with_topic_data(vec![topic]),
        )
        .await;
    let result = &response.responses[0].partition_responses[0];
    (result.error_code, result.base_offset)
}

fn batch(producer_id: i64, epoch: i16, first_sequence: i32, records: usize) -> Bytes {
    let values: Vec<Vec<u8>> = (0..records)
        .map(|i| format!("s{}", first_sequence as usize + i).into_bytes())
        .collect();
    let values: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
    crate::records::encode_idempotent_batch(&values, producer_id, epoch, first_sequence).freeze()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequence_rules_hold_and_survive_a_broker_crash() {
    let dir = tempfile::tempdir().unwrap();
    let properties = [("log.segment.bytes", "1024")];
    let broker = common::start(dir.path(), &properties).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "idem", 1, &[]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;
    let producer = init_producer_id(&mut client).await;
    let ok = 0;

    assert_eq!(
        produce(&mut client, "idem", batch(producer, 0, 0, 3)).await,
        (ok, 0)
    );
    assert_eq!(
        produce(&mut client, "idem", batch(producer, 0, 3, 2)).await,
        (ok, 3)
    );
    // A retry of the first batch: its original offset, nothing appended.
    assert_eq!(
        produce(&mut client, "idem", batch(producer, 0, 0, 3)).await,
        (ok, 0)
    );
    // A gap.
    let (error, _) = produce(&mut client, "idem", batch(producer, 0, 9, 1)).await;
    assert_eq!(error, ResponseError::OutOfOrderSequenceNumber.code());
    // A producer this partition never saw, not starting at 0.
    let (error, _) = produce(&mut client, "idem", batch(producer + 1000, 0, 5, 1)).await;
    assert_eq!(error, ResponseError::UnknownProducerId.code());
    // A new epoch starts at 0 and fences the old one.
    assert_eq!(
        produce(&mut client, "idem", batch(producer, 1, 0, 1)).await,
        (ok, 5)
    );
    let (error, _) = produce(&mut client, "idem", batch(producer, 0, 5, 1)).await;
    assert_eq!(error, ResponseError::InvalidProducerEpoch.code());
    for sequence in 1..40 {
        let (error, _) = produce(&mut client, "idem", batch(producer, 1, sequence, 1)).await;
        assert_eq!(error, ok);
    }
    let last_offset = 5 + 39;

    // kill -9: no snapshot at the log end; the roll snapshots plus replay rebuild the state.
    drop(client);
    broker.abort().await;
    let broker = common::start(dir.path(), &properties).await;
    let mut client = RawClient::connect(broker.local_addr()).await;
    assert_eq!(
        produce(&mut client, "idem", batch(producer, 1, 39, 1)).await,
        (ok, last_offset),
        "the retry after the crash is still a duplicate"
    );
    assert_eq!(
        produce(&mut client, "idem", batch(producer, 1, 40, 1)).await,
        (ok, last_offset + 1)
    );
    let fresh = init_producer_id(&mut client).await;
    assert!(
        fresh > producer,
        "producer ids are not reused after a restart: {fresh} vs {producer}"
    );
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rdkafka_idempotent_producer_writes_each_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let broker = common::start(dir.path(), &[]).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "idem-rdkafka", 1, &[]).await;
    let producer = common::producer(
        &bootstrap,
        &[
            ("enable.idempotence", "true"),
            ("linger.ms", "1"),
            ("batch.num.messages", "50"),
        ],
    );
    let values: Vec<String> = (0..2000).map(|i| format!("record-{i}")).collect();
    let offsets = common::produce_values(&producer, "idem-rdkafka", 0, &values).await;
    assert_eq!(offsets, (0..2000).collect::<Vec<i64>>());
    let messages = common::consume(&bootstrap, "idem-rdkafka", 0, Offset::Beginning, 2000).await;
    assert_eq!(common::payloads(&messages), values);
    let state = {
        let topic = broker.context().topics.get("idem-rdkafka").unwrap();
        let log = topic.partition(0).unwrap().log();
        log.producer_state().producers().len()
    };
    assert_eq!(state, 1, "one idempotent producer known to the partition");
    broker.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_producers_expire_after_producer_id_expiration_ms() {
    let dir = tempfile::tempdir().unwrap();
    let properties = [
        ("producer.id.expiration.ms", "500"),
        ("producer.id.expiration.check.interval.ms", "100"),
    ];
    let broker = common::start(dir.path(), &properties).await;
    let bootstrap = common::bootstrap(&broker);
    common::create_topic(&bootstrap, "expiring-producers", 1, &[]).await;
    let mut client = RawClient::connect(broker.local_addr()).await;
    let producer = init_producer_id(&mut client).await;
    assert_eq!(
        produce(&mut client, "expiring-producers", batch(producer, 0, 0, 2)).await,
        (0, 0)
    );
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let (error, _) = produce(&mut client, "expiring-producers", batch(producer, 0, 2, 1)).await;
    assert_eq!(
        error,
        ResponseError::UnknownProducerId.code(),
        "state expired"
    );
    broker.shutdown().await.unwrap();
}
