//! The SQL transform: a query planned by DataFusion once, when the job starts, over a table named
//! after the input whose rows each checkpoint replaces. A query without GROUP BY is stateless
//! (projections, filters, scalar functions, CASE, casts: each checkpoint's rows on their own); a
//! query grouped by `tumble(…)`/`hop(…)` is windowed and taken apart by `crate::aggregate::query`.
//!
//! The table's name is the topic's, taken whole (a topic `web.logs` is one table, not table `logs`
//! of schema `web`); names that are not plain lowercase identifiers are quoted in SQL:
//! `SELECT … FROM "web.logs"`.

use std::collections::{BTreeMap, BTreeSet};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::logical_expr::LogicalPlan;

use crate::aggregate::query::WindowedQuery;
use crate::error::{Result, StreamsError};
use crate::io::record_time;
use crate::join::interval::plan::IntervalJoinPlan;
use crate::join::{self, plan::TableJoin, table::TableState};
use crate::plan::streaming;
pub use crate::plan::Session;

/// Per table, the columns the `optimized` plan reads from it (projections pushed into the
/// scans): what the decoders need to parse.
fn columns_read(optimized: &LogicalPlan) -> Result<BTreeMap<String, BTreeSet<String>>> {
    let mut read: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    optimized.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let columns = read.entry(scan.table_name.table().to_string()).or_default();
            let fields = scan.projected_schema.fields().iter();
            columns.extend(fields.map(|f| f.name().clone()));
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(read)
}

/// What a job's query does with each checkpoint's rows.
pub enum Transform {
    /// Each row on its own: projections, filters, scalar functions.
    Stateless(LogicalPlan),
    /// Grouped into event-time windows, emitted when the watermark passes their end.
    Windowed(Box<WindowedQuery>),
    /// Two inputs joined within a time bound (`crate::join::interval`).
    IntervalJoin(Box<IntervalJoinPlan>),
}

pub struct SqlTransform {
    session: Session,
    transform: Transform,
    /// Stream–table joins, run before the (rewritten) query at each checkpoint.
    joins: Vec<TableJoin>,
    /// Per table, the columns the query reads from it.
    columns_read: BTreeMap<String, BTreeSet<String>>,
}

impl SqlTransform {
    /// Plans `query` once against `tables` (each input's name and decoded schema), so that a
    /// bad query fails when the job starts, not at its first checkpoint.
    pub async fn new(tables: &[(&str, SchemaRef)], query: &str) -> Result<Self> {
        Self::with_tables(tables, &[], query).await
    }

    /// [`SqlTransform::new`] with declared tables (name and decoded schema) the query may join
    /// its inputs with (`crate::join`).
    pub async fn with_tables(
        inputs: &[(&str, SchemaRef)],
        tables: &[(&str, SchemaRef)],
        query: &str,
    ) -> Result<Self> {
        let all: Vec<(&str, SchemaRef)> = inputs.iter().chain(tables).cloned().collect();
        let session = Session::new(&all)?;
        let plan = session.plan(query).await?;
        if plan.schema().fields().is_empty() {
            return Err(StreamsError::Query(format!(
                "the query selects no columns: {query}"
            )));
        }
        let mut columns_read = columns_read(&session.optimize(&plan)?)?;
        let input_names: Vec<&str> = inputs.iter().map(|(name, _)| *name).collect();
        if tables.is_empty() {
            if let Some(interval) = join::interval::plan::extract(&plan, &input_names)? {
                for checked in [
                    &interval.left.plan,
                    &interval.right.plan,
                    &interval.post_join,
                ] {
                    streaming::check(checked)?;
                    session.check(checked)?;
                }
                return Ok(SqlTransform {
                    session,
                    transform: Transform::IntervalJoin(Box::new(interval)),
                    joins: Vec::new(),
                    columns_read,
                });
            }
        }
        let table_names: Vec<&str> = tables.iter().map(|(name, _)| *name).collect();
        let (plan, joins) = join::plan::extract(&plan, &table_names)?;
        streaming::check(&plan)?;
        for join in &joins {
            streaming::check(&join.stream_side)?;
            session.check(&join.stream_side)?;
        }
        let transform = match WindowedQuery::from_plan(&session, &plan)? {
            Some(_) if inputs.len() > 1 => {
                return Err(StreamsError::Query(
                    "a windowed query reads one input topic".into(),
                ))
            }
            Some(_) if !joins.is_empty() => {
                return Err(StreamsError::Query(
                    "a windowed query with a join is not supported yet".into(),
                ))
            }
            Some(windowed) => Transform::Windowed(Box::new(windowed)),
            None => {
                // Output records keep their input record's timestamp (`crate::io::record_time`).
                let plan = record_time::stamped(&plan).unwrap_or(plan);
                columns_read = self::columns_read(&session.optimize(&plan)?)?;
                Transform::Stateless(plan)
            }
        };
        Ok(SqlTransform {
            session,
            transform,
            joins,
            columns_read,
        })
    }

