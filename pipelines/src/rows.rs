//! A sink stage's CPU-heavy part — decoding the topic's records into Arrow and running the
//! stateless SQL transform — on `parallelism` workers at once, each with its own decoder and
//! planned query, on blocking threads (off the async runtime's workers, which an embedded broker
//! shares). A batch is split by partition, so each partition's rows keep their order, and the
//! workers' results are taken in worker order.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{new_null_array, Array};
use arrow::compute::interleave;
use arrow::record_batch::RecordBatch;
use weir_connectors::sink::Changes;
use weir_streams::io::decode::RecordDecoder;
use weir_streams::record::{InputRecord, ValueFormat};
use weir_streams::sql::SqlTransform;

use crate::config::PipelineConfig;
use crate::error::{PipelineError, Result};
use crate::schema::{emits_changes, planned_transform, runs_as_job, topic_decoder};

/// The most workers one sink stage runs (also what `parallelism` is checked against).
pub const MAX_WORKERS: usize = 64;

/// What a sink reads and how its records become rows.
pub struct SinkInput {
    /// The pipeline's topic, or the windowed job's output topic.
    pub topic: String,
    pub workers: RowWorkers,
}

/// One worker's tools.
struct Worker {
    pipeline: String,
    decoder: RecordDecoder,
    transform: Option<SqlTransform>,
    /// The decoded batch's value columns (the rest are record metadata such as `_offset`).
    value_columns: usize,
    /// The records are an updating aggregate's: keyed rows and tombstones, made [`Changes`].
    changes: bool,
}

pub struct RowWorkers {
    pipeline: String,
    workers: Vec<Arc<Worker>>,
}

/// A batch of records turned into rows.
#[derive(Default)]
pub struct Rows {
    pub batches: Vec<RecordBatch>,
    /// An updating aggregate's changes (instead of batches).
    pub changes: Vec<Changes>,
    pub rows_out: u64,
    /// (partition, offset, reason) of records left out because they do not decode.
    pub rejected: Vec<(i32, i64, String)>,
}

impl SinkInput {
    /// What a sink of `config` reads: a windowed transform (or one joining tables) runs as a job
    /// of its own and the sinks read what it emits; a stateless one runs here, once per worker.
    pub async fn new(config: &PipelineConfig) -> Result<Self> {
        let count = config.parallelism.clamp(1, MAX_WORKERS);
        let mut workers = Vec::with_capacity(count);
        let mut topic = config.topic_name();
        for _ in 0..count {
            let decoder = topic_decoder(config)?;
            let worker = match planned_transform(config, &decoder).await? {
                Some(job) if runs_as_job(&job) => {
                    topic = config.job_output_topic();
                    let schema = job.output_schema().as_ref().clone();
                    let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema))
                        .map_err(PipelineError::streams(&config.name))?;
                    let mut worker = Worker::new(&config.name, decoder, None);
                    worker.changes = emits_changes(&job);
                    worker
                }
                stateless => Worker::new(&config.name, decoder, stateless),
            };
            workers.push(Arc::new(worker));
        }
        Ok(SinkInput {
            topic,
            workers: RowWorkers {
                pipeline: config.name.clone(),
                workers,
            },
        })
    }
}

impl Worker {
    fn new(pipeline: &str, decoder: RecordDecoder, transform: Option<SqlTransform>) -> Self {
        let value_columns = decoder.value_schema().fields().len();
        Worker {
            pipeline: pipeline.to_string(),
            decoder,
            transform,
            value_columns,
            changes: false,
        }
    }

