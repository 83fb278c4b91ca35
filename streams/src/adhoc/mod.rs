//! Ad-hoc SQL over topics (`weir sql`): every topic the query names is a table — its decoded
//! values (JSON by a schema inferred from a sample, or raw strings) plus `_key`, `_partition`,
//! `_offset`, `_timestamp` — read with read_committed up to its end as it is when the query
//! scans it; filters on `_partition`, `_offset` and `_timestamp` limit what is read
//! ([`topic_table`]). A topic declared as a table (`latest`) holds only the latest record of
//! each key, a tombstone deleting it — how a compacted topic such as a job's updating
//! aggregate is read as the view it is. Works against Weir or any Kafka cluster (rdkafka only).
//!
//! Bounded: at most `max_records` records per topic are read (the query fails beyond, rather than
//! answering over part of a topic without saying so).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::MemTable;
use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;

use weir_client::{ClientSettings, CLUSTER_TIMEOUT};

use crate::error::{Result, StreamsError};
use crate::plan::window_functions;
use crate::record::ValueFormat;

pub mod topic_table;

use topic_table::TopicTable;

/// How to reach the cluster and how much to read.
#[derive(Debug, Clone)]
pub struct AdhocOptions {
    /// The cluster, and the extra librdkafka properties of its clients.
    pub client: ClientSettings,
    pub format: ValueFormat,
    /// The most records read from one topic.
    pub max_records: usize,
    /// Records the JSON schema is inferred from.
    pub schema_sample_records: usize,
    pub timeout: Duration,
    /// Tables given as data rather than topics (e.g. Parquet files), by name; a query's
    /// reference to one of these names is not read from the cluster.
    pub tables: Vec<(String, SchemaRef, Vec<RecordBatch>)>,
    /// Topics read as tables, the latest value per key: (name in SQL, topic).
    pub latest: Vec<(String, String)>,
}

impl AdhocOptions {
    pub fn new(bootstrap: &str) -> Self {
        AdhocOptions {
            client: ClientSettings::new(bootstrap),
            format: ValueFormat::Json,
            max_records: 1_000_000,
            schema_sample_records: 1000,
            timeout: CLUSTER_TIMEOUT,
            tables: Vec::new(),
            latest: Vec::new(),
        }
    }
}

/// Runs `query` over the topics it names.
///
/// Boxed so that DataFusion's planning and execution are compiled once, in this crate, not again
/// in each crate that awaits it.
pub fn query<'a>(
    options: &'a AdhocOptions,
    query: &'a str,
) -> Pin<Box<dyn Future<Output = Result<Vec<RecordBatch>>> + Send + 'a>> {
    Box::pin(run_query(options, query))
}

async fn run_query(options: &AdhocOptions, query: &str) -> Result<Vec<RecordBatch>> {
    let context = SessionContext::new();
    window_functions::register(&context);
    let state = context.state();
    let dialect = state.config().options().sql_parser.dialect;
    let statement = state.sql_to_statement(query, &dialect)?;
    for (name, schema, batches) in &options.tables {
        let table = MemTable::try_new(Arc::clone(schema), vec![batches.clone()])?;
        context.register_table(TableReference::bare(name.as_str()), Arc::new(table))?;
    }
    for table in state.resolve_table_references(&statement)? {
        if options
            .tables
            .iter()
            .any(|(name, _, _)| name == table.table())
        {
            continue;
        }
        let declared = options
            .latest
            .iter()
            .find(|(name, _)| name == table.table());
        let (topic, latest) = match declared {
            Some((_, topic)) => (topic.clone(), true),
            None => (table.table().to_string(), false),
        };
        let options = options.clone();
        let opened = tokio::task::spawn_blocking(move || {
            let opened = TopicTable::open(&options, &topic)?;
            Ok::<_, StreamsError>(if latest {
                opened.latest_per_key()
            } else {
                opened
            })
        })
        .await
        .map_err(|e| StreamsError::Internal(format!("opening a topic failed: {e}")))??;
        context.register_table(TableReference::bare(table.table()), Arc::new(opened))?;
    }
    Ok(context.sql(query).await?.collect().await?)
}