    /// The columns the query reads from `table` (`None`: a table it does not scan).
    pub fn columns_read(&self, table: &str) -> Option<&BTreeSet<String>> {
        self.columns_read.get(table)
    }

    /// Whether the query joins declared tables (then [`SqlTransform::apply_with_tables`]).
    pub fn joins_tables(&self) -> bool {
        !self.joins.is_empty()
    }

    /// The columns of the query's result.
    pub fn output_schema(&self) -> datafusion::arrow::datatypes::SchemaRef {
        match &self.transform {
            Transform::Stateless(plan) => {
                record_time::without_record_time(plan.schema().as_arrow())
            }
            Transform::Windowed(windowed) => windowed.output_schema(),
            Transform::IntervalJoin(join) => {
                record_time::without_record_time(join.post_join.schema().as_arrow())
            }
        }
    }

    pub fn interval_join(&self) -> Option<&IntervalJoinPlan> {
        match &self.transform {
            Transform::IntervalJoin(join) => Some(join),
            _ => None,
        }
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn windowed(&self) -> Option<&WindowedQuery> {
        match &self.transform {
            Transform::Windowed(windowed) => Some(windowed),
            _ => None,
        }
    }

    /// The query's rows for one batch of each input (a stateless query), in the order of the
    /// tables.
    pub async fn apply(&self, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
        self.apply_with_tables(batches, &[]).await
    }

    /// [`SqlTransform::apply`], the query's joins looking records up in `tables` (in the order
    /// the tables were declared).
    pub async fn apply_with_tables(
        &self,
        batches: Vec<RecordBatch>,
        tables: &[TableState],
    ) -> Result<Vec<RecordBatch>> {
        Ok(self.apply_timed(batches, tables).await?.0)
    }

    /// [`SqlTransform::apply_with_tables`], with each output row's input record timestamp when
    /// the query keeps one (`crate::io::record_time`).
    pub async fn apply_timed(
        &self,
        batches: Vec<RecordBatch>,
        tables: &[TableState],
    ) -> Result<(Vec<RecordBatch>, record_time::RecordTimes)> {
        let Transform::Stateless(plan) = &self.transform else {
            return Err(StreamsError::Query(
                "a windowed query or a join between streams keeps state across checkpoints; \
                 run it as a job"
                    .into(),
            ));
        };
        for (index, batch) in batches.into_iter().enumerate() {
            self.session.set_input(index, batch).await;
        }
        let output = match join::lookup::run(&self.session, &self.joins, tables).await {
            Ok(()) => self.session.run(plan).await,
            Err(error) => Err(error),
        };
        self.session.clear_inputs().await;
        join::lookup::clear(&self.joins).await;
        record_time::split(output?)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::io::decode::RecordDecoder;
    use crate::io::encode::encode;
    use crate::record::{InputRecord, ValueFormat};

    fn input(values: &[&str]) -> Vec<InputRecord> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| InputRecord {
                key: None,
                value: Some(v.as_bytes().to_vec()),
                partition: 0,
                offset: i as i64,
                timestamp_ms: 1_700_000_000_000,
                headers: None,
            })
            .collect()
    }

    /// Golden test: input records + query → expected output values.
    async fn golden(values: &[&str], query: &str, expected: &[&str]) {
        let records = input(values);
        let schema = RecordDecoder::infer(&records).unwrap();
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        let transform = SqlTransform::new(&[("weblogs", decoder.schema())], query)
            .await
            .unwrap();
        let decoded = decoder.decode(&records).unwrap();
        let output = transform.apply(vec![decoded.batch]).await.unwrap();
        let got: Vec<serde_json::Value> = encode(&output, ValueFormat::Json)
            .unwrap()
            .iter()
            .map(|r| serde_json::from_slice(&r.value).unwrap())
            .collect();
        let expected: Vec<serde_json::Value> = expected
            .iter()
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        assert_eq!(got, expected, "{query}");
    }

