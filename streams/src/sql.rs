//! The SQL transform: a query planned by DataFusion over the batch of one checkpoint, registered
//! as a table named after the input. Stateless: each checkpoint's rows are transformed on their
//! own (projections, filters, scalar functions, CASE, casts).
//!
//! The table's name is the topic's, taken whole (a topic `web.logs` is one table, not table `logs`
//! of schema `web`); names that are not plain lowercase identifiers are quoted in SQL:
//! `SELECT … FROM "web.logs"`.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;

use crate::error::{Result, StreamsError};

pub struct SqlTransform {
    context: SessionContext,
    table: String,
    query: String,
}

impl SqlTransform {
    /// Plans `query` once against `schema` (the decoded input's), so that a bad query fails
    /// when the job starts, not at its first checkpoint.
    pub async fn new(table: &str, query: &str, schema: SchemaRef) -> Result<Self> {
        let context = SessionContext::new();
        let transform = SqlTransform {
            context,
            table: table.to_string(),
            query: query.to_string(),
        };
        let empty = RecordBatch::new_empty(schema);
        transform.register(empty)?;
        let plan = transform.context.sql(query).await?;
        if plan.logical_plan().schema().fields().is_empty() {
            return Err(StreamsError::Config(format!(
                "the query selects no columns: {query}"
            )));
        }
        Ok(transform)
    }

    /// The query's rows for one batch of input.
    pub async fn apply(&self, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        self.register(batch)?;
        let frame = self.context.sql(&self.query).await?;
        Ok(frame.collect().await?)
    }

    fn register(&self, batch: RecordBatch) -> Result<()> {
        let table = TableReference::bare(self.table.as_str());
        self.context.deregister_table(table.clone())?;
        self.context.register_batch(table, batch)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::decode::RecordDecoder;
    use crate::encode::encode;
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
            })
            .collect()
    }

    /// Golden test: input records + query → expected output values.
    async fn golden(values: &[&str], query: &str, expected: &[&str]) {
        let records = input(values);
        let schema = RecordDecoder::infer(&records).unwrap();
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        let transform = SqlTransform::new("weblogs", query, decoder.schema())
            .await
            .unwrap();
        let decoded = decoder.decode(&records).unwrap();
        let output = transform.apply(decoded.batch).await.unwrap();
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
             FROM weblogs ORDER BY _offset",
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
        let transform = SqlTransform::new("web.logs-v2", query, decoder.schema())
            .await
            .unwrap();
        let output = transform
            .apply(decoder.decode(&records).unwrap().batch)
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
                SqlTransform::new("weblogs", query, Arc::clone(&schema))
                    .await
                    .is_err(),
                "{query}"
            );
        }
    }
}