    /// Runs on a blocking thread; `runtime` runs DataFusion's async execution.
    fn rows(&self, records: &[InputRecord], runtime: &tokio::runtime::Handle) -> Result<Rows> {
        let pipeline = self.pipeline.as_str();
        let decoded = self
            .decoder
            .decode(records)
            .map_err(PipelineError::streams(pipeline))?;
        if self.changes {
            return self.changes(records, decoded);
        }
        let rejected = decoded
            .rejected
            .iter()
            .map(|r| (r.partition, r.offset, r.reason.to_string()))
            .collect();
        let batches = match &self.transform {
            Some(transform) => runtime
                .block_on(transform.apply(vec![decoded.batch]))
                .map_err(PipelineError::streams(pipeline))?,
            None => vec![decoded
                .batch
                .project(&(0..self.value_columns).collect::<Vec<_>>())
                .map_err(|e| PipelineError::Stage {
                    pipeline: pipeline.into(),
                    message: e.to_string(),
                })?],
        };
        let rows_out = batches.iter().map(|b| b.num_rows() as u64).sum();
        Ok(Rows {
            batches,
            changes: Vec::new(),
            rows_out,
            rejected,
        })
    }

    /// An updating aggregate's records as changes, in their order: a row replaces its key's
    /// row, a tombstone deletes the key. A record without a key, or whose value does not
    /// decode, is left out.
    fn changes(
        &self,
        records: &[InputRecord],
        decoded: weir_streams::io::decode::Decoded,
    ) -> Result<Rows> {
        let stage = |e: arrow::error::ArrowError| PipelineError::Stage {
            pipeline: self.pipeline.clone(),
            message: format!("an updating aggregate's rows: {e}"),
        };
        let values = decoded
            .batch
            .project(&(0..self.value_columns).collect::<Vec<_>>())
            .map_err(stage)?;
        let unread: HashSet<usize> = decoded.rejected.iter().map(|r| r.index).collect();
        let mut rejected = Vec::new();
        let (mut keys, mut deleted, mut picks) = (Vec::new(), Vec::new(), Vec::new());
        let mut next_row = 0;
        for (index, record) in records.iter().enumerate() {
            let decoded_row = !unread.contains(&index);
            if decoded_row {
                next_row += 1;
            }
            let Some(key) = &record.key else {
                let reason = "an updating aggregate's record has no key".to_string();
                rejected.push((record.partition, record.offset, reason));
                continue;
            };
            let key = String::from_utf8_lossy(key).into_owned();
            match (&record.value, decoded_row) {
                (None, _) => picks.push((1, 0)),
                (Some(_), true) => picks.push((0, next_row - 1)),
                (Some(_), false) => continue,
            }
            deleted.push(record.value.is_none());
            keys.push(key);
        }
        rejected.extend(
            decoded
                .rejected
                .iter()
                .filter(|r| records[r.index].value.is_some())
                .map(|r| (r.partition, r.offset, r.reason.to_string())),
        );
        let mut columns = Vec::with_capacity(values.num_columns());
        for column in values.columns() {
            let deleted_row = new_null_array(column.data_type(), 1);
            columns.push(interleave(&[column.as_ref(), deleted_row.as_ref()], &picks).map_err(stage)?);
        }
        let rows = RecordBatch::try_new(values.schema(), columns).map_err(stage)?;
        let changes = Changes {
            keys,
            rows,
            deleted,
        };
        Ok(Rows {
            batches: Vec::new(),
            rows_out: changes.len() as u64,
            changes: vec![changes],
            rejected,
        })
    }
}

impl RowWorkers {
    /// Whether the rows are an updating aggregate's changes.
    pub fn changes(&self) -> bool {
        self.workers[0].changes
    }

    /// The rows sinks receive, as Arrow's schema of the first worker's output.
    pub fn output_schema(&self) -> arrow::datatypes::SchemaRef {
        let worker = &self.workers[0];
        match &worker.transform {
            Some(transform) => transform.output_schema(),
            None => worker.decoder.value_schema(),
        }
    }

