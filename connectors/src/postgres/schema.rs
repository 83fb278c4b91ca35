//! Arrow columns ↔ PostgreSQL columns: names quoted, types for CREATE TABLE, and which table
//! types a column's values can be copied into.

use arrow::datatypes::{DataType, Schema};
use tokio_postgres::types::Type;

/// A double-quoted identifier (so any column name works, in its exact case).
pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `table` or `schema.table`, quoted.
pub(super) fn quote_table(table: &str) -> Result<String, String> {
    let parts: Vec<&str> = table.split('.').collect();
    if parts.is_empty() || parts.len() > 2 || parts.iter().any(|p| p.trim().is_empty()) {
        return Err(format!("'{table}' is not `table` or `schema.table`"));
    }
    Ok(parts
        .iter()
        .map(|p| quote_ident(p))
        .collect::<Vec<_>>()
        .join("."))
}

/// The PostgreSQL type a new table gets for an Arrow column.
pub(super) fn create_type(data_type: &DataType) -> Option<&'static str> {
    Some(match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "text",
        DataType::Boolean => "boolean",
        DataType::Int8 | DataType::Int16 => "smallint",
        DataType::Int32 | DataType::UInt8 | DataType::UInt16 => "integer",
        DataType::Int64 | DataType::UInt32 | DataType::UInt64 => "bigint",
        DataType::Float32 => "real",
        DataType::Float64 => "double precision",
        DataType::Timestamp(_, _) => "timestamp with time zone",
        _ => return None,
    })
}

/// Whether values of `data_type` can be copied into a column of `table_type`.
pub(super) fn fits(data_type: &DataType, table_type: &Type) -> bool {
    let integer = [
        Type::INT2,
        Type::INT4,
        Type::INT8,
        Type::FLOAT8,
        Type::FLOAT4,
    ];
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            [Type::TEXT, Type::VARCHAR, Type::BPCHAR, Type::NAME].contains(table_type)
        }
        DataType::Boolean => *table_type == Type::BOOL,
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            integer.contains(table_type)
        }
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            integer.contains(table_type)
        }
        DataType::Float32 | DataType::Float64 => [Type::FLOAT8, Type::FLOAT4].contains(table_type),
        DataType::Timestamp(_, _) => [Type::TIMESTAMPTZ, Type::TIMESTAMP].contains(table_type),
        _ => false,
    }
}

/// `CREATE TABLE IF NOT EXISTS` for `schema`'s columns, `primary_key` (one of them) its key.
pub(super) fn create_table_sql(
    table: &str,
    schema: &Schema,
    primary_key: Option<&str>,
) -> Result<String, String> {
    let mut columns = Vec::new();
    for field in schema.fields() {
        let Some(sql_type) = create_type(field.data_type()) else {
            return Err(format!(
                "column {} is {}, which has no PostgreSQL type here; cast it in the SQL transform",
                field.name(),
                field.data_type()
            ));
        };
        let key = if primary_key == Some(field.name().as_str()) {
            " PRIMARY KEY"
        } else {
            ""
        };
        columns.push(format!("{} {sql_type}{key}", quote_ident(field.name())));
    }
    Ok(format!(
        "CREATE TABLE IF NOT EXISTS {} ({})",
        quote_table(table)?,
        columns.join(", ")
    ))
}

/// The advisory lock key that serializes Weir's DDL ("weir-ddl" in ASCII).
const DDL_LOCK_KEY: i64 = 0x7765_6972_2d64_646c;

/// `ddl` run under a transaction-scoped advisory lock: PostgreSQL's `CREATE TABLE IF NOT EXISTS`
/// is not safe against a concurrent identical one (the loser fails with "already exists"), so
/// sinks starting together on a fresh database take turns. Several statements in one simple
/// query run as one implicit transaction, which holds the lock until it ends.
pub(super) fn serialized_ddl(ddl: &str) -> String {
    format!("SELECT pg_advisory_xact_lock({DDL_LOCK_KEY}); {ddl}")
}

pub(super) const OFFSETS_TABLE_SQL: &str = "CREATE TABLE IF NOT EXISTS weir_offsets (
    sink text NOT NULL,
    topic text NOT NULL,
    partition integer NOT NULL,
    next_offset bigint NOT NULL,
    updated_at timestamp with time zone NOT NULL DEFAULT now(),
    PRIMARY KEY (sink, topic, partition))";
