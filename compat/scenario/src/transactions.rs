//! The transactions section of the differential scenario: a transactional id through aborted and
//! committed transactions, the error cases, and what read_committed readers see.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use serde_json::{json, Value};

use crate::{name, Scenario};

/// A transactional batch: `values` with sequences from `first_sequence`.
pub(crate) fn transactional_batch(
    producer: (i64, i16),
    first_sequence: i32,
    values: &[&str],
) -> Bytes {
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, value)| Record {
            transactional: true,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: producer.0,
            producer_epoch: producer.1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: first_sequence + i as i32,
            timestamp: 1_700_000_000_000 + i as i64,
            key: None,
            value: Some(Bytes::copy_from_slice(value.as_bytes())),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options).expect("encode batch");
    buf.freeze()
}

pub(crate) fn txn_id(id: &str) -> TransactionalId {
    TransactionalId(StrBytes::from_string(id.to_string()))
}

/// The whole batches of a fetch's records, split by their length fields (a partial batch at
/// the end, as a fetch may return, is left out).
pub(crate) fn whole_batches(bytes: &Bytes) -> Vec<Bytes> {
    let mut batches = Vec::new();
    let mut rest = bytes.clone();
    while rest.len() >= 61 {
        let length = i32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]) as usize + 12;
        if length > rest.len() {
            break;
        }
        batches.push(rest.split_to(length));
    }
    batches
}

/// The records of a fetch, batch by batch: data records with their offset and value, each
/// control batch (transaction marker) as its offset only. Batches are split by their length
/// field and decoded one by one, so that a marker format the decoder does not know cannot hide
/// the batches after it.
fn records_by_batch(bytes: &Bytes, out: &mut Vec<Value>) -> Option<i64> {
    let mut next_offset = None;
    for batch in whole_batches(bytes) {
        let base_offset = i64::from_be_bytes(batch[0..8].try_into().expect("8 bytes"));
        let last_delta = i32::from_be_bytes([batch[23], batch[24], batch[25], batch[26]]);
        next_offset = Some(base_offset + last_delta as i64 + 1);
        let attributes = i16::from_be_bytes([batch[21], batch[22]]);
        if attributes & (1 << 5) != 0 {
            out.push(json!({"offset": base_offset, "control": true}));
            continue;
        }
        let mut one = batch;
        if let Ok(set) = RecordBatchDecoder::decode(&mut one) {
            for record in set.records {
                let value = record
                    .value
                    .map(|v| String::from_utf8_lossy(&v).into_owned());
                out.push(json!({"offset": record.offset, "value": value}));
            }
        }
    }
    next_offset
}

impl Scenario {
    pub(crate) async fn init_transactional(
        &mut self,
        id: &str,
        timeout_ms: i32,
    ) -> anyhow::Result<InitProducerIdResponse> {
        // As clients do: find the transaction coordinator first (Kafka creates its state topic
        // then), retrying while it is not available yet.
        let find = FindCoordinatorRequest::default()
            .with_key_type(1)
            .with_key(StrBytes::from_string(id.to_string()));
        for _ in 0..100 {
            let response = self.client.call(3, &find).await?;
            if response.error_code == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(txn_id(id)))
            .with_transaction_timeout_ms(timeout_ms)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        // Retriable while Kafka loads its transaction coordinator or finishes a previous one.
        let mut response = self.client.call(4, &request).await?;
        for _ in 0..100 {
            if !matches!(response.error_code, 14 | 15 | 16 | 51) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            response = self.client.call(4, &request).await?;
        }
        Ok(response)
    }

    async fn add_partitions(
        &mut self,
        id: &str,
        producer: (i64, i16),
        topic: &str,
        partitions: &[i32],
    ) -> anyhow::Result<Value> {
        self.add_partitions_at(3, id, producer, topic, partitions)
            .await
    }

