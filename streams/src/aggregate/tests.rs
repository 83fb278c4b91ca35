//! Golden tests of windowed queries: input records (partition, time, value) in checkpoints, a
//! query, and the rows emitted — run through both halves and the repartition/changelog codecs
//! in memory, as a job runs them across Kafka.

use std::collections::BTreeMap;

use crate::aggregate::codec::{
    from_json, partition_of, to_json, ChangelogKey, ChangelogValue, RepartitionRecord,
};
use crate::aggregate::pre_aggregate::{pre_aggregate, PartitionTimes};
use crate::aggregate::store::{WindowStore, WindowStoreConfig};
use crate::aggregate::updates::updates;
use crate::io::decode::RecordDecoder;
use crate::io::encode::encode;
use crate::plan::window_spec::Windows;
use crate::record::{InputRecord, ValueFormat};
use crate::sql::SqlTransform;

mod sessions;
mod updating;

const PARTITIONS: i32 = 2;

struct Harness {
    decoder: RecordDecoder,
    transform: SqlTransform,
    times: PartitionTimes,
    store: WindowStore,
    lateness_ms: i64,
    offsets: BTreeMap<i32, i64>,
    late: Vec<(i32, i64)>,
    /// Every changelog record written, in order: (partition, key, value).
    changelog: Vec<(i32, ChangelogKey, Option<ChangelogValue>)>,
    /// An updating aggregate's output records: (key, value; None a tombstone).
    updates: Vec<(String, Option<serde_json::Value>)>,
}

impl Harness {
    async fn new(query: &str, lateness_ms: i64, sample: &str) -> Harness {
        let records = [record(0, 0, 0, sample)];
        let schema = RecordDecoder::infer(&records).unwrap();
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        let transform = SqlTransform::new(&[("weblogs", decoder.schema())], query)
            .await
            .unwrap();
        let windowed = transform.windowed().expect("windowed");
        let store = WindowStore::new(WindowStoreConfig {
            window: windowed.window,
            aggregates: windowed.aggregates.clone(),
            allowed_lateness_ms: lateness_ms,
            input_partitions: PARTITIONS,
            max_state_entries: 1000,
            over_table_changes: false,
        });
        Harness {
            decoder,
            transform,
            times: PartitionTimes::new(),
            store,
            lateness_ms,
            offsets: BTreeMap::new(),
            late: Vec::new(),
            changelog: Vec::new(),
            updates: Vec::new(),
        }
    }

    /// One checkpoint of `(partition, time ms, JSON value)` rows; returns the emitted output.
    async fn checkpoint(&mut self, rows: &[(i32, i64, &str)]) -> Vec<serde_json::Value> {
        let records: Vec<InputRecord> = rows
            .iter()
            .map(|&(partition, time, value)| {
                let offset = self.offsets.entry(partition).or_insert(0);
                *offset += 1;
                record(partition, *offset - 1, time, value)
            })
            .collect();
        let query = self.transform.windowed().unwrap();
        let session = self.transform.session();
        session
            .set_input(0, self.decoder.decode(&records).unwrap().batch)
            .await;
        let batches = query.pre_aggregate(session).await.unwrap();
        let result = pre_aggregate(query, &batches, &mut self.times, self.lateness_ms).unwrap();
        self.late.extend(result.late);
        // Through the repartition topic's encoding, partials first, then the event times.
        let mut repartition: Vec<(i32, Vec<u8>)> = result
            .groups
            .into_iter()
            .map(|group| {
                let key = match query.window {
                    Windows::Fixed(_) | Windows::Updating => {
                        to_json(&(group.window_start_ms, &group.keys))
                    }
                    Windows::Session { .. } => to_json(&group.keys),
                };
                (
                    partition_of(&key, PARTITIONS),
                    to_json(&RepartitionRecord::partial(group)),
                )
            })
            .collect();
        for (&source, &max_time_ms) in &self.times {
            for partition in 0..PARTITIONS {
                let time = RepartitionRecord::Time {
                    source_partition: source,
                    max_time_ms,
                };
                repartition.push((partition, to_json(&time)));
            }
        }
        self.merge_and_emit(repartition).await
    }

