//! The PostgreSQL sink: batches buffered until a commit, then one database transaction that
//! checks and moves the offsets in `weir_offsets` and copies the rows.

use std::time::Duration;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use futures::pin_mut;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Client;
use weir_client::Fenced;

use super::cell::ColumnValues;
use super::config::PostgresSinkConfig;
use super::schema::{self, quote_ident, quote_table};
use crate::error::ConnectorError;
use crate::sink::{Sink, SinkOffsets, SinkStats};

/// Why a database step failed: worth retrying (the database went away, a serialization
/// conflict) or not (a schema mismatch, a constraint, another writer moved the offsets).
enum Failure {
    Database(tokio_postgres::Error),
    Fatal(String),
    /// Another writer committed to this writer's partitions.
    Fenced(String),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(error: tokio_postgres::Error) -> Self {
        Failure::Database(error)
    }
}

pub struct PostgresSink {
    config: PostgresSinkConfig,
    /// Names this sink's rows in `weir_offsets` (pipeline and sink).
    sink_id: String,
    topic: String,
    client: Option<Client>,
    schema: Option<SchemaRef>,
    /// The table's types of the copied columns, in the rows' column order.
    column_types: Vec<Type>,
    copy_sql: String,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    committed: SinkOffsets,
    stats: SinkStats,
}

impl PostgresSink {
    /// A sink writing rows read from `topic`; `sink_id` keys its offsets (one writer per id).
    pub fn new(
        config: PostgresSinkConfig,
        sink_id: &str,
        topic: &str,
    ) -> Result<Self, ConnectorError> {
        let problems = config.problems();
        if !problems.is_empty() {
            return Err(ConnectorError::Config(problems.join("; ")));
        }
        Ok(PostgresSink {
            config,
            sink_id: sink_id.into(),
            topic: topic.into(),
            client: None,
            schema: None,
            column_types: Vec::new(),
            copy_sql: String::new(),
            pending: Vec::new(),
            pending_rows: 0,
            committed: SinkOffsets::new(),
            stats: SinkStats::default(),
        })
    }

    async fn client(&mut self) -> Result<&mut Client, Failure> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            let connection = self.config.connection().map_err(Failure::Fatal)?;
            self.client = Some(connection.connect().await?);
        }
        self.client
            .as_mut()
            .ok_or_else(|| Failure::Fatal("no PostgreSQL connection".into()))
    }

    /// Waits before the next attempt after `failure`, or gives the error up when retrying
    /// cannot help.
    async fn back_off(
        &mut self,
        failure: Failure,
        what: &str,
        backoff: &mut Duration,
    ) -> Result<(), ConnectorError> {
        let error = match failure {
            Failure::Fatal(reason) => return Err(ConnectorError::Sink(reason)),
            Failure::Fenced(reason) => return Err(Fenced::new(reason).into()),
            Failure::Database(error) if !is_transient(&error) => {
                return Err(ConnectorError::Sink(format!(
                    "PostgreSQL, {what}: {}",
                    describe(&error)
                )))
            }
            Failure::Database(error) => error,
        };
        tracing::warn!(sink = %self.sink_id, error = %describe(&error), retry_in_ms = backoff.as_millis() as u64, "PostgreSQL unavailable while {what}; retrying");
        self.client = None;
        tokio::time::sleep(*backoff).await;
        *backoff = (*backoff * 2).min(Duration::from_millis(self.config.retry_backoff_max_ms));
        Ok(())
    }

    async fn try_open(&mut self, schema: &SchemaRef) -> Result<(Vec<Type>, SinkOffsets), Failure> {
        let table = quote_table(&self.config.table).map_err(Failure::Fatal)?;
        let create_table = self.config.create_table;
        let table_name = self.config.table.clone();
        let (sink_id, topic) = (self.sink_id.clone(), self.topic.clone());
        let client = self.client().await?;
        client
            .batch_execute(&schema::serialized_ddl(schema::OFFSETS_TABLE_SQL))
            .await?;
        let exists: bool = client
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
            .await?
            .get(0);
        if !exists {
            if !create_table {
                return Err(Failure::Fatal(format!(
                    "table {table_name} does not exist (and create_table is false)"
                )));
            }
            let create = schema::create_table_sql(&table_name, schema).map_err(Failure::Fatal)?;
            client
                .batch_execute(&schema::serialized_ddl(&create))
                .await?;
            tracing::info!(table = %table_name, "table created");
        }
        let types = column_types(client, &table, &table_name, schema).await?;
        let offsets = stored_offsets(client, &sink_id, &topic, None).await?;
        Ok((types, offsets))
    }

    async fn try_commit(&mut self, target: &SinkOffsets) -> Result<bool, Failure> {
        let (sink_id, topic) = (self.sink_id.clone(), self.topic.clone());
        // Only the partitions this writer commits: other copies of the pipeline own the rest.
        let expected: SinkOffsets = target
            .keys()
            .filter_map(|p| self.committed.get(p).map(|o| (*p, *o)))
            .collect();
        let partitions: Vec<i32> = target.keys().copied().collect();
        let copy_sql = self.copy_sql.clone();
        let types = self.column_types.clone();
        let pending = std::mem::take(&mut self.pending);
        let result = async {
            let client = self.client().await?;
            let transaction = client.transaction().await?;
            // A row for each partition first (`-1`: none committed), so that two writers'
            // first commits of a partition are serialized by its row lock as well.
            transaction
                .execute(
                    "INSERT INTO weir_offsets (sink, topic, partition, next_offset) \
                     SELECT $1, $2, p, -1 FROM unnest($3::integer[]) AS t(p) \
                     ON CONFLICT (sink, topic, partition) DO NOTHING",
                    &[&sink_id, &topic, &partitions],
                )
                .await?;
            let stored = stored_offsets(&transaction, &sink_id, &topic, Some(&partitions)).await?;
            if stored == *target && *target != expected {
                return Ok(false); // an earlier attempt committed; its reply was lost
            }
            if stored != expected {
                return Err(Failure::Fenced(format!(
                    "weir_offsets of sink {sink_id} (topic {topic}) moved from {expected:?} to {stored:?} \
                     since this writer read them: another copy of the pipeline owns these partitions now"
                )));
            }
            copy_rows(&transaction, &copy_sql, &types, &pending).await?;
            let offsets: Vec<i64> = target.values().copied().collect();
            transaction
                .execute(
                    "INSERT INTO weir_offsets (sink, topic, partition, next_offset) \
                     SELECT $1, $2, p, o FROM unnest($3::integer[], $4::bigint[]) AS t(p, o) \
                     ON CONFLICT (sink, topic, partition) \
                     DO UPDATE SET next_offset = EXCLUDED.next_offset, updated_at = now()",
                    &[&sink_id, &topic, &partitions, &offsets],
                )
                .await?;
            transaction.commit().await?;
            Ok(true)
        }
        .await;
        self.pending = pending;
        result
    }
}

