//! Polling one checkpoint's records: until its interval passes, it holds the most records a
//! checkpoint may, or the input goes quiet.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer;
use rdkafka::message::Message;

use super::chunks;
use super::config::JobConfig;
use super::consumer::JobConsumer;
use crate::record::InputRecord;

/// The records of one checkpoint: from each input topic (in the order of the job's inputs), and
/// (windowed jobs) from the job's repartition topic.
#[derive(Default)]
pub struct Polled {
    pub inputs: Vec<(String, Vec<InputRecord>)>,
    pub internal: Vec<InputRecord>,
    pub(super) internal_topic: String,
}

impl Polled {
    pub(super) fn input_len(&self) -> usize {
        self.inputs.iter().map(|(_, records)| records.len()).sum()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn len(&self) -> usize {
        self.input_len() + self.internal.len()
    }

    /// Per consumed partition, the offset after its last record: what the checkpoint commits.
    pub(super) fn next_offsets(&self) -> BTreeMap<(String, i32), (i64, String)> {
        let mut offsets = BTreeMap::new();
        let internal = (&self.internal_topic, &self.internal);
        let topics = self.inputs.iter().map(|(topic, records)| (topic, records));
        for (topic, records) in topics.chain([internal]) {
            for record in records {
                let next = offsets
                    .entry((topic.clone(), record.partition))
                    .or_insert((0, String::new()));
                next.0 = next.0.max(record.offset + 1);
            }
        }
        offsets
    }
}

/// The longest a job's poll blocks before it looks at `stop` and rebalances again.
const POLL_SLICE: Duration = Duration::from_millis(100);

/// Polls until the checkpoint is due: its interval has passed, it holds the most records a
/// checkpoint may, or it holds records and the input has been quiet for
/// `checkpoint_quiet_ms` (what a burst brought is committed without waiting out the
/// interval); returns early on a rebalance or `stop`.
pub(super) fn fill(
    config: &JobConfig,
    consumer: &JobConsumer,
    internal_topic: Option<&str>,
    stop: &AtomicBool,
) -> Polled {
    let due = Instant::now() + Duration::from_millis(config.checkpoint_interval_ms);
    let quiet =
        (config.checkpoint_quiet_ms > 0).then(|| Duration::from_millis(config.checkpoint_quiet_ms));
    let mut polled = Polled {
        inputs: config
            .inputs
            .iter()
            .map(|t| (t.clone(), Vec::new()))
            .collect(),
        internal_topic: internal_topic.unwrap_or_default().to_string(),
        ..Polled::default()
    };
    // When the newest record came — the next turn's clock read, not one more per record: with
    // `quiet`, the checkpoint is due that long after it.
    let mut last_record: Option<Instant> = None;
    let mut record_came = false;
    // The bound counts rows: a stage's results come as chunks of many (`chunks`).
    let mut rows = 0;
    while rows < config.checkpoint_max_records && !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if record_came {
            last_record = Some(now);
            record_came = false;
        }
        let quiet_until = quiet.zip(last_record).map(|(quiet, last)| last + quiet);
        let until = quiet_until.map_or(due, |quiet_until| quiet_until.min(due));
        if now >= until || consumer.context().rebalanced() {
            break;
        }
        // In slices, so that `stop` and a rebalance are seen at once whatever the interval.
        let Some(message) = consumer.poll((until - now).min(POLL_SLICE)) else {
            continue;
        };
        match message {
            Ok(message) => {
                record_came = true;
                rows += match !config.inputs_in_chunks.is_empty()
                    && config.inputs_in_chunks.contains(message.topic())
                {
                    true => chunks::rows_in(message.payload()),
                    false => 1,
                };
                let record = InputRecord::from_message(&message);
                match polled.inputs.iter_mut().find(|(t, _)| t == message.topic()) {
                    Some((_, records)) => records.push(record),
                    None => polled.internal.push(record),
                }
            }
            Err(error) => tracing::warn!(job = %config.name, %error, "consumer error"),
        }
    }
    polled
}
