//! The fencing section of the differential scenario: a transactional producer ("zombie") is
//! fenced by a newer instance with the same transactional id, then tries every transactional
//! request at the versions clients of transaction versions 1 and 2 send. Which error each
//! answer carries decides whether the client treats the fence as fatal (librdkafka and the Java
//! client raise PRODUCER_FENCED only for the codes Kafka gives at that version).

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use serde_json::{json, Value};

use crate::transactions::{transactional_batch, txn_id};
use crate::{name, text, Scenario};

/// The versions a client of one transaction version sends.
struct ClientVersions {
    label: &'static str,
    produce: i16,
    add_offsets: i16,
    txn_offset_commit: i16,
    end_txn: i16,
    init_producer_id: i16,
    /// Transaction version 2 clients add partitions through Produce, not AddPartitionsToTxn.
    add_partitions: Option<i16>,
}

const TV1: ClientVersions = ClientVersions {
    label: "tv1",
    produce: 9,
    add_offsets: 3,
    txn_offset_commit: 3,
    end_txn: 3,
    init_producer_id: 4,
    add_partitions: Some(3),
};

const TV2: ClientVersions = ClientVersions {
    label: "tv2",
    produce: 12,
    add_offsets: 4,
    txn_offset_commit: 5,
    end_txn: 5,
    init_producer_id: 5,
    add_partitions: None,
};

impl Scenario {
    pub(crate) async fn fencing_section(&mut self) -> anyhow::Result<()> {
        let topic = self.topic("compat-fence");
        self.create_topic(&topic, 2, 1, &[]).await?;
        self.wait_ready(&topic).await?;
        let zombie = self.fenced_zombie(&TV1, &topic).await?;
        self.zombie_requests(&TV1, &topic, &zombie).await?;
        // The versions older clients send, whose answers predate PRODUCER_FENCED.
        let (id, producer) = zombie;
        let step = self
            .add_partitions_at(1, &id, producer, &topic, &[1])
            .await?;
        self.note("fencing/tv1/add_partitions_v1", step);
        let step = self.add_offsets(0, &id, producer).await?;
        self.note("fencing/tv1/add_offsets_v0", step);
        let step = self.txn_offset_commit(0, &id, producer, &topic).await?;
        self.note("fencing/tv1/txn_offset_commit_v0", step);
        let step = self.end_txn_at(0, &id, producer, true).await?;
        self.note("fencing/tv1/end_txn_v0", step);
        let step = self.init_as(3, &id, producer).await?;
        self.note("fencing/tv1/init_producer_id_v3", step);

        let zombie = self.fenced_zombie(&TV2, &topic).await?;
        self.zombie_requests(&TV2, &topic, &zombie).await?;
        self.delete_topic(&topic).await?;
        Ok(())
    }

    /// A producer whose transaction holds partition 0 and the group's offsets, fenced by a
    /// newer instance: its transactional id and (producer id, epoch).
    async fn fenced_zombie(
        &mut self,
        versions: &ClientVersions,
        topic: &str,
    ) -> anyhow::Result<(String, (i64, i16))> {
        let label = versions.label;
        let id = self.topic(&format!("compat-fence-{label}"));
        let init = self.init_transactional(&id, 60_000).await?;
        let producer = (init.producer_id.0, init.producer_epoch);
        if let Some(version) = versions.add_partitions {
            self.add_partitions_at(version, &id, producer, topic, &[0])
                .await?;
        }
        let records = transactional_batch(producer, 0, &["before-fence"]);
        let step = self
            .produce_at(versions.produce, Some(&id), topic, 0, -1, records)
            .await?;
        self.note(&format!("fencing/{label}/produce_before_fence"), step);
        let step = self
            .add_offsets(versions.add_offsets, &id, producer)
            .await?;
        self.note(&format!("fencing/{label}/add_offsets_before_fence"), step);
        let step = self
            .txn_offset_commit(versions.txn_offset_commit, &id, producer, topic)
            .await?;
        self.note(
            &format!("fencing/{label}/txn_offset_commit_before_fence"),
            step,
        );
        let newer = self.init_transactional(&id, 60_000).await?;
        self.note(
            &format!("fencing/{label}/newer_instance"),
            json!({"error": newer.error_code, "same_id": newer.producer_id.0 == producer.0, "newer_epoch": newer.producer_epoch > producer.1}),
        );
        Ok((id, producer))
    }

