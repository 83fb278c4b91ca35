//! The fetch-session section of the differential scenario (KIP-227): a full fetch that creates
//! a session, incremental fetches that name only changed and forgotten partitions and get only
//! the partitions with news, and every way a session is refused or ends — an unknown id
//! (FETCH_SESSION_ID_NOT_FOUND), a stale epoch (INVALID_FETCH_SESSION_EPOCH), a v12 request on a
//! session made by v13 (FETCH_SESSION_TOPIC_ID_ERROR), forgetting every partition, epoch -1.

use kafka_protocol::messages::*;
use kafka_protocol::records::{Compression, RecordBatchDecoder};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::{batch, name, Scenario};

/// A partition in a fetch request: (partition, fetch offset).
type Position = (i32, i64);

/// One fetch's session fields and partitions.
struct SessionFetch<'a> {
    version: i16,
    session_id: i32,
    epoch: i32,
    partitions: &'a [Position],
    forgotten: &'a [i32],
}

fn fetch<'a>(
    version: i16,
    session_id: i32,
    epoch: i32,
    partitions: &'a [Position],
    forgotten: &'a [i32],
) -> SessionFetch<'a> {
    SessionFetch {
        version,
        session_id,
        epoch,
        partitions,
        forgotten,
    }
}

impl Scenario {
    pub(crate) async fn fetch_sessions_section(&mut self) -> anyhow::Result<()> {
        let topic = self.topic("compat-sessions");
        self.create_topic(&topic, 3, 1, &[]).await?;
        self.wait_ready(&topic).await?;
        let topic_id = self.topic_id(&topic).await?;
        for partition in [0, 1] {
            let records = [
                (None, "a", 1_700_000_000_000),
                (None, "b", 1_700_000_000_001),
            ];
            self.produce(&topic, partition, -1, batch(&records, Compression::None))
                .await?;
        }
        let ids = (topic.as_str(), topic_id);
        let all = [(0, 0), (1, 0), (2, 0)];
        let (full, session) = self.session_fetch(ids, fetch(13, 0, 0, &all, &[])).await?;
        self.note("fetch_session/full", full);
        let caught_up = [(0, 2), (1, 2)];
        let (step, _) = self
            .session_fetch(ids, fetch(13, session, 1, &caught_up, &[]))
            .await?;
        self.note("fetch_session/incremental_nothing_new", step);
        let records = [(None, "c", 1_700_000_000_002)];
        self.produce(&topic, 2, -1, batch(&records, Compression::None))
            .await?;
        let (step, _) = self
            .session_fetch(ids, fetch(13, session, 2, &[], &[]))
            .await?;
        self.note("fetch_session/incremental_new_records", step);
        let (step, _) = self
            .session_fetch(ids, fetch(13, session, 2, &[], &[]))
            .await?;
        self.note("fetch_session/stale_epoch", step);
        let unknown = session.wrapping_add(1).max(1);
        let (step, _) = self
            .session_fetch(ids, fetch(13, unknown, 1, &[], &[]))
            .await?;
        self.note("fetch_session/unknown_id", step);
        let (step, _) = self
            .session_fetch(ids, fetch(12, session, 3, &[], &[]))
            .await?;
        self.note("fetch_session/v12_on_a_topic_id_session", step);
        // The refusals left the session at epoch 3: move partition 2 on, forget partition 1.
        let (step, _) = self
            .session_fetch(ids, fetch(13, session, 3, &[(2, 1)], &[1]))
            .await?;
        self.note("fetch_session/forget_one", step);
        self.produce(&topic, 1, -1, batch(&records, Compression::None))
            .await?;
        let (step, _) = self
            .session_fetch(ids, fetch(13, session, 4, &[], &[]))
            .await?;
        self.note("fetch_session/forgotten_partition_stays_quiet", step);
        let (step, _) = self
            .session_fetch(ids, fetch(13, session, 5, &[], &[0, 2]))
            .await?;
        self.note("fetch_session/forget_all", step);
        let (step, _) = self
            .session_fetch(ids, fetch(13, session, 6, &[], &[]))
            .await?;
        self.note("fetch_session/after_forget_all", step);

        let (_, second) = self
            .session_fetch(ids, fetch(13, 0, 0, &[(0, 0)], &[]))
            .await?;
        let (step, _) = self
            .session_fetch(ids, fetch(13, second, -1, &[(0, 1)], &[]))
            .await?;
        self.note("fetch_session/close", step);
        let (step, _) = self
            .session_fetch(ids, fetch(13, second, 1, &[], &[]))
            .await?;
        self.note("fetch_session/after_close", step);

        // A partition answered moves to the end of the session's order.
        let (_, fourth) = self.session_fetch(ids, fetch(13, 0, 0, &all, &[])).await?;
        let caught_up = [(1, 3), (2, 1)];
        let (step, _) = self
            .session_fetch(ids, fetch(13, fourth, 1, &caught_up, &[]))
            .await?;
        self.note("fetch_session/one_answered", step);
        let rewound = [(1, 0), (2, 0)];
        let (step, _) = self
            .session_fetch(ids, fetch(13, fourth, 2, &rewound, &[]))
            .await?;
        self.note("fetch_session/answered_partition_moved_last", step);

        // An unknown topic id is answered with its error every time.
        let missing = (topic.as_str(), Uuid::from_u128(0x5e55_1075));
        let (step, third) = self
            .session_fetch(missing, fetch(13, 0, 0, &[(0, 0)], &[]))
            .await?;
        self.note("fetch_session/full_unknown_topic_id", step);
        let (step, _) = self
            .session_fetch(missing, fetch(13, third, 1, &[], &[]))
            .await?;
        self.note("fetch_session/incremental_unknown_topic_id", step);
        Ok(())
    }