    const LOGS: &[&str] = &[
        r#"{"path": "/index.html", "status": 200, "bytes": 512, "agent": "curl/8.1"}"#,
        r#"{"path": "/missing", "status": 404, "bytes": 0, "agent": "Mozilla/5.0"}"#,
        r#"{"path": "/api/v1/items", "status": 500, "bytes": 17, "agent": "curl/7.0"}"#,
    ];

    #[tokio::test]
    async fn projection_and_filter() {
        golden(
            LOGS,
            "SELECT path, status FROM weblogs WHERE status >= 400",
            &[
                r#"{"path": "/missing", "status": 404}"#,
                r#"{"path": "/api/v1/items", "status": 500}"#,
            ],
        )
        .await;
    }

    #[tokio::test]
    async fn scalar_functions_case_and_casts() {
        golden(
            LOGS,
            "SELECT upper(path) AS path, \
                    CASE WHEN status >= 500 THEN 'error' WHEN status >= 400 THEN 'miss' ELSE 'ok' END AS class, \
                    CAST(bytes AS DOUBLE) / 1024 AS kib, \
                    regexp_like(agent, '^curl/') AS is_curl, \
                    date_part('year', _timestamp) AS year \
             FROM weblogs",
            &[
                r#"{"path": "/INDEX.HTML", "class": "ok", "kib": 0.5, "is_curl": true, "year": 2023}"#,
                r#"{"path": "/MISSING", "class": "miss", "kib": 0.0, "is_curl": false, "year": 2023}"#,
                r#"{"path": "/API/V1/ITEMS", "class": "error", "kib": 0.0166015625, "is_curl": true, "year": 2023}"#,
            ],
        )
        .await;
    }