    /// Every transactional request of the fenced producer, at the versions of its client.
    async fn zombie_requests(
        &mut self,
        versions: &ClientVersions,
        topic: &str,
        (id, producer): &(String, (i64, i16)),
    ) -> anyhow::Result<()> {
        let (id, producer) = (id.as_str(), *producer);
        let label = versions.label;
        let records = transactional_batch(producer, 1, &["zombie"]);
        let step = self
            .produce_at(versions.produce, Some(id), topic, 0, -1, records)
            .await?;
        self.note(&format!("fencing/{label}/produce_same_partition"), step);
        let records = transactional_batch(producer, 0, &["zombie"]);
        let step = self
            .produce_at(versions.produce, Some(id), topic, 1, -1, records)
            .await?;
        self.note(&format!("fencing/{label}/produce_new_partition"), step);
        if let Some(version) = versions.add_partitions {
            let step = self
                .add_partitions_at(version, id, producer, topic, &[1])
                .await?;
            self.note(&format!("fencing/{label}/add_partitions"), step);
        }
        let step = self.add_offsets(versions.add_offsets, id, producer).await?;
        self.note(&format!("fencing/{label}/add_offsets"), step);
        let step = self
            .txn_offset_commit(versions.txn_offset_commit, id, producer, topic)
            .await?;
        self.note(&format!("fencing/{label}/txn_offset_commit"), step);
        let step = self
            .end_txn_at(versions.end_txn, id, producer, true)
            .await?;
        self.note(&format!("fencing/{label}/commit"), step);
        let step = self
            .end_txn_at(versions.end_txn, id, producer, false)
            .await?;
        self.note(&format!("fencing/{label}/abort"), step);
        let step = self
            .init_as(versions.init_producer_id, id, producer)
            .await?;
        self.note(&format!("fencing/{label}/init_producer_id"), step);
        Ok(())
    }

    fn fencing_group(&self, id: &str) -> String {
        format!("{id}-group")
    }

    async fn add_offsets(
        &mut self,
        version: i16,
        id: &str,
        producer: (i64, i16),
    ) -> anyhow::Result<Value> {
        let request = AddOffsetsToTxnRequest::default()
            .with_transactional_id(txn_id(id))
            .with_producer_id(ProducerId(producer.0))
            .with_producer_epoch(producer.1)
            .with_group_id(GroupId(text(&self.fencing_group(id))));
        // CONCURRENT_TRANSACTIONS while Kafka still writes the previous markers.
        let response = self
            .call_retrying(version, &request, |r| r.error_code == 51)
            .await?;
        Ok(json!({"error": response.error_code}))
    }

    /// A TxnOffsetCommit of offset 1 of the topic's partition 0, as a standalone consumer
    /// (no generation) of the id's group.
    async fn txn_offset_commit(
        &mut self,
        version: i16,
        id: &str,
        producer: (i64, i16),
        topic: &str,
    ) -> anyhow::Result<Value> {
        let group = self.fencing_group(id);
        self.find_group_coordinator(&group).await?;
        let request = TxnOffsetCommitRequest::default()
            .with_transactional_id(txn_id(id))
            .with_group_id(GroupId(text(&group)))
            .with_producer_id(ProducerId(producer.0))
            .with_producer_epoch(producer.1)
            .with_generation_id(-1)
            .with_member_id(StrBytes::default())
            .with_topics(vec![
                txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                    .with_name(name(topic))
                    .with_partitions(vec![
                        txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(1)
                            .with_committed_leader_epoch(-1),
                    ]),
            ]);
        let code = |r: &TxnOffsetCommitResponse| r.topics[0].partitions[0].error_code;
        // COORDINATOR_LOAD_IN_PROGRESS / CONCURRENT_TRANSACTIONS.
        let response = self
            .call_retrying(version, &request, |r| matches!(code(r), 14 | 51))
            .await?;
        Ok(json!({"error": code(&response)}))
    }

    /// Clients find the group coordinator first; Kafka creates `__consumer_offsets` then.
    pub(crate) async fn find_group_coordinator(&mut self, group: &str) -> anyhow::Result<()> {
        let find = FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_key(text(group));
        for _ in 0..100 {
            if self.client.call(3, &find).await?.error_code == 0 {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        anyhow::bail!("no coordinator for group {group}")
    }

    /// InitProducerId from a producer that has an id and epoch (KIP-360: a client re-initialising
    /// after an error sends them, and an epoch older than the id's is fenced).
    async fn init_as(
        &mut self,
        version: i16,
        id: &str,
        producer: (i64, i16),
    ) -> anyhow::Result<Value> {
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(txn_id(id)))
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(producer.0))
            .with_producer_epoch(producer.1);
        let response = self
            .call_retrying(version, &request, |r| matches!(r.error_code, 14 | 51))
            .await?;
        Ok(json!({"error": response.error_code}))
    }
}