    /// A store rebuilt from every changelog record written so far (through their encoding),
    /// swapped in for the harness's own; its entries must match the original's.
    fn restore_from_changelog(&mut self) {
        let windowed = self.transform.windowed().unwrap();
        let mut restored = WindowStore::new(WindowStoreConfig {
            window: windowed.window,
            aggregates: windowed.aggregates.clone(),
            allowed_lateness_ms: self.lateness_ms,
            input_partitions: PARTITIONS,
            max_state_entries: 1000,
            over_table_changes: false,
        });
        for (partition, key, value) in self.changelog.drain(..) {
            let key = from_json(&to_json(&key), "key").unwrap();
            let value = value.map(|v| from_json(&to_json(&v), "value").unwrap());
            restored.restore(partition, key, value).unwrap();
        }
        assert_eq!(restored.entries(), self.store.entries());
        assert_eq!(restored.open_windows(), self.store.open_windows());
        self.store = restored;
    }

    /// A bounded run's end: every source partition in `sources` announces its end.
    async fn end_of_input(&mut self, sources: &[i32]) -> Vec<serde_json::Value> {
        let mut repartition = Vec::new();
        for &source_partition in sources {
            for partition in 0..PARTITIONS {
                let end = RepartitionRecord::EndOfInput { source_partition };
                repartition.push((partition, to_json(&end)));
            }
        }
        self.merge_and_emit(repartition).await
    }

    async fn merge_and_emit(&mut self, repartition: Vec<(i32, Vec<u8>)>) -> Vec<serde_json::Value> {
        let query = self.transform.windowed().unwrap();
        let session = self.transform.session();
        let mut emitted = Vec::new();
        for (partition, value) in repartition {
            self.store
                .merge(partition, from_json(&value, "test").unwrap())
                .unwrap();
        }
        for partition in 0..PARTITIONS {
            emitted.extend(self.store.emit(partition));
            for (key, value) in self.store.take_changes(partition) {
                self.changelog.push((partition, key, value));
            }
        }
        emitted.sort_by(|a, b| (a.window_start_ms, &a.keys).cmp(&(b.window_start_ms, &b.keys)));
        let output = query.post_aggregate(session, &emitted).await.unwrap();
        if query.window == Windows::Updating {
            for (key, value) in updates(&emitted, &output, ValueFormat::Json).unwrap() {
                let value = value.map(|v| serde_json::from_slice(&v).unwrap());
                self.updates.push((String::from_utf8(key).unwrap(), value));
            }
        }
        encode(&output, ValueFormat::Json)
            .unwrap()
            .iter()
            .map(|r| serde_json::from_slice(&r.value).unwrap())
            .collect()
    }
}

fn record(partition: i32, offset: i64, time: i64, value: &str) -> InputRecord {
    InputRecord {
        key: None,
        value: Some(value.as_bytes().to_vec()),
        partition,
        offset,
        timestamp_ms: time,
        headers: None,
    }
}

fn json(rows: &[&str]) -> Vec<serde_json::Value> {
    rows.iter()
        .map(|r| serde_json::from_str(r).unwrap())
        .collect()
}

const OK: &str = r#"{"status": 200, "bytes": 10, "user": "a"}"#;
const MISS: &str = r#"{"status": 404, "bytes": 0, "user": "b"}"#;