async fn column_types(
    client: &Client,
    table: &str,
    table_name: &str,
    schema: &SchemaRef,
) -> Result<Vec<Type>, Failure> {
    let columns: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| quote_ident(f.name()))
        .collect();
    let probe = format!("SELECT {} FROM {table} LIMIT 0", columns.join(", "));
    let statement = match client.prepare(&probe).await {
        Ok(statement) => statement,
        Err(error) if error.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_COLUMN) => {
            let existing: Vec<String> = client
                .query(
                    "SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                    &[&table],
                )
                .await?
                .iter()
                .map(|row| row.get(0))
                .collect();
            return Err(Failure::Fatal(format!(
                "table {table_name} does not fit the rows: {} (the table has {})",
                describe(&error),
                existing.join(", ")
            )));
        }
        Err(error) => return Err(error.into()),
    };
    let types: Vec<Type> = statement
        .columns()
        .iter()
        .map(|c| c.type_().clone())
        .collect();
    let mismatches: Vec<String> = schema
        .fields()
        .iter()
        .zip(&types)
        .filter(|(field, table_type)| !schema::fits(field.data_type(), table_type))
        .map(|(field, table_type)| {
            format!(
                "{} is {table_type} in the table but {} in the rows",
                field.name(),
                field.data_type()
            )
        })
        .collect();
    if !mismatches.is_empty() {
        return Err(Failure::Fatal(format!(
            "table {table_name} does not fit the rows: {}",
            mismatches.join("; ")
        )));
    }
    Ok(types)
}

/// The committed offsets of every partition, or of `locked` ones, locked until the transaction
/// ends (so two writers' checks of one partition are serialized).
async fn stored_offsets(
    client: &impl tokio_postgres::GenericClient,
    sink_id: &str,
    topic: &str,
    locked: Option<&[i32]>,
) -> Result<SinkOffsets, Failure> {
    const SELECT: &str =
        "SELECT partition, next_offset FROM weir_offsets WHERE sink = $1 AND topic = $2";
    let rows = match locked {
        None => client.query(SELECT, &[&sink_id, &topic]).await?,
        Some(partitions) => {
            let query = format!("{SELECT} AND partition = ANY($3) FOR UPDATE");
            client
                .query(&query, &[&sink_id, &topic, &partitions])
                .await?
        }
    };
    Ok(rows
        .iter()
        .map(|row| (row.get::<_, i32>(0), row.get::<_, i64>(1)))
        .filter(|(_, next_offset)| *next_offset >= 0)
        .collect())
}

