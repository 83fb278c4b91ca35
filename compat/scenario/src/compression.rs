//! The topic-compression section of the differential scenario: `compression.type` and the
//! KIP-390 levels as topic configs (valid and invalid), and what the broker stores when a
//! producer's batch is in another codec than the topic's — every batch's codec and records, an
//! idempotent retry recognised after recompression.

use kafka_protocol::messages::*;
use kafka_protocol::records::{Compression, RecordBatchDecoder};
use serde_json::{json, Value};

use crate::transactions::whole_batches;
use crate::{batch, idempotent_batch, name, Scenario};

/// A config name and value.
type Config = (&'static str, &'static str);

/// (topic's compression.type, its level config, the producers' codec)
const CASES: &[(&str, Option<Config>, Compression)] = &[
    (
        "zstd",
        Some(("compression.zstd.level", "10")),
        Compression::None,
    ),
    (
        "gzip",
        Some(("compression.gzip.level", "1")),
        Compression::Lz4,
    ),
    (
        "lz4",
        Some(("compression.lz4.level", "17")),
        Compression::Snappy,
    ),
    ("snappy", None, Compression::Gzip),
    ("uncompressed", None, Compression::Zstd),
    ("zstd", None, Compression::Zstd),
    ("producer", None, Compression::Gzip),
];

impl Scenario {
    pub(crate) async fn compression_section(&mut self) -> anyhow::Result<()> {
        let invalid = [
            ("compression.type", "brotli"),
            ("compression.gzip.level", "10"),
            ("compression.gzip.level", "0"),
            ("compression.lz4.level", "0"),
            ("compression.lz4.level", "18"),
            ("compression.zstd.level", "23"),
            ("compression.zstd.level", "-131073"),
        ];
        for (index, (key, value)) in invalid.iter().enumerate() {
            let topic = self.topic(&format!("compat-bad-compression-{index}"));
            let step = self.create_topic(&topic, 1, 1, &[(key, value)]).await?;
            self.note(&format!("compression/invalid/{key}={value}"), step);
        }
        for (index, (codec, level, producer_codec)) in CASES.iter().enumerate() {
            let topic = self.topic(&format!("compat-compression-{index}"));
            let mut configs = vec![("compression.type", *codec)];
            configs.extend(level.iter().copied());
            let label = format!("compression/{codec}_topic_{producer_codec:?}_batch");
            let step = self.create_topic(&topic, 1, 1, &configs).await?;
            self.note(&format!("{label}/create"), step);
            self.wait_ready(&topic).await?;
            let step = self.describe_configs(&topic).await?;
            self.note(&format!("{label}/configs"), step);
            let records: Vec<(Option<&str>, &str, i64)> = (0..5)
                .map(|i| {
                    (
                        Some(["k0", "k1"][i % 2]),
                        "a value that compresses",
                        1_700_000 + i as i64,
                    )
                })
                .collect();
            let step = self
                .produce(&topic, 0, -1, batch(&records, *producer_codec))
                .await?;
            self.note(&format!("{label}/produce"), step);
            let step = self.stored_batches(&topic).await?;
            self.note(&format!("{label}/stored"), step);
            self.delete_topic(&topic).await?;
        }
        self.recompressed_idempotent_retry().await?;
        let topic = self.topic("compat-compression-altered");
        self.create_topic(&topic, 1, 1, &[]).await?;
        self.wait_ready(&topic).await?;
        let step = self
            .incremental_alter(&topic, "compression.type", "lz4")
            .await?;
        self.note("compression/alter_to_lz4", step);
        let step = self
            .incremental_alter(&topic, "compression.lz4.level", "99")
            .await?;
        self.note("compression/alter_bad_level", step);
        let step = self.describe_configs(&topic).await?;
        self.note("compression/altered_configs", step);
        self.delete_topic(&topic).await?;
        Ok(())
    }

    /// An idempotent producer's batch recompressed on append, then retried: the broker
    /// recognises the retry and answers the first append's offset.
    async fn recompressed_idempotent_retry(&mut self) -> anyhow::Result<()> {
        let topic = self.topic("compat-compression-idempotent");
        self.create_topic(&topic, 1, 1, &[("compression.type", "gzip")])
            .await?;
        self.wait_ready(&topic).await?;
        let producer = self.init_idempotent().await?.producer_id.0;
        for label in ["first", "second", "retry_of_second"] {
            let first_sequence = if label == "first" { 0 } else { 3 };
            let records = idempotent_batch(producer, 0, first_sequence, 3);
            let step = self.produce(&topic, 0, -1, records).await?;
            self.note(&format!("compression/idempotent/{label}"), step);
        }
        let step = self.stored_batches(&topic).await?;
        self.note("compression/idempotent/stored", step);
        self.delete_topic(&topic).await?;
        Ok(())
    }

    /// Every batch of partition 0 as stored: its base offset, codec, producer fields and
    /// records (offset, key, value, timestamp).
    async fn stored_batches(&mut self, topic: &str) -> anyhow::Result<Value> {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_topics(vec![fetch_request::FetchTopic::default()
                .with_topic(name(topic))
                .with_partitions(vec![fetch_request::FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20)])]);
        let response = self.client.call(12, &request).await?;
        let data = &response.responses[0].partitions[0];
        let mut batches = Vec::new();
        for one in whole_batches(&data.records.clone().unwrap_or_default()) {
            let attributes = i16::from_be_bytes([one[21], one[22]]);
            let producer_epoch = i16::from_be_bytes([one[51], one[52]]);
            let base_sequence = i32::from_be_bytes([one[53], one[54], one[55], one[56]]);
            let mut decoded = one.clone();
            let records: Vec<Value> = RecordBatchDecoder::decode(&mut decoded)?
                .records
                .into_iter()
                .map(|r| {
                    json!({
                        "offset": r.offset,
                        "key": r.key.map(|k| String::from_utf8_lossy(&k).into_owned()),
                        "value": r.value.map(|v| String::from_utf8_lossy(&v).into_owned()),
                        "timestamp": r.timestamp,
                    })
                })
                .collect();
            batches.push(json!({
                "base_offset": i64::from_be_bytes(one[0..8].try_into()?),
                "codec": attributes & 0x07,
                "transactional": attributes & (1 << 4) != 0,
                "producer_epoch": producer_epoch,
                "base_sequence": base_sequence,
                "records": records,
            }));
        }
        Ok(
            json!({"error": data.error_code, "high_watermark": data.high_watermark, "batches": batches}),
        )
    }
}