    #[tokio::test]
    async fn topic_names_with_dots_and_dashes_are_tables_when_quoted() {
        let records = input(LOGS);
        let schema = RecordDecoder::infer(&records).unwrap();
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        let query = r#"SELECT path FROM "web.logs-v2" WHERE status = 404"#;
        let transform = SqlTransform::new(&[("web.logs-v2", decoder.schema())], query)
            .await
            .unwrap();
        let output = transform
            .apply(vec![decoder.decode(&records).unwrap().batch])
            .await
            .unwrap();
        assert_eq!(output.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    }

    #[tokio::test]
    async fn a_bad_query_fails_when_the_job_starts() {
        let records = input(LOGS);
        let schema = RecordDecoder::infer(&records).unwrap();
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        let schema: SchemaRef = Arc::clone(&decoder.schema());
        for query in [
            "SELECT nope FROM weblogs",
            "SELECT path FROM other_table",
            "SELEKT path FROM weblogs",
        ] {
            assert!(
                SqlTransform::new(&[("weblogs", Arc::clone(&schema))], query)
                    .await
                    .is_err(),
                "{query}"
            );
        }
    }

    fn two_inputs() -> Vec<(&'static str, SchemaRef)> {
        let records = input(LOGS);
        let schema = RecordDecoder::infer(&records).unwrap();
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        vec![("weblogs", decoder.schema()), ("other", decoder.schema())]
    }

    /// Queries whose answer depends on rows of other checkpoints are refused with the reason,
    /// never run per batch (a join per checkpoint silently lost the pairs split across two).
    #[tokio::test]
    async fn queries_that_need_other_checkpoints_rows_are_refused_with_the_reason() {
        let tables = two_inputs();
        for (query, reason) in [
            (
                "SELECT w.path FROM weblogs w JOIN other o ON w.path = o.path",
                "a join",
            ),
            (
                "SELECT w.path FROM weblogs w LEFT JOIN other o ON w.path = o.path",
                "a join",
            ),
            ("SELECT w.path FROM weblogs w, other o", "a join"),
            (
                "SELECT path FROM weblogs WHERE path IN (SELECT path FROM other)",
                "subqueries",
            ),
            (
                "SELECT path FROM weblogs WHERE EXISTS (SELECT 1 FROM other)",
                "subqueries",
            ),
            (
                "SELECT path, (SELECT max(status) FROM other) FROM weblogs",
                "subqueries",
            ),
            ("SELECT path FROM weblogs ORDER BY status", "ORDER BY"),
            ("SELECT path FROM weblogs LIMIT 10", "LIMIT"),
            (
                "SELECT path, row_number() OVER (ORDER BY status) FROM weblogs",
                "OVER",
            ),
            ("SELECT DISTINCT path FROM weblogs", "DISTINCT"),
            ("SELECT 1 AS one", "reads no input topic"),
        ] {
            let error = match SqlTransform::new(&tables, query).await {
                Ok(_) => panic!("accepted: {query}"),
                Err(error) => error.to_string(),
            };
            assert!(error.contains(reason), "{query}: {error}");
        }
    }

    /// A job's SQL is a query: it cannot create tables, write files or change settings.
    #[tokio::test]
    async fn statements_other_than_a_query_are_refused() {
        let tables = two_inputs();
        let target = std::env::temp_dir().join(format!("weir-copy-{}", std::process::id()));
        for query in [
            format!(
                "COPY (SELECT path FROM weblogs) TO '{}' STORED AS CSV",
                target.display()
            ),
            "CREATE TABLE t AS SELECT path FROM weblogs".to_string(),
            "INSERT INTO weblogs SELECT * FROM other".to_string(),
            "SET datafusion.execution.batch_size = 1".to_string(),
        ] {
            assert!(SqlTransform::new(&tables, &query).await.is_err(), "{query}");
        }
        assert!(!target.exists(), "COPY wrote {}", target.display());
    }

    /// What runs per record is still accepted over several inputs.
    #[tokio::test]
    async fn per_record_queries_over_several_inputs_are_accepted() {
        let tables = two_inputs();
        for query in [
            "SELECT path FROM weblogs UNION ALL SELECT path FROM other",
            "SELECT path, status FROM (SELECT * FROM weblogs WHERE status > 200) AS errors",
            "WITH slow AS (SELECT path FROM weblogs WHERE bytes > 10) SELECT upper(path) FROM slow",
        ] {
            if let Err(error) = SqlTransform::new(&tables, query).await {
                panic!("{query}: {error}");
            }
        }
    }

    #[tokio::test]
    async fn the_columns_a_query_reads_are_known_per_table() {
        let records = input(&[r#"{"bidder": 1, "price": 2, "url": "u", "extra": "e"}"#]);
        let schema = RecordDecoder::infer(&records).unwrap();
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        let tables = [("bids", decoder.schema())];
        let read = |query: &'static str| {
            let tables = tables.clone();
            async move {
                let transform = SqlTransform::new(&tables, query).await.unwrap();
                let columns = transform.columns_read("bids").unwrap();
                columns.iter().cloned().collect::<Vec<_>>()
            }
        };
        // (A stateless query also reads the record timestamp its output records keep.)
        assert_eq!(
            read("SELECT bidder FROM bids WHERE price > 1").await,
            ["_timestamp", "bidder", "price"]
        );
        assert_eq!(
            read(
                "SELECT bidder, count(*) AS n FROM bids \
                  GROUP BY bidder, tumble(_timestamp, INTERVAL '10' SECOND)"
            )
            .await,
            ["_timestamp", "bidder"]
        );
        assert_eq!(read("SELECT * FROM bids").await.len(), 9);
    }

    #[tokio::test]
    async fn stateless_output_rows_keep_their_input_records_timestamps() {
        let mut records = input(LOGS);
        for (i, record) in records.iter_mut().enumerate() {
            record.timestamp_ms = 1_000 * (i as i64 + 1);
        }
        let schema = RecordDecoder::infer(&records).unwrap();
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        let timed = |query: &'static str| {
            let decoder = &decoder;
            let records = &records;
            async move {
                let transform = SqlTransform::new(&[("weblogs", decoder.schema())], query)
                    .await
                    .unwrap();
                let batch = decoder.decode(records).unwrap().batch;
                let (output, times) = transform.apply_timed(vec![batch], &[]).await.unwrap();
                let names: Vec<String> = transform
                    .output_schema()
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .collect();
                assert_eq!(output[0].schema().fields().len(), names.len(), "{query}");
                (names, times)
            }
        };
        let (names, times) = timed("SELECT path FROM weblogs WHERE status >= 400").await;
        assert_eq!(names, ["path"]);
        assert_eq!(times, Some(vec![Some(2_000), Some(3_000)]));
        let (_, times) = timed("SELECT upper(path) AS p, _timestamp AS at FROM weblogs").await;
        assert_eq!(times, Some(vec![Some(1_000), Some(2_000), Some(3_000)]));
        let (_, times) =
            timed("SELECT path FROM (SELECT * FROM weblogs WHERE status > 200) AS errors").await;
        assert_eq!(times, Some(vec![Some(2_000), Some(3_000)]));
    }
}
