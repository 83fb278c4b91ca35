//! Result batches → records to produce: one record per row. A column named `_key` becomes the
//! record key (as a string) and is left out of the value; the other columns become a JSON object
//! (nulls omitted), or — for raw output — the single remaining column as a string.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;

use crate::error::{Result, StreamsError};
use crate::io::decode::KEY_COLUMN;
use crate::record::{OutputRecord, ValueFormat};

pub fn encode(batches: &[RecordBatch], format: ValueFormat) -> Result<Vec<OutputRecord>> {
    let mut records = Vec::with_capacity(batches.iter().map(|b| b.num_rows()).sum());
    for batch in batches {
        if batch.num_rows() == 0 {
            continue;
        }
        let keys = keys(batch)?;
        let mut values = batch.clone();
        if let Ok(index) = values.schema().index_of(KEY_COLUMN) {
            values.remove_column(index);
        }
        let values = match format {
            ValueFormat::Json => json_values(&values)?,
            ValueFormat::Raw => raw_values(&values)?,
        };
        records.extend(
            keys.into_iter()
                .zip(values)
                .map(|(key, value)| OutputRecord { key, value }),
        );
    }
    Ok(records)
}

fn keys(batch: &RecordBatch) -> Result<Vec<Option<Vec<u8>>>> {
    let Some(column) = batch.column_by_name(KEY_COLUMN) else {
        return Ok(vec![None; batch.num_rows()]);
    };
    let strings = cast(column, &DataType::Utf8).map_err(|e| StreamsError::Encode {
        column: KEY_COLUMN.into(),
        reason: e.to_string(),
    })?;
    let strings = strings.as_string::<i32>();
    Ok((0..strings.len())
        .map(|i| (!strings.is_null(i)).then(|| strings.value(i).as_bytes().to_vec()))
        .collect())
}

fn json_values(batch: &RecordBatch) -> Result<Vec<Vec<u8>>> {
    let mut buffer = Vec::with_capacity(batch.num_rows() * 64);
    {
        let mut writer = arrow_json::LineDelimitedWriter::new(&mut buffer);
        writer.write(batch)?;
        writer.finish()?;
    }
    // JSON strings escape newlines, so each line is one row.
    Ok(buffer
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(<[u8]>::to_vec)
        .collect())
}

fn raw_values(batch: &RecordBatch) -> Result<Vec<Vec<u8>>> {
    if batch.num_columns() != 1 {
        return Err(StreamsError::Encode {
            column: "*".into(),
            reason: format!(
                "raw output needs exactly one value column (besides {KEY_COLUMN}), the query gives {}",
                batch.num_columns()
            ),
        });
    }
    let name = batch.schema().field(0).name().clone();
    let strings = cast(batch.column(0), &DataType::Utf8).map_err(|e| StreamsError::Encode {
        column: name,
        reason: e.to_string(),
    })?;
    let strings = strings.as_string::<i32>();
    Ok((0..strings.len())
        .map(|i| {
            if strings.is_null(i) {
                Vec::new()
            } else {
                strings.value(i).as_bytes().to_vec()
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};

    fn batch() -> RecordBatch {
        let path: ArrayRef = Arc::new(StringArray::from(vec![Some("/a\nb"), None]));
        let count: ArrayRef = Arc::new(Int64Array::from(vec![3, 4]));
        let key: ArrayRef = Arc::new(Int64Array::from(vec![Some(7), None]));
        RecordBatch::try_from_iter(vec![("path", path), ("count", count), ("_key", key)]).unwrap()
    }

    #[test]
    fn rows_become_json_objects_keyed_by_the_key_column() {
        let records = encode(&[batch()], ValueFormat::Json).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].key.as_deref(), Some(&b"7"[..]));
        assert_eq!(records[1].key, None);
        let first: serde_json::Value = serde_json::from_slice(&records[0].value).unwrap();
        assert_eq!(first, serde_json::json!({"path": "/a\nb", "count": 3}));
        let second: serde_json::Value = serde_json::from_slice(&records[1].value).unwrap();
        assert_eq!(second, serde_json::json!({"count": 4}));
    }

    #[test]
    fn raw_output_takes_one_column() {
        assert!(encode(&[batch()], ValueFormat::Raw).is_err());
        let mut one = batch();
        one.remove_column(0);
        let records = encode(&[one], ValueFormat::Raw).unwrap();
        assert_eq!(records[1].value, b"4");
        assert_eq!(records[0].key.as_deref(), Some(&b"7"[..]));
    }
}