    /// AddPartitionsToTxn as a client of `version` (≤ 3) sends it.
    pub(crate) async fn add_partitions_at(
        &mut self,
        version: i16,
        id: &str,
        producer: (i64, i16),
        topic: &str,
        partitions: &[i32],
    ) -> anyhow::Result<Value> {
        let request = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(txn_id(id))
            .with_v3_and_below_producer_id(ProducerId(producer.0))
            .with_v3_and_below_producer_epoch(producer.1)
            .with_v3_and_below_topics(vec![
                add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                    .with_name(name(topic))
                    .with_partitions(partitions.to_vec()),
            ]);
        // CONCURRENT_TRANSACTIONS while Kafka still writes the previous markers.
        let busy = |r: &AddPartitionsToTxnResponse| {
            r.results_by_topic_v3_and_below[0]
                .results_by_partition
                .iter()
                .any(|p| p.partition_error_code == 51)
        };
        let response = self.call_retrying(version, &request, busy).await?;
        let mut errors: Vec<(i32, i16)> = response.results_by_topic_v3_and_below[0]
            .results_by_partition
            .iter()
            .map(|p| (p.partition_index, p.partition_error_code))
            .collect();
        errors.sort();
        Ok(json!({"errors": errors}))
    }

    async fn end_txn(
        &mut self,
        id: &str,
        producer: (i64, i16),
        commit: bool,
    ) -> anyhow::Result<Value> {
        self.end_txn_at(3, id, producer, commit).await
    }

    /// EndTxn as a client of `version` sends it (v5+: transaction version 2).
    pub(crate) async fn end_txn_at(
        &mut self,
        version: i16,
        id: &str,
        producer: (i64, i16),
        commit: bool,
    ) -> anyhow::Result<Value> {
        let request = EndTxnRequest::default()
            .with_transactional_id(txn_id(id))
            .with_producer_id(ProducerId(producer.0))
            .with_producer_epoch(producer.1)
            .with_committed(commit);
        // CONCURRENT_TRANSACTIONS while Kafka still writes the previous markers.
        let response = self
            .call_retrying(version, &request, |r| r.error_code == 51)
            .await?;
        Ok(json!({"error": response.error_code}))
    }

