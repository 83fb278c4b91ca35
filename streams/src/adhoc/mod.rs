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

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::MemTable;
use datafusion::common::TableReference;
use datafusion::error::DataFusionError;
use datafusion::execution::context::SQLOptions;
use datafusion::prelude::{SessionConfig, SessionContext};

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

/// Runs `query` over the topics it names, in a session of its own.
///
/// Boxed so that DataFusion's planning and execution are compiled once, in this crate, not again
/// in each crate that awaits it.
pub fn query<'a>(
    options: &'a AdhocOptions,
    query: &'a str,
) -> Pin<Box<dyn Future<Output = Result<Vec<RecordBatch>>> + Send + 'a>> {
    Box::pin(async move { AdhocSession::new(options.clone())?.run(query).await })
}

/// The session of one `weir sql` prompt: what a statement sets (`SET`), and the views and tables
/// it makes (`CREATE VIEW`, `CREATE TABLE … AS`), last for the statements after it. A topic's
/// table is made when a statement first names it (its JSON schema inferred then) and read by
/// every scan, up to the topic's end as it is then — through a view too. Statements that would
/// write — `COPY … TO`, `INSERT` — are refused with the reason: `weir sql` only reads.
pub struct AdhocSession {
    options: AdhocOptions,
    context: SessionContext,
    /// The tables this session registered for topics (the rest are the user's or `tables`).
    topic_tables: HashSet<String>,
}

impl AdhocSession {
    pub fn new(options: AdhocOptions) -> Result<AdhocSession> {
        // SHOW (settings, tables, columns) reads the information schema.
        let config = SessionConfig::new().with_information_schema(true);
        let context = SessionContext::new_with_config(config);
        window_functions::register(&context);
        for (name, schema, batches) in &options.tables {
            let table = MemTable::try_new(Arc::clone(schema), vec![batches.clone()])?;
            context.register_table(TableReference::bare(name.as_str()), Arc::new(table))?;
        }
        Ok(AdhocSession {
            options,
            context,
            topic_tables: HashSet::new(),
        })
    }

    /// Runs one statement. Boxed as [`query`] is.
    pub fn run<'a>(
        &'a mut self,
        statement: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<RecordBatch>>> + Send + 'a>> {
        Box::pin(self.run_statement(statement))
    }

    async fn run_statement(&mut self, sql: &str) -> Result<Vec<RecordBatch>> {
        let state = self.context.state();
        let dialect = state.config().options().sql_parser.dialect;
        let statement = state.sql_to_statement(sql, &dialect)?;
        // A name that is no topic may be what the statement creates (CREATE VIEW v …): its
        // error is answered only if the statement then does not plan.
        let mut not_opened = None;
        for table in state.resolve_table_references(&statement)? {
            if table.schema() == Some("information_schema") {
                continue;
            }
            if let Err(error) = self.open_topic_if_one(table.table()).await {
                not_opened.get_or_insert(error);
            }
        }
        let read_only = SQLOptions::new().with_allow_dml(false);
        let frame = match self.context.sql_with_options(sql, read_only).await {
            Ok(frame) => frame,
            Err(error) => return Err(not_opened.unwrap_or_else(|| refused_write(error))),
        };
        Ok(frame.collect().await?)
    }

    /// Registers `name` as its topic's table, unless it is one already, a table given as data
    /// or one the user made in this session.
    async fn open_topic_if_one(&mut self, name: &str) -> Result<()> {
        let given = self
            .options
            .tables
            .iter()
            .any(|(table, _, _)| table == name);
        if given || self.topic_tables.contains(name) {
            return Ok(());
        }
        if self.context.table_exist(TableReference::bare(name))? {
            return Ok(()); // made in this session (a view, a table)
        }
        let declared = self.options.latest.iter().find(|(table, _)| table == name);
        let (topic, latest) = match declared {
            Some((_, topic)) => (topic.clone(), true),
            None => (name.to_string(), false),
        };
        let options = self.options.clone();
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
        self.context
            .register_table(TableReference::bare(name), Arc::new(opened))?;
        self.topic_tables.insert(name.to_string());
        Ok(())
    }
}

/// DataFusion's refusal of a writing statement, with Weir's reason.
fn refused_write(error: DataFusionError) -> StreamsError {
    let text = error.to_string();
    match text.split("DML not supported: ").nth(1) {
        Some(what) => StreamsError::Query(format!(
            "{} is refused: weir sql only reads (topics, and Parquet files with --parquet); a \
             job writes topics and a pipeline writes Parquet files or PostgreSQL",
            what.trim()
        )),
        None => error.into(),
    }
}