/// Tumbling counts per status: a window is emitted once, when every partition's event time
/// (minus the lateness) has passed its end; out-of-order rows within the lateness count, rows
/// later than that are late.
#[tokio::test]
async fn tumbling_count_waits_for_every_partition_and_drops_late_rows() {
    let query = "SELECT tumble(_timestamp, INTERVAL '1 minute') AS minute, status, count(*) AS n \
                 FROM weblogs GROUP BY tumble(_timestamp, INTERVAL '1 minute'), status";
    let mut harness = Harness::new(query, 10_000, OK).await;
    // Partition 1 has shown no time yet: nothing is emitted, however far partition 0 goes.
    let out = harness
        .checkpoint(&[
            (0, 1_000, OK),
            (0, 2_000, MISS),
            (0, 61_000, OK),
            (0, 200_000, OK),
        ])
        .await;
    assert_eq!(out, json(&[]));
    // Partition 1 at 65 s, then 55 s: out of order by 10 s, within the lateness, so it counts.
    // Watermark min(200, 65) - 10 = 55 s: [0, 60 s) stays open.
    let out = harness
        .checkpoint(&[(1, 65_000, OK), (1, 55_000, MISS)])
        .await;
    assert_eq!(out, json(&[]));
    // 75 s moves partition 1's watermark to 65 s: the row at 30 s (window [0, 60 s)) is then
    // late; 62 s is out of order but its window [60, 120 s) is open. [0, 60 s) is emitted.
    let out = harness
        .checkpoint(&[(1, 75_000, OK), (1, 30_000, OK), (1, 62_000, OK)])
        .await;
    assert_eq!(
        out,
        json(&[
            r#"{"minute": "1970-01-01T00:00:00", "status": 200, "n": 1}"#,
            r#"{"minute": "1970-01-01T00:00:00", "status": 404, "n": 2}"#,
        ])
    );
    let out = harness.checkpoint(&[(1, 130_000, OK)]).await;
    assert_eq!(
        out,
        json(&[r#"{"minute": "1970-01-01T00:01:00", "status": 200, "n": 4}"#])
    );
    assert_eq!(harness.late, [(1, 3)]);
}

/// A bounded run's end closes the windows still open once every input partition announced it;
/// a row for a closed window is then too late, while later windows work as before.
#[tokio::test]
async fn end_of_input_closes_open_windows() {
    let query = "SELECT tumble(_timestamp, INTERVAL '1 minute') AS minute, count(*) AS n                  FROM weblogs GROUP BY tumble(_timestamp, INTERVAL '1 minute')";
    let mut harness = Harness::new(query, 10_000, OK).await;
    let out = harness
        .checkpoint(&[(0, 1_000, OK), (0, 70_000, OK), (1, 65_000, OK)])
        .await;
    assert_eq!(out, json(&[]), "watermark 55 s: nothing closed yet");
    assert_eq!(
        harness.end_of_input(&[0]).await,
        json(&[]),
        "partition 1 still open"
    );
    assert_eq!(
        harness.end_of_input(&[1]).await,
        json(&[
            r#"{"minute": "1970-01-01T00:00:00", "n": 1}"#,
            r#"{"minute": "1970-01-01T00:01:00", "n": 2}"#,
        ])
    );
    assert_eq!(harness.store.open_windows(), 0);
    // More input after the end (a later run): the closed minute is gone, the next one counts.
    let out = harness
        .checkpoint(&[
            (0, 119_000, OK),
            (0, 150_000, OK),
            (0, 200_000, OK),
            (1, 250_000, OK),
        ])
        .await;
    assert_eq!(
        out,
        json(&[r#"{"minute": "1970-01-01T00:02:00", "n": 1}"#]),
        "119 s fell in the closed minute; watermark min(200, 250) - 10 s closes the third"
    );
}

/// Hopping windows: a row is in size/slide windows; sum, avg, min, max and count(DISTINCT);
/// HAVING and expressions over aggregates run after the aggregate.
#[tokio::test]
async fn hopping_windows_with_every_aggregate_and_having() {
    let query = "SELECT hop(_timestamp, INTERVAL '10 seconds', INTERVAL '20 seconds') AS start, \
                        count(*) AS n, sum(bytes) AS total, avg(bytes) AS mean, min(bytes) AS least, \
                        max(user) AS last_user, count(DISTINCT user) AS users, sum(bytes) * 2 AS doubled \
                 FROM weblogs WHERE status < 500 \
                 GROUP BY hop(_timestamp, INTERVAL '10 seconds', INTERVAL '20 seconds') \
                 HAVING count(*) > 1";
    let mut harness = Harness::new(query, 0, OK).await;
    let a = r#"{"status": 200, "bytes": 10, "user": "a"}"#;
    let b = r#"{"status": 200, "bytes": 30, "user": "b"}"#;
    let error = r#"{"status": 503, "bytes": 99, "user": "z"}"#;
    harness
        .checkpoint(&[
            (0, 5_000, a),
            (0, 12_000, b),
            (0, 13_000, a),
            (1, 14_000, error),
        ])
        .await;
    // Watermark min(45, 40) = 40 s closes the windows starting at -10, 0, 10 and 20 s.
    let out = harness.checkpoint(&[(0, 45_000, a), (1, 40_000, a)]).await;
    assert_eq!(
        out,
        json(&[
            // [0, 20 s): 5, 12, 13 s.
            r#"{"start": "1970-01-01T00:00:00", "n": 3, "total": 50, "mean": 16.666666666666668, "least": 10, "last_user": "b", "users": 2, "doubled": 100}"#,
            // [10, 30 s): 12, 13 s. ([-10, 10 s) holds one row: left out by HAVING.)
            r#"{"start": "1970-01-01T00:00:10", "n": 2, "total": 40, "mean": 20.0, "least": 10, "last_user": "b", "users": 2, "doubled": 80}"#,
        ])
    );
}

/// The changelog rebuilds the state: a store restored from it emits what the original would.
#[tokio::test]
async fn state_restored_from_the_changelog_emits_the_same() {
    let query = "SELECT tumble(_timestamp, INTERVAL '1 minute') AS minute, status, count(*) AS n \
                 FROM weblogs GROUP BY tumble(_timestamp, INTERVAL '1 minute'), status";
    let mut harness = Harness::new(query, 0, OK).await;
    harness
        .checkpoint(&[
            (0, 1_000, OK),
            (1, 2_000, MISS),
            (1, 3_000, MISS),
            (0, 70_000, OK),
        ])
        .await;
    harness.restore_from_changelog();
    let out = harness.checkpoint(&[(1, 80_000, OK)]).await;
    assert_eq!(
        out,
        json(&[
            r#"{"minute": "1970-01-01T00:00:00", "status": 200, "n": 1}"#,
            r#"{"minute": "1970-01-01T00:00:00", "status": 404, "n": 2}"#,
        ])
    );
}

#[tokio::test]
async fn queries_a_job_cannot_run_are_refused_when_it_starts() {
    let records = [record(0, 0, 0, OK)];
    let schema = RecordDecoder::infer(&records).unwrap();
    let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
    for (query, expected) in [
        ("SELECT DISTINCT status FROM weblogs", "DISTINCT"),
        (
            "SELECT tumble(_timestamp, INTERVAL '1 month'), count(*) FROM weblogs \
             GROUP BY tumble(_timestamp, INTERVAL '1 month')",
            "months",
        ),
        (
            "SELECT tumble(_timestamp, INTERVAL '1 minute'), median(bytes) FROM weblogs \
             GROUP BY tumble(_timestamp, INTERVAL '1 minute')",
            "median",
        ),
    ] {
        let error = match SqlTransform::new(&[("weblogs", decoder.schema())], query).await {
            Ok(_) => panic!("accepted: {query}"),
            Err(error) => error.to_string(),
        };
        assert!(error.contains(expected), "{query}: {error}");
    }
}

#[tokio::test]
async fn a_windowed_query_reads_one_input() {
    let records = [record(0, 0, 0, OK)];
    let schema = RecordDecoder::infer(&records).unwrap();
    let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
    let query = "SELECT tumble(_timestamp, INTERVAL '1 minute'), count(*) FROM weblogs \
                 GROUP BY tumble(_timestamp, INTERVAL '1 minute')";
    let tables = [("weblogs", decoder.schema()), ("other", decoder.schema())];
    let error = SqlTransform::new(&tables, query)
        .await
        .err()
        .expect("refused");
    assert!(error.to_string().contains("one input topic"), "{error}");
}