    /// read_committed offsets: waits until no transaction holds the partition (Kafka writes its
    /// markers after answering EndTxn), then reports the last stable offset.
    async fn stable_end(&mut self, topic: &str) -> anyhow::Result<Value> {
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_isolation_level(1)
            .with_topics(vec![list_offsets_request::ListOffsetsTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![
                    list_offsets_request::ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(-1),
                ])]);
        let mut response = self.client.call(7, &request).await?;
        for _ in 0..50 {
            let latest = self.list_offset(topic, 0, -1).await?;
            if Some(response.topics[0].partitions[0].offset) == latest["offset"].as_i64() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            response = self.client.call(7, &request).await?;
        }
        let result = &response.topics[0].partitions[0];
        Ok(json!({"error": result.error_code, "offset": result.offset}))
    }

    /// A read_committed fetch from 0: data records, the aborted transactions, the offsets.
    async fn fetch_committed(&mut self, topic: &str, producer_id: i64) -> anyhow::Result<Value> {
        self.fetch_isolated(topic, producer_id, 1).await
    }

    /// Fetches from 0 like a consumer (request after request, up to the end it may read):
    /// every batch, the aborted transactions it was told about, the last response's offsets.
    async fn fetch_isolated(
        &mut self,
        topic: &str,
        producer_id: i64,
        isolation_level: i8,
    ) -> anyhow::Result<Value> {
        let mut records = Vec::new();
        let mut aborted: Vec<Value> = Vec::new();
        let mut position = 0;
        let mut last = json!({});
        for _ in 0..20 {
            let request = FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(0)
                .with_min_bytes(1)
                .with_max_bytes(1 << 20)
                .with_isolation_level(isolation_level)
                .with_topics(vec![fetch_request::FetchTopic::default()
                    .with_topic(name(topic))
                    .with_partitions(vec![fetch_request::FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(position)
                        .with_partition_max_bytes(1 << 20)])]);
            let response = self.client.call(12, &request).await?;
            let data = &response.responses[0].partitions[0];
            for entry in data.aborted_transactions.iter().flatten() {
                let seen = json!({"same_producer": entry.producer_id.0 == producer_id, "first_offset": entry.first_offset});
                if !aborted.contains(&seen) {
                    aborted.push(seen);
                }
            }
            last = json!({"error": data.error_code, "high_watermark": data.high_watermark, "last_stable_offset": data.last_stable_offset});
            let end = if isolation_level == 1 {
                data.last_stable_offset
            } else {
                data.high_watermark
            };
            let next = data
                .records
                .as_ref()
                .and_then(|bytes| records_by_batch(bytes, &mut records));
            match next {
                Some(next) if next > position => position = next,
                _ => break,
            }
            if position >= end {
                break;
            }
        }
        Ok(json!({"last_response": last, "records": records, "aborted": aborted}))
    }

    pub(crate) async fn transactions_section(&mut self) -> anyhow::Result<()> {
        let topic = self.topic("compat-txn");
        self.create_topic(&topic, 2, 1, &[]).await?;
        self.wait_ready(&topic).await?;
        let id = self.topic("compat-txn-id");
        let init = self.init_transactional(&id, 60_000).await?;
        self.note(
            "transactions/init",
            json!({"error": init.error_code, "epoch": init.producer_epoch}),
        );
        let too_long = self
            .init_transactional(&self.topic("compat-txn-long"), 2_000_000_000)
            .await?;
        self.note(
            "transactions/init_timeout_too_long",
            json!({"error": too_long.error_code}),
        );
        let producer = (init.producer_id.0, init.producer_epoch);

        let step = self.add_partitions(&id, producer, &topic, &[0]).await?;
        self.note("transactions/add_partitions", step);
        let step = self.add_partitions(&id, producer, &topic, &[0, 9]).await?;
        self.note("transactions/add_unknown_partition", step);
        let records = transactional_batch(producer, 0, &["a1", "a2"]);
        let step = self.produce_as(Some(&id), &topic, 0, -1, records).await?;
        self.note("transactions/produce_in_txn", step);
        let records = transactional_batch(producer, 2, &["no-id"]);
        let step = self.produce(&topic, 0, -1, records).await?;
        self.note("transactions/produce_without_transactional_id", step);
        let step = self.end_txn(&id, producer, false).await?;
        self.note("transactions/abort", step);
        let step = self.stable_end(&topic).await?;
        self.note("transactions/lso_after_abort", step);

        self.add_partitions(&id, producer, &topic, &[0]).await?;
        let records = transactional_batch(producer, 2, &["c1"]);
        let step = self.produce_as(Some(&id), &topic, 0, -1, records).await?;
        self.note("transactions/produce_second_txn", step);
        let step = self
            .end_txn(&id, (producer.0, producer.1 - 1), true)
            .await?;
        self.note("transactions/end_with_stale_epoch", step);
        let step = self.end_txn(&id, producer, true).await?;
        self.note("transactions/commit", step);
        let step = self.end_txn(&id, producer, true).await?;
        self.note("transactions/commit_retry", step);
        let step = self.end_txn(&id, producer, false).await?;
        self.note("transactions/abort_after_commit", step);
        let step = self.stable_end(&topic).await?;
        self.note("transactions/lso_after_commit", step);
        let step = self.fetch_committed(&topic, producer.0).await?;
        self.note("transactions/fetch_read_committed", step);
        let step = self.fetch_isolated(&topic, producer.0, 0).await?;
        self.note("transactions/fetch_read_uncommitted", step);

        // A new incarnation bumps the epoch; the old one is fenced.
        let again = self.init_transactional(&id, 60_000).await?;
        self.note("transactions/reinit", json!({"error": again.error_code, "same_id": again.producer_id == init.producer_id, "epoch": again.producer_epoch}));
        let step = self.add_partitions(&id, producer, &topic, &[1]).await?;
        self.note("transactions/add_partitions_fenced", step);

        let request =
            DescribeTransactionsRequest::default().with_transactional_ids(vec![txn_id(&id)]);
        let response = self.client.call(0, &request).await?;
        let state = &response.transaction_states[0];
        self.note(
            "transactions/describe",
            json!({"error": state.error_code, "state": state.transaction_state.to_string(), "epoch": state.producer_epoch, "topics": state.topics.len()}),
        );
        self.delete_topic(&topic).await?;
        Ok(())
    }
}