    async fn topic_id(&mut self, topic: &str) -> anyhow::Result<Uuid> {
        let request = MetadataRequest::default().with_topics(Some(vec![
            metadata_request::MetadataRequestTopic::default().with_name(Some(name(topic))),
        ]));
        let response = self.client.call(12, &request).await?;
        Ok(response.topics[0].topic_id)
    }

    /// Sends one fetch of `topic` (by name below v13, else by id); the transcript entry and
    /// the session id answered.
    async fn session_fetch(
        &mut self,
        (topic, topic_id): (&str, Uuid),
        fetch: SessionFetch<'_>,
    ) -> anyhow::Result<(Value, i32)> {
        let partitions = fetch
            .partitions
            .iter()
            .map(|(partition, offset)| {
                fetch_request::FetchPartition::default()
                    .with_partition(*partition)
                    .with_fetch_offset(*offset)
                    .with_partition_max_bytes(1 << 20)
            })
            .collect();
        let mut topics = vec![fetch_request::FetchTopic::default()
            .with_topic(name(topic))
            .with_topic_id(topic_id)
            .with_partitions(partitions)];
        if fetch.partitions.is_empty() {
            topics.clear();
        }
        let mut forgotten = vec![fetch_request::ForgottenTopic::default()
            .with_topic(name(topic))
            .with_topic_id(topic_id)
            .with_partitions(fetch.forgotten.to_vec())];
        if fetch.forgotten.is_empty() {
            forgotten.clear();
        }
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(0)
            .with_max_bytes(1 << 20)
            .with_session_id(fetch.session_id)
            .with_session_epoch(fetch.epoch)
            .with_topics(topics)
            .with_forgotten_topics_data(forgotten);
        let response = self.client.call(fetch.version, &request).await?;
        let mut answered = Vec::new();
        for topic in &response.responses {
            for partition in &topic.partitions {
                let mut records = 0;
                if let Some(bytes) = &partition.records {
                    let mut bytes = bytes.clone();
                    for set in RecordBatchDecoder::decode_all(&mut bytes)? {
                        records += set.records.len();
                    }
                }
                answered.push(json!({
                    "partition": partition.partition_index,
                    "error": partition.error_code,
                    "high_watermark": partition.high_watermark,
                    "records": records,
                }));
            }
        }
        let step = json!({
            "error": response.error_code,
            "has_session": response.session_id != 0,
            "partitions": answered,
        });
        Ok((step, response.session_id))
    }
}