async fn copy_rows(
    transaction: &tokio_postgres::Transaction<'_>,
    copy_sql: &str,
    types: &[Type],
    batches: &[RecordBatch],
) -> Result<(), Failure> {
    let sink = transaction.copy_in(copy_sql).await?;
    let writer = BinaryCopyInWriter::new(sink, types);
    pin_mut!(writer);
    for batch in batches {
        let columns = batch
            .columns()
            .iter()
            .map(ColumnValues::new)
            .collect::<Result<Vec<_>, _>>()
            .map_err(Failure::Fatal)?;
        for row in 0..batch.num_rows() {
            let cells: Vec<_> = columns.iter().map(|c| c.cell(row)).collect();
            let values: Vec<&(dyn ToSql + Sync)> =
                cells.iter().map(|c| c as &(dyn ToSql + Sync)).collect();
            writer.as_mut().write(&values).await?;
        }
    }
    writer.finish().await?;
    Ok(())
}

/// Worth retrying: the connection failed or broke, the server is shutting down or full, or a
/// serialization conflict.
fn is_transient(error: &tokio_postgres::Error) -> bool {
    use std::error::Error;
    match error.code() {
        Some(code) => {
            let code = code.code();
            code.starts_with("08")
                || ["40001", "40P01", "57P01", "57P02", "57P03", "53300"].contains(&code)
        }
        None => {
            error.is_closed()
                || error.source().is_some_and(|s| s.is::<std::io::Error>())
                || error.to_string().contains("connect")
        }
    }
}

/// The database's message (with detail and hint) rather than tokio-postgres' "db error".
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => {
            let mut text = format!("{} ({})", db.message(), db.code().code());
            if let Some(detail) = db.detail() {
                text.push_str(&format!("; {detail}"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("; hint: {hint}"));
            }
            text
        }
        None => {
            use std::error::Error;
            match error.source() {
                Some(source) => format!("{error}: {source}"),
                None => error.to_string(),
            }
        }
    }
}

#[async_trait::async_trait]
impl Sink for PostgresSink {
    async fn open(&mut self, schema: SchemaRef) -> Result<SinkOffsets, ConnectorError> {
        let mut backoff = Duration::from_millis(self.config.retry_backoff_ms);
        let (types, offsets) = loop {
            match self.try_open(&schema).await {
                Ok(opened) => break opened,
                Err(failure) => {
                    self.back_off(failure, "opening the table", &mut backoff)
                        .await?
                }
            }
        };
        let table = quote_table(&self.config.table).map_err(ConnectorError::Config)?;
        let columns: Vec<String> = schema
            .fields()
            .iter()
            .map(|f| quote_ident(f.name()))
            .collect();
        self.copy_sql = format!(
            "COPY {table} ({}) FROM STDIN (FORMAT binary)",
            columns.join(", ")
        );
        self.column_types = types;
        self.schema = Some(schema);
        self.committed = offsets.clone();
        Ok(offsets)
    }

    async fn write(&mut self, batch: &RecordBatch) -> Result<(), ConnectorError> {
        if batch.num_rows() > 0 {
            self.pending_rows += batch.num_rows();
            self.pending.push(batch.clone());
        }
        Ok(())
    }

    fn should_commit(&self, since_commit: Duration) -> bool {
        self.pending_rows >= self.config.batch_rows
            || since_commit >= Duration::from_millis(self.config.commit_interval_ms)
    }

    async fn commit(&mut self, offsets: &SinkOffsets) -> Result<(), ConnectorError> {
        if self.pending.is_empty() && *offsets == self.committed {
            return Ok(());
        }
        let mut backoff = Duration::from_millis(self.config.retry_backoff_ms);
        let wrote = loop {
            match self.try_commit(offsets).await {
                Ok(wrote) => break wrote,
                Err(failure) => self.back_off(failure, "committing", &mut backoff).await?,
            }
        };
        if wrote {
            self.stats.rows_committed += self.pending_rows as u64;
            self.stats.commits += 1;
        } else {
            tracing::info!(sink = %self.sink_id, "a commit whose reply was lost had succeeded; not repeating it");
            self.stats.rows_committed += self.pending_rows as u64;
        }
        self.pending.clear();
        self.pending_rows = 0;
        self.committed = offsets.clone();
        Ok(())
    }

    fn stats(&self) -> SinkStats {
        self.stats
    }

    /// Offsets are rows per partition, checked and moved under a row lock.
    fn shares_partitions(&self) -> bool {
        true
    }
}
