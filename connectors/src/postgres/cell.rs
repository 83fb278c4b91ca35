//! One value of a row on its way into binary COPY, converted to the table column's type.

use std::error::Error;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array, StringArray,
    TimestampMillisecondArray,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, TimeUnit};
use bytes::BytesMut;
use tokio_postgres::types::{to_sql_checked, IsNull, ToSql, Type};

/// A column normalised to one Arrow type per kind, read row by row.
pub(super) enum ColumnValues {
    Text(StringArray),
    Bool(BooleanArray),
    Integer(Int64Array),
    Float(Float64Array),
    Time(TimestampMillisecondArray),
}

impl ColumnValues {
    pub(super) fn new(array: &ArrayRef) -> Result<Self, String> {
        let to = |data_type: DataType| cast(array, &data_type).map_err(|e| e.to_string());
        Ok(match array.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                ColumnValues::Text(to(DataType::Utf8)?.as_string::<i32>().clone())
            }
            DataType::Boolean => ColumnValues::Bool(array.as_boolean().clone()),
            DataType::Float32 | DataType::Float64 => {
                ColumnValues::Float(to(DataType::Float64)?.as_primitive().clone())
            }
            DataType::Timestamp(_, _) => ColumnValues::Time(
                to(DataType::Timestamp(TimeUnit::Millisecond, None))?
                    .as_primitive()
                    .clone(),
            ),
            other if other.is_integer() => {
                ColumnValues::Integer(to(DataType::Int64)?.as_primitive().clone())
            }
            other => return Err(format!("{other} values cannot be written to PostgreSQL")),
        })
    }

    pub(super) fn cell(&self, row: usize) -> Cell<'_> {
        match self {
            ColumnValues::Text(a) => Cell::Text(a.is_valid(row).then(|| a.value(row))),
            ColumnValues::Bool(a) => Cell::Bool(a.is_valid(row).then(|| a.value(row))),
            ColumnValues::Integer(a) => Cell::Integer(a.is_valid(row).then(|| a.value(row))),
            ColumnValues::Float(a) => Cell::Float(a.is_valid(row).then(|| a.value(row))),
            ColumnValues::Time(a) => Cell::Time(a.is_valid(row).then(|| a.value(row))),
        }
    }
}

#[derive(Debug)]
pub(super) enum Cell<'a> {
    Text(Option<&'a str>),
    Bool(Option<bool>),
    Integer(Option<i64>),
    Float(Option<f64>),
    /// Milliseconds since the epoch.
    Time(Option<i64>),
}

fn out_of_range(value: i64, ty: &Type) -> Box<dyn Error + Sync + Send> {
    format!("{value} does not fit a {ty} column").into()
}

impl ToSql for Cell<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match *self {
            Cell::Text(Some(text)) => text.to_sql(ty, out),
            Cell::Bool(Some(value)) => value.to_sql(ty, out),
            Cell::Integer(Some(value)) => match *ty {
                Type::INT8 => value.to_sql(ty, out),
                Type::INT4 => i32::try_from(value)
                    .map_err(|_| out_of_range(value, ty))?
                    .to_sql(ty, out),
                Type::INT2 => i16::try_from(value)
                    .map_err(|_| out_of_range(value, ty))?
                    .to_sql(ty, out),
                Type::FLOAT8 => (value as f64).to_sql(ty, out),
                _ => (value as f32).to_sql(ty, out),
            },
            Cell::Float(Some(value)) => match *ty {
                Type::FLOAT4 => (value as f32).to_sql(ty, out),
                _ => value.to_sql(ty, out),
            },
            Cell::Time(Some(millis)) => {
                let time = if millis >= 0 {
                    UNIX_EPOCH + Duration::from_millis(millis as u64)
                } else {
                    UNIX_EPOCH - Duration::from_millis(millis.unsigned_abs())
                };
                SystemTime::to_sql(&time, ty, out)
            }
            _ => Ok(IsNull::Yes),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [
            Type::TEXT,
            Type::VARCHAR,
            Type::BPCHAR,
            Type::NAME,
            Type::BOOL,
            Type::INT2,
            Type::INT4,
            Type::INT8,
            Type::FLOAT4,
            Type::FLOAT8,
            Type::TIMESTAMP,
            Type::TIMESTAMPTZ,
        ]
        .contains(ty)
    }

    to_sql_checked!();
}
