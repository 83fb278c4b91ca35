//! The PostgreSQL sink: batches buffered until a commit, then one database transaction that
//! checks and moves the offsets in `weir_offsets` and copies the rows.
//!
//! An updating aggregate's changes ([`Sink::apply`]) are upserts instead: the table's primary
//! key is `key_column`, each commit copies the latest row of every changed key into a temporary
//! table and merges it (`INSERT … ON CONFLICT … DO UPDATE`), and deletes the keys whose last
//! change was a tombstone — in the same transaction as the offsets.

use std::time::Duration;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use futures::pin_mut;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::Client;
use weir_client::{Fenced, Remedy};

use super::cell::ColumnValues;
use super::config::PostgresSinkConfig;
use super::schema::{self, quote_ident, quote_table};
use crate::error::ConnectorError;
use crate::sink::{Changes, Sink, SinkOffsets, SinkStats};

/// The temporary table a commit copies the changed rows into before merging them.
const CHANGES_TABLE: &str = "pg_temp.weir_changes";

/// Why a database step failed: worth retrying (the database went away, a serialization
/// conflict) or not (a schema mismatch, a constraint, another writer moved the offsets).
enum Failure {
    Database(tokio_postgres::Error),
    /// The database refuses what the sink needs (a table missing or not fitting the rows):
    /// retrying cannot help.
    Fatal(String),
    /// An error of the sink's own, as it is.
    Connector(ConnectorError),
    /// Another writer committed to this writer's partitions.
    Fenced(String),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(error: tokio_postgres::Error) -> Self {
        Failure::Database(error)
    }
}

/// The statements that apply changes (made at open, once the columns are known).
#[derive(Default, Clone)]
struct Upserts {
    /// Creates the temporary table (dropped at commit) with the table's key and row columns.
    create_changes_table: String,
    /// Merges the temporary table's rows into the table.
    merge: String,
    /// Deletes the keys of `$1` (text[]).
    delete: String,
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
    /// Rows are an updating aggregate's changes, upserted by `key_column`.
    upserting: Option<Upserts>,
    pending_changes: Vec<Changes>,
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
            upserting: None,
            pending_changes: Vec::new(),
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
        let refused = |reason| ConnectorError::target("PostgreSQL", what, Remedy::Fix, reason);
        let error = match failure {
            Failure::Database(error) if is_transient(&error) => error,
            Failure::Database(error) => return Err(refused(describe(&error))),
            Failure::Fatal(reason) => return Err(refused(reason)),
            Failure::Connector(error) => return Err(error),
            Failure::Fenced(reason) => return Err(Fenced::new(reason).into()),
        };
        tracing::warn!(sink = %self.sink_id, error = %describe(&error), retry_in_ms = backoff.as_millis() as u64, "PostgreSQL unavailable while {what}; retrying");
        self.client = None;
        tokio::time::sleep(*backoff).await;
        *backoff = (*backoff * 2).min(Duration::from_millis(self.config.retry_backoff_max_ms));
        Ok(())
    }

    /// The table's columns: the rows', after the key when applying changes.
    fn table_schema(&self, schema: &SchemaRef) -> SchemaRef {
        if self.upserting.is_none() {
            return schema.clone();
        }
        let mut fields = vec![Field::new(&self.config.key_column, DataType::Utf8, false)];
        fields.extend(schema.fields().iter().map(|f| f.as_ref().clone()));
        std::sync::Arc::new(Schema::new(fields))
    }

    async fn try_open(&mut self, schema: &SchemaRef) -> Result<(Vec<Type>, SinkOffsets), Failure> {
        let table = quote_table(&self.config.table).map_err(Failure::Fatal)?;
        let key_column = self
            .upserting
            .as_ref()
            .map(|_| self.config.key_column.clone());
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
            let create = schema::create_table_sql(&table_name, schema, key_column.as_deref())
                .map_err(Failure::Fatal)?;
            client
                .batch_execute(&schema::serialized_ddl(&create))
                .await?;
            tracing::info!(table = %table_name, "table created");
        }
        if let Some(key_column) = &key_column {
            check_unique_key(client, &table, &table_name, key_column).await?;
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
        let upserting = self.upserting.clone();
        let latest = match (&upserting, self.pending_changes.is_empty()) {
            (Some(_), false) => Some(
                Changes::latest(&self.pending_changes, &self.config.key_column)
                    .map_err(Failure::Connector)?,
            ),
            _ => None,
        };
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
            match (&upserting, &latest) {
                (Some(upserts), Some(latest)) => {
                    if !latest.deleted_keys.is_empty() {
                        transaction
                            .execute(&upserts.delete, &[&latest.deleted_keys])
                            .await?;
                    }
                    if latest.upserts.num_rows() > 0 {
                        transaction
                            .batch_execute(&upserts.create_changes_table)
                            .await?;
                        let rows = std::slice::from_ref(&latest.upserts);
                        copy_rows(&transaction, &copy_sql, &types, rows).await?;
                        transaction.batch_execute(&upserts.merge).await?;
                    }
                }
                (Some(_), None) => {}
                (None, _) => copy_rows(&transaction, &copy_sql, &types, &pending).await?,
            }
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

/// An existing table must have a unique index on exactly the key column for upserts to merge.
async fn check_unique_key(
    client: &Client,
    table: &str,
    table_name: &str,
    key_column: &str,
) -> Result<(), Failure> {
    let unique: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a \
               ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
             WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indnkeyatts = 1 \
               AND i.indpred IS NULL AND a.attname = $2)",
            &[&table, &key_column],
        )
        .await?
        .get(0);
    if unique {
        return Ok(());
    }
    Err(Failure::Fatal(format!(
        "table {table_name} has no primary key or unique index on {key_column} alone: an \
         updating aggregate's rows are upserted by their key (add `PRIMARY KEY ({key_column})`, \
         or set the sink's key_column)"
    )))
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