    /// `records` as rows: split by partition over the workers, run at once.
    pub async fn rows(&self, records: Vec<InputRecord>) -> Result<Rows> {
        let count = self.workers.len();
        let mut chunks: Vec<Vec<InputRecord>> = vec![Vec::new(); count];
        for record in records {
            chunks[record.partition.rem_euclid(count as i32) as usize].push(record);
        }
        let runtime = tokio::runtime::Handle::current();
        let mut running = Vec::new();
        for (worker, chunk) in self.workers.iter().zip(chunks) {
            if chunk.is_empty() {
                continue;
            }
            let (worker, runtime) = (Arc::clone(worker), runtime.clone());
            running.push(tokio::task::spawn_blocking(move || {
                worker.rows(&chunk, &runtime)
            }));
        }
        let mut rows = Rows::default();
        for task in running {
            let done = task.await.map_err(|e| PipelineError::Stage {
                pipeline: self.pipeline.clone(),
                message: format!("a row worker failed: {e}"),
            })?;
            let done = done?;
            rows.batches.extend(done.batches);
            rows.changes.extend(done.changes);
            rows.rows_out += done.rows_out;
            rows.rejected.extend(done.rejected);
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::AsArray;

    use super::*;

    fn workers(count: usize, sql: Option<&str>) -> RowWorkers {
        let runtime = tokio::runtime::Handle::current();
        let workers = (0..count)
            .map(|_| {
                let decoder = RecordDecoder::new(ValueFormat::Raw, None).unwrap();
                let transform = sql.map(|sql| {
                    let tables = [("lines", decoder.schema())];
                    tokio::task::block_in_place(|| {
                        runtime.block_on(SqlTransform::new(&tables, sql)).unwrap()
                    })
                });
                Arc::new(Worker::new("test", decoder, transform))
            })
            .collect();
        RowWorkers {
            pipeline: "test".into(),
            workers,
        }
    }

    fn records(partitions: i32, per_partition: i64) -> Vec<InputRecord> {
        let mut records = Vec::new();
        for offset in 0..per_partition {
            for partition in 0..partitions {
                let value = if offset == 3 {
                    vec![0xff]
                } else {
                    format!("{partition}:{offset}").into_bytes()
                };
                records.push(InputRecord {
                    key: None,
                    value: Some(value),
                    partition,
                    offset,
                    timestamp_ms: 0,
                    headers: None,
                });
            }
        }
        records
    }

    fn values(rows: &Rows) -> Vec<String> {
        rows.batches
            .iter()
            .flat_map(|batch| {
                let column = batch.column(0).as_string::<i32>();
                (0..batch.num_rows())
                    .map(|row| column.value(row).to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Several workers give the rows one worker gives, each partition's in order, and count
    /// what does not decode.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn workers_split_by_partition_and_keep_each_partitions_order() {
        let one = workers(1, None).rows(records(5, 40)).await.unwrap();
        let three = workers(3, None).rows(records(5, 40)).await.unwrap();
        assert_eq!(one.rows_out, 5 * 39);
        assert_eq!(three.rows_out, 5 * 39);
        assert_eq!(
            three.rejected.len(),
            5,
            "the non-UTF-8 value of every partition"
        );
        let (mut a, mut b) = (values(&one), values(&three));
        for partition in 0..5 {
            let of = |values: &[String]| -> Vec<String> {
                values
                    .iter()
                    .filter(|v| v.starts_with(&format!("{partition}:")))
                    .cloned()
                    .collect()
            };
            let expected: Vec<String> = (0..40)
                .filter(|offset| *offset != 3)
                .map(|offset| format!("{partition}:{offset}"))
                .collect();
            assert_eq!(of(&b), expected, "partition {partition} in order");
            assert_eq!(of(&a), expected);
        }
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_worker_runs_the_sql_transform() {
        let sql = Some("SELECT upper(value) AS shouted FROM lines WHERE value LIKE '1:%'");
        let rows = workers(2, sql).rows(records(4, 10)).await.unwrap();
        let mut found = values(&rows);
        found.sort();
        let mut expected: Vec<String> = (0..10)
            .filter(|o| *o != 3)
            .map(|o| format!("1:{o}"))
            .collect();
        expected.sort();
        assert_eq!(found, expected);
        assert_eq!(rows.batches[0].schema().field(0).name(), "shouted");
    }
}
