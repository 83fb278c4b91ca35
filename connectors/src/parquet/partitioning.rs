//! Hive-style partition directories of each row: `date(col)`, `hour(col)` or a column's value.

use std::collections::HashMap;

use arrow::array::{Array, ArrayRef, TimestampMillisecondArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Schema, TimeUnit};
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::error::ConnectorError;

/// Hive's directory name for a null value.
const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum PartitionSpec {
    Date(String),
    Hour(String),
    Value(String),
}

impl PartitionSpec {
    pub(super) fn parse(spec: &str) -> Result<Self, String> {
        let spec = spec.trim();
        let call = |name: &str| {
            spec.strip_prefix(name)
                .and_then(|rest| rest.trim_start().strip_prefix('('))
                .and_then(|rest| rest.strip_suffix(')'))
                .map(|column| column.trim().to_string())
        };
        let is_name = |column: &str| {
            !column.is_empty() && column.chars().all(|c| c.is_alphanumeric() || c == '_')
        };
        let parsed = if let Some(column) = call("date") {
            PartitionSpec::Date(column)
        } else if let Some(column) = call("hour") {
            PartitionSpec::Hour(column)
        } else {
            PartitionSpec::Value(spec.to_string())
        };
        if is_name(parsed.column()) {
            Ok(parsed)
        } else {
            Err(format!(
                "'{spec}' is not date(column), hour(column) or a column name"
            ))
        }
    }

    pub(super) fn column(&self) -> &str {
        match self {
            PartitionSpec::Date(column)
            | PartitionSpec::Hour(column)
            | PartitionSpec::Value(column) => column,
        }
    }

    /// Checks the column exists and fits (a timestamp for date/hour).
    pub(super) fn check(&self, schema: &Schema) -> Result<(), ConnectorError> {
        let field = schema.field_with_name(self.column()).map_err(|_| {
            let columns: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            ConnectorError::Config(format!(
                "partition_by: no column '{}' among {}",
                self.column(),
                columns.join(", ")
            ))
        })?;
        let is_time = matches!(
            field.data_type(),
            DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64
        );
        if matches!(self, PartitionSpec::Date(_) | PartitionSpec::Hour(_)) && !is_time {
            return Err(ConnectorError::Config(format!(
                "partition_by: '{}' is {}, not a timestamp",
                self.column(),
                field.data_type()
            )));
        }
        Ok(())
    }
}

/// The partition directory of every row (`""` without partitioning).
pub(super) fn row_directories(
    batch: &RecordBatch,
    specs: &[PartitionSpec],
) -> Result<Vec<String>, ConnectorError> {
    let mut directories = vec![String::new(); batch.num_rows()];
    for spec in specs {
        let column = batch.column_by_name(spec.column()).ok_or_else(|| {
            ConnectorError::Config(format!("partition_by: no column '{}'", spec.column()))
        })?;
        let segments = match spec {
            PartitionSpec::Date(_) => {
                time_segments(column, 86_400_000, |ms| format_time(ms, "date=%Y-%m-%d"))?
            }
            PartitionSpec::Hour(_) => {
                time_segments(column, 3_600_000, |ms| format_time(ms, "hour=%H"))?
            }
            PartitionSpec::Value(name) => value_segments(name, column)?,
        };
        for (directory, segment) in directories.iter_mut().zip(segments) {
            if !directory.is_empty() {
                directory.push('/');
            }
            directory.push_str(&segment);
        }
    }
    Ok(directories)
}

fn format_time(epoch_ms: i64, format: &str) -> String {
    chrono::DateTime::from_timestamp_millis(epoch_ms)
        .map(|t| t.format(format).to_string())
        .unwrap_or_else(|| NULL_PARTITION.to_string())
}

/// One segment per row from a time column, formatted once per distinct `bucket_ms` bucket.
fn time_segments(
    column: &ArrayRef,
    bucket_ms: i64,
    name: impl Fn(i64) -> String,
) -> Result<Vec<String>, ConnectorError> {
    let millis = cast(column, &DataType::Timestamp(TimeUnit::Millisecond, None))
        .map_err(ConnectorError::rows("partition_by"))?;
    let millis = millis
        .as_any()
        .downcast_ref::<TimestampMillisecondArray>()
        .ok_or_else(|| ConnectorError::Rows {
            operation: "partition_by",
            reason: "not a timestamp column".into(),
        })?;
    let prefix = name(0);
    let null_segment = match prefix.split_once('=') {
        Some((key, _)) => format!("{key}={NULL_PARTITION}"),
        None => NULL_PARTITION.to_string(),
    };
    let mut cache: HashMap<i64, String> = HashMap::new();
    Ok((0..millis.len())
        .map(|row| {
            if millis.is_null(row) {
                return null_segment.clone();
            }
            let bucket = millis.value(row).div_euclid(bucket_ms);
            cache
                .entry(bucket)
                .or_insert_with(|| name(bucket * bucket_ms))
                .clone()
        })
        .collect())
}

fn value_segments(name: &str, column: &ArrayRef) -> Result<Vec<String>, ConnectorError> {
    let formatter = ArrayFormatter::try_new(column.as_ref(), &FormatOptions::default())
        .map_err(ConnectorError::rows("partition_by"))?;
    Ok((0..column.len())
        .map(|row| {
            let value = if column.is_null(row) {
                NULL_PARTITION.to_string()
            } else {
                escape(&formatter.value(row).to_string())
            };
            format!("{name}={value}")
        })
        .collect())
}

/// Percent-escapes what cannot be in a directory name (as Hive does); an empty value is
/// Hive's null directory.
fn escape(value: &str) -> String {
    if value.is_empty() {
        return NULL_PARTITION.to_string();
    }
    let only_dots = value.bytes().all(|b| b == b'.');
    let mut escaped = String::with_capacity(value.len());
    for byte in value.bytes() {
        let plain = byte.is_ascii_alphanumeric()
            || matches!(byte, b'-' | b'_')
            || (byte == b'.' && !only_dots);
        if plain {
            escaped.push(byte as char);
        } else {
            escaped.push_str(&format!("%{byte:02X}"));
        }
    }
    escaped
}