/// The statements applying changes to `table`; `columns` are quoted, the key first.
fn upsert_statements(table: &str, key: &str, values: &[String]) -> Upserts {
    let listed = std::iter::once(key.to_string())
        .chain(values.iter().cloned())
        .collect::<Vec<_>>()
        .join(", ");
    let on_conflict = if values.is_empty() {
        "DO NOTHING".to_string()
    } else {
        let set: Vec<String> = values
            .iter()
            .map(|c| format!("{c} = EXCLUDED.{c}"))
            .collect();
        format!("DO UPDATE SET {}", set.join(", "))
    };
    Upserts {
        create_changes_table: format!(
            "CREATE TEMPORARY TABLE weir_changes ON COMMIT DROP AS \
             SELECT {listed} FROM {table} WITH NO DATA"
        ),
        merge: format!(
            "INSERT INTO {table} ({listed}) SELECT {listed} FROM {CHANGES_TABLE} \
             ON CONFLICT ({key}) {on_conflict}"
        ),
        delete: format!("DELETE FROM {table} WHERE {key} = ANY($1::text[])"),
    }
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
        if let Some(problem) = self
            .config
            .key_column_problem(&schema, self.upserting.is_some())
        {
            return Err(ConnectorError::Config(problem));
        }
        let schema = self.table_schema(&schema);
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
        let copy_into = match &mut self.upserting {
            None => table.clone(),
            Some(upserts) => {
                let (key, values) = columns
                    .split_first()
                    .ok_or_else(|| ConnectorError::Internal("no key column".into()))?;
                *upserts = upsert_statements(&table, key, values);
                CHANGES_TABLE.to_string()
            }
        };
        self.copy_sql = format!(
            "COPY {copy_into} ({}) FROM STDIN (FORMAT binary)",
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

    fn expect_changes(&mut self) -> Result<(), ConnectorError> {
        self.upserting = Some(Upserts::default());
        Ok(())
    }

    async fn apply(&mut self, changes: &Changes) -> Result<(), ConnectorError> {
        if self.upserting.is_none() {
            return Err(ConnectorError::Internal(
                "changes given to a sink opened for appending".into(),
            ));
        }
        if !changes.is_empty() {
            self.pending_rows += changes.len();
            self.pending_changes.push(changes.clone());
        }
        Ok(())
    }

    fn should_commit(&self, since_commit: Duration) -> bool {
        self.pending_rows >= self.config.batch_rows
            || since_commit >= Duration::from_millis(self.config.commit_interval_ms)
    }

    async fn commit(&mut self, offsets: &SinkOffsets) -> Result<(), ConnectorError> {
        let nothing_pending = self.pending.is_empty() && self.pending_changes.is_empty();
        if nothing_pending && *offsets == self.committed {
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
        self.pending_changes.clear();
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
