//! Consumed records → one Arrow `RecordBatch`: the value's columns (JSON fields by a declared or
//! inferred schema, or the raw value as `value`) followed by the metadata columns `_key`,
//! `_partition`, `_offset`, `_timestamp` and `_headers`.
//!
//! A record that cannot be decoded (not JSON, not an object, a field of the wrong type, a null
//! value) is never silently lost and never stops the job: it is returned as rejected, with why.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_json::reader::{infer_json_schema_from_iterator, ReaderBuilder};
use datafusion::arrow::array::{
    new_null_array, ArrayRef, Int32Array, Int64Array, StringArray, TimestampMillisecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;

use crate::error::{Result, StreamsError};
use crate::record::{InputRecord, ValueFormat};

/// The metadata columns every input table has, after the value's columns.
pub const KEY_COLUMN: &str = "_key";
pub const PARTITION_COLUMN: &str = "_partition";
pub const OFFSET_COLUMN: &str = "_offset";
pub const TIMESTAMP_COLUMN: &str = "_timestamp";
/// The record's headers as a JSON object text, e.g. `{"trace": "abc"}` (null without headers).
pub const HEADERS_COLUMN: &str = "_headers";
/// The single column of a raw value.
pub const RAW_VALUE_COLUMN: &str = "value";

/// A record left out of a batch, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// Its position among the records given to `decode`.
    pub index: usize,
    pub partition: i32,
    pub offset: i64,
    pub reason: String,
}

/// A decoded batch and the records that could not be decoded.
#[derive(Debug)]
pub struct Decoded {
    pub batch: RecordBatch,
    pub rejected: Vec<Rejected>,
}

pub struct RecordDecoder {
    format: ValueFormat,
    value_schema: SchemaRef,
    schema: SchemaRef,
    /// The value columns parsed (all, unless [`RecordDecoder::read_only`] narrowed them); the
    /// others are nulls.
    parsed_schema: SchemaRef,
    /// Whether `_key` and `_headers` are filled (or nulls).
    key_read: bool,
    headers_read: bool,
}

impl RecordDecoder {
    /// A decoder for values of `format`; JSON needs the value's schema (declared, or `infer`).
    pub fn new(format: ValueFormat, value_schema: Option<Schema>) -> Result<Self> {
        let value_schema = match (format, value_schema) {
            (ValueFormat::Raw, _) => {
                Schema::new(vec![Field::new(RAW_VALUE_COLUMN, DataType::Utf8, true)])
            }
            (ValueFormat::Json, Some(schema)) => schema,
            (ValueFormat::Json, None) => {
                return Err(StreamsError::Config(
                    "JSON values need a schema (declared or inferred)".into(),
                ))
            }
        };
        let value_fields: Vec<Field> = value_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        let fields: Vec<Field> = value_fields
            .iter()
            .cloned()
            .chain(metadata_fields())
            .collect();
        let value_schema = Arc::new(Schema::new(value_fields));
        Ok(RecordDecoder {
            format,
            schema: Arc::new(Schema::new(fields)),
            parsed_schema: Arc::clone(&value_schema),
            value_schema,
            key_read: true,
            headers_read: true,
        })
    }

    /// Parses only the JSON fields named in `columns` (the columns a query reads), and fills
    /// `_key` and `_headers` only when named: the other columns of the batch are nulls, and a
    /// value is rejected only for a field that is read (as Flink's JSON format with projection
    /// push-down). The batch's schema stays the whole table's.
    pub fn read_only(&mut self, columns: &BTreeSet<String>) {
        if self.format == ValueFormat::Json {
            let parsed: Vec<Field> = self
                .value_schema
                .fields()
                .iter()
                .filter(|f| columns.contains(f.name()))
                .map(|f| f.as_ref().clone())
                .collect();
            // arrow_json needs a field to make rows of: keep the first when none is read.
            let parsed = match parsed.is_empty() {
                true => vec![self.value_schema.field(0).clone()],
                false => parsed,
            };
            self.parsed_schema = Arc::new(Schema::new(parsed));
        }
        self.key_read = columns.contains(KEY_COLUMN);
        self.headers_read = columns.contains(HEADERS_COLUMN);
    }

    /// The schema of the JSON values in `sample` (numbers as Int64 or Float64 as they appear);
    /// values that are not JSON objects are skipped.
    pub fn infer(sample: &[InputRecord]) -> Result<Schema> {
        let objects = sample.iter().filter_map(|r| {
            let value: serde_json::Value = serde_json::from_slice(r.value.as_deref()?).ok()?;
            value.is_object().then_some(Ok(value))
        });
        let schema = infer_json_schema_from_iterator(objects)?;
        if schema.fields().is_empty() {
            return Err(StreamsError::Schema(format!(
                "no JSON object among {} sample records",
                sample.len()
            )));
        }
        Ok(schema)
    }

    /// The value columns alone (the table schema without the metadata columns).
    pub fn value_schema(&self) -> SchemaRef {
        Arc::clone(&self.value_schema)
    }

    /// The table schema: value columns, then the metadata columns.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    pub fn decode(&self, records: &[InputRecord]) -> Result<Decoded> {
        if self.format == ValueFormat::Json {
            if let Some(decoded) = self.decode_json_in_one_pass(records) {
                return Ok(decoded);
            }
        }
        let mut rejected = Vec::new();
        let mut accepted: Vec<&InputRecord> = Vec::with_capacity(records.len());
        let mut accepted_indexes = Vec::with_capacity(records.len());
        for (index, record) in records.iter().enumerate() {
            match self.check(record) {
                Ok(()) => {
                    accepted.push(record);
                    accepted_indexes.push(index);
                }
                Err(reason) => rejected.push(rejection(index, record, reason)),
            }
        }
        let values = match self.decode_values(&accepted) {
            Ok(values) => values,
            // Some value does not fit the schema: find it (and any other) one by one.
            Err(_) => {
                let mut fitting = Vec::with_capacity(accepted.len());
                for (record, index) in accepted.into_iter().zip(accepted_indexes) {
                    match self.decode_values(&[record]) {
                        Ok(_) => fitting.push(record),
                        Err(error) => rejected.push(rejection(index, record, error.to_string())),
                    }
                }
                accepted = fitting;
                self.decode_values(&accepted)?
            }
        };
        self.with_metadata(values, &accepted, rejected)
    }

    fn with_metadata(
        &self,
        values: RecordBatch,
        accepted: &[&InputRecord],
        rejected: Vec<Rejected>,
    ) -> Result<Decoded> {
        let rows = accepted.len();
        let mut columns = Vec::with_capacity(self.schema.fields().len());
        for field in self.value_schema.fields() {
            columns.push(match values.column_by_name(field.name()) {
                Some(column) => Arc::clone(column),
                None => new_null_array(field.data_type(), rows),
            });
        }
        let (key, partition, offset, timestamp, headers) = metadata_columns(accepted);
        let null_text = || new_null_array(&DataType::Utf8, rows);
        columns.push(if self.key_read { key() } else { null_text() });
        columns.extend([partition, offset, timestamp]);
        columns.push(if self.headers_read {
            headers()
        } else {
            null_text()
        });
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        Ok(Decoded { batch, rejected })
    }

    /// JSON values parsed once, by arrow_json alone: each accepted value must add exactly one
    /// whole row (so two objects in one value, or one object split over two, cannot shift
    /// rows between records). `None` at the first value that does not — invalid JSON, a field
    /// of the wrong type — and `decode` then takes the slow path that finds every such value
    /// and says why.
    fn decode_json_in_one_pass(&self, records: &[InputRecord]) -> Option<Decoded> {
        let mut decoder = ReaderBuilder::new(Arc::clone(&self.parsed_schema))
            // One more than the records, so the last one's trailing whitespace is read too.
            .with_batch_size(records.len() + 1)
            .with_coerce_primitive(true)
            .build_decoder()
            .ok()?;
        let mut accepted: Vec<&InputRecord> = Vec::with_capacity(records.len());
        let mut rejected = Vec::new();
        for (index, record) in records.iter().enumerate() {
            let value = match self.check_shape(record) {
                Ok(value) => value,
                Err(reason) => {
                    rejected.push(rejection(index, record, reason));
                    continue;
                }
            };
            let read_whole = matches!(decoder.decode(value), Ok(read) if read == value.len());
            if !read_whole || decoder.has_partial_record() || decoder.len() != accepted.len() + 1 {
                return None;
            }
            accepted.push(record);
        }
        let values = match decoder.flush().ok()? {
            Some(values) => values,
            None => RecordBatch::new_empty(Arc::clone(&self.parsed_schema)),
        };
        if values.num_rows() != accepted.len() {
            return None;
        }
        self.with_metadata(values, &accepted, rejected).ok()
    }

    /// What can be told of a record before decoding it with the others.
    fn check(&self, record: &InputRecord) -> Result<(), String> {
        let value = self.check_shape(record)?;
        match self.format {
            ValueFormat::Raw => Ok(()),
            ValueFormat::Json => serde_json::from_slice::<serde::de::IgnoredAny>(value)
                .map(|_| ())
                .map_err(|e| format!("value is not JSON: {e}")),
        }
    }

    /// The checks that need no parse: a value, UTF-8 (raw), starting as a JSON object (JSON).
    fn check_shape<'a>(&self, record: &'a InputRecord) -> Result<&'a [u8], String> {
        let Some(value) = record.value.as_deref() else {
            return Err("null value (a tombstone)".into());
        };
        match self.format {
            ValueFormat::Raw => std::str::from_utf8(value)
                .map(|_| value)
                .map_err(|e| format!("value is not UTF-8: {e}")),
            ValueFormat::Json => {
                let first = value.iter().find(|b| !b.is_ascii_whitespace());
                match first {
                    Some(b'{') => Ok(value),
                    _ => Err("value is not a JSON object".into()),
                }
            }
        }
    }

    fn decode_values(&self, records: &[&InputRecord]) -> Result<RecordBatch> {
        match self.format {
            ValueFormat::Raw => {
                let values: StringArray = records
                    .iter()
                    .map(|r| r.value.as_deref().map(|v| String::from_utf8_lossy(v)))
                    .collect();
                let column: ArrayRef = Arc::new(values);
                Ok(RecordBatch::try_new(
                    Arc::clone(&self.value_schema),
                    vec![column],
                )?)
            }
            ValueFormat::Json => {
                let mut decoder = ReaderBuilder::new(Arc::clone(&self.parsed_schema))
                    .with_batch_size(records.len().max(1))
                    .with_coerce_primitive(true)
                    .build_decoder()?;
                for record in records {
                    decoder.decode(record.value.as_deref().unwrap_or_default())?;
                    decoder.decode(b"\n")?;
                }
                Ok(decoder
                    .flush()?
                    .unwrap_or_else(|| RecordBatch::new_empty(Arc::clone(&self.parsed_schema))))
            }
        }
    }
}

/// A JSON value schema declared as `name:type,…` with types `string`, `int` (64-bit),
/// `float` (64-bit), `bool` and `timestamp` (milliseconds, from epoch-millisecond numbers or
/// ISO-8601 strings), e.g. `path:string,status:int,bytes:int`.
pub fn parse_schema(declared: &str) -> Result<Schema> {
    let mut fields = Vec::new();
    for column in declared.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let (name, kind) = column.split_once(':').ok_or_else(|| {
            StreamsError::Config(format!("schema column {column:?} is not name:type"))
        })?;
        let data_type = match kind.trim() {
            "string" => DataType::Utf8,
            "int" => DataType::Int64,
            "float" => DataType::Float64,
            "bool" => DataType::Boolean,
            "timestamp" => DataType::Timestamp(TimeUnit::Millisecond, None),
            other => {
                return Err(StreamsError::Config(format!(
                    "schema column {name}: unknown type {other:?} (string, int, float, bool, \
                     timestamp)"
                )))
            }
        };
        fields.push(Field::new(name.trim(), data_type, true));
    }
    if fields.is_empty() {
        return Err(StreamsError::Config(
            "the declared schema has no columns".into(),
        ));
    }
    Ok(Schema::new(fields))
}

fn rejection(index: usize, record: &InputRecord, reason: String) -> Rejected {
    Rejected {
        index,
        partition: record.partition,
        offset: record.offset,
        reason,
    }
}

fn metadata_fields() -> [Field; 5] {
    [
        Field::new(KEY_COLUMN, DataType::Utf8, true),
        Field::new(PARTITION_COLUMN, DataType::Int32, false),
        Field::new(OFFSET_COLUMN, DataType::Int64, false),
        Field::new(
            TIMESTAMP_COLUMN,
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
        Field::new(HEADERS_COLUMN, DataType::Utf8, true),
    ]
}

/// The metadata columns of `records`: `_key` and `_headers` as functions, made only when read.
fn metadata_columns<'a>(
    records: &'a [&InputRecord],
) -> (
    impl FnOnce() -> ArrayRef + 'a,
    ArrayRef,
    ArrayRef,
    ArrayRef,
    impl FnOnce() -> ArrayRef + 'a,
) {
    let keys = move || -> ArrayRef {
        Arc::new(
            records
                .iter()
                .map(|r| r.key.as_deref().map(|k| String::from_utf8_lossy(k)))
                .collect::<StringArray>(),
        )
    };
    let partitions: Int32Array = records.iter().map(|r| r.partition).collect();
    let offsets: Int64Array = records.iter().map(|r| r.offset).collect();
    let timestamps =
        TimestampMillisecondArray::from(records.iter().map(|r| r.timestamp_ms).collect::<Vec<_>>());
    let headers = move || -> ArrayRef {
        Arc::new(
            records
                .iter()
                .map(|r| r.headers.as_deref())
                .collect::<StringArray>(),
        )
    };
    (
        keys,
        Arc::new(partitions),
        Arc::new(offsets),
        Arc::new(timestamps),
        headers,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::Int64Type;

    fn record(offset: i64, value: &str) -> InputRecord {
        InputRecord {
            key: Some(format!("k{offset}").into_bytes()),
            value: Some(value.as_bytes().to_vec()),
            partition: 2,
            offset,
            timestamp_ms: 1_700_000_000_000 + offset,
            headers: None,
        }
    }

    #[test]
    fn declared_schemas_parse_or_say_what_is_wrong() {
        let schema =
            parse_schema("path:string, status:int,ratio:float,ok:bool,at:timestamp").unwrap();
        let types: Vec<&DataType> = schema.fields().iter().map(|f| f.data_type()).collect();
        assert_eq!(
            types,
            [
                &DataType::Utf8,
                &DataType::Int64,
                &DataType::Float64,
                &DataType::Boolean,
                &DataType::Timestamp(TimeUnit::Millisecond, None)
            ]
        );
        assert!(parse_schema("path")
            .unwrap_err()
            .to_string()
            .contains("name:type"));
        assert!(parse_schema("a:decimal")
            .unwrap_err()
            .to_string()
            .contains("decimal"));
        assert!(parse_schema("").is_err());
    }

    #[test]
    fn json_values_become_columns_by_an_inferred_schema() {
        let records = vec![
            record(0, r#"{"path": "/a", "status": 200, "ms": 1.5}"#),
            record(1, r#"{"path": "/b", "status": 404}"#),
        ];
        let schema = RecordDecoder::infer(&records).unwrap();
        assert_eq!(
            schema.field_with_name("status").unwrap().data_type(),
            &DataType::Int64
        );
        assert_eq!(
            schema.field_with_name("ms").unwrap().data_type(),
            &DataType::Float64
        );
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        let decoded = decoder.decode(&records).unwrap();
        assert!(decoded.rejected.is_empty());
        let batch = decoded.batch;
        assert_eq!(batch.num_rows(), 2);
        let status = batch
            .column_by_name("status")
            .unwrap()
            .as_primitive::<Int64Type>();
        assert_eq!(status.values(), &[200, 404]);
        let ms = batch.column_by_name("ms").unwrap();
        assert!(ms.is_null(1), "a missing field is null");
        let key = batch.column_by_name(KEY_COLUMN).unwrap().as_string::<i32>();
        assert_eq!(key.value(1), "k1");
        let offset = batch
            .column_by_name(OFFSET_COLUMN)
            .unwrap()
            .as_primitive::<Int64Type>();
        assert_eq!(offset.values(), &[0, 1]);
    }

    #[test]
    fn undecodable_records_are_rejected_with_a_reason_and_the_rest_decoded() {
        let schema = Schema::new(vec![Field::new("status", DataType::Int64, true)]);
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        let mut tombstone = record(3, "");
        tombstone.value = None;
        let records = vec![
            record(0, r#"{"status": 200}"#),
            record(1, "not json"),
            record(2, r#"{"status": "teapot"}"#),
            tombstone,
            record(4, r#"[1, 2]"#),
            record(5, r#"{"status": 500"#),
            record(6, r#"{"status": 201, "extra": true}"#),
        ];
        let decoded = decoder.decode(&records).unwrap();
        let offsets = decoded
            .batch
            .column_by_name(OFFSET_COLUMN)
            .unwrap()
            .as_primitive::<Int64Type>()
            .values()
            .to_vec();
        assert_eq!(offsets, [0, 6]);
        let rejected: Vec<i64> = decoded.rejected.iter().map(|r| r.offset).collect();
        assert_eq!(rejected.len(), 5, "{:?}", decoded.rejected);
        for offset in [1, 2, 3, 4, 5] {
            assert!(rejected.contains(&offset), "{offset} rejected");
        }
        assert!(decoded.rejected.iter().all(|r| !r.reason.is_empty()));
        // Offsets equal positions here: each rejection names its record's position.
        assert!(decoded.rejected.iter().all(|r| r.index as i64 == r.offset));
    }

    #[test]
    fn values_that_hold_two_objects_or_half_of_one_are_rejected_not_shifted() {
        let schema = Schema::new(vec![Field::new("status", DataType::Int64, true)]);
        let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        let records = vec![
            record(0, r#"{"status": 1}"#),
            // Read as one stream these two would be `{"status": 2}` and `{"x": {"status": 3}}`:
            // as many rows as records, each from the wrong record.
            record(1, r#"{"status": 2}{"x":"#),
            record(2, r#"{"status": 3}}"#),
            record(3, r#"{"status": 4} "#),
            record(4, r#"{"status": 5}{"status": 6}"#),
            record(5, r#" {"status": 7}"#),
        ];
        let decoded = decoder.decode(&records).unwrap();
        let column = |name: &str| -> Vec<i64> {
            let column = decoded.batch.column_by_name(name).unwrap();
            column.as_primitive::<Int64Type>().values().to_vec()
        };
        assert_eq!(column(OFFSET_COLUMN), [0, 3, 5]);
        assert_eq!(column("status"), [1, 4, 7]);
        let rejected: Vec<i64> = decoded.rejected.iter().map(|r| r.offset).collect();
        assert_eq!(rejected, [1, 2, 4], "{:?}", decoded.rejected);
    }

    #[test]
    fn raw_values_are_one_string_column() {
        let decoder = RecordDecoder::new(ValueFormat::Raw, None).unwrap();
        let decoded = decoder
            .decode(&[record(0, "GET / 200"), record(1, "GET /x 404")])
            .unwrap();
        let values = decoded
            .batch
            .column_by_name(RAW_VALUE_COLUMN)
            .unwrap()
            .as_string::<i32>();
        assert_eq!(values.value(1), "GET /x 404");
    }

    #[test]
    fn a_decoder_narrowed_to_the_columns_read_parses_those_alone() {
        let schema = parse_schema("a:int,b:string").unwrap();
        let records = vec![
            record(0, r#"{"a": 1, "b": "x"}"#),
            record(1, r#"{"a": 2, "b": {"not": "a string"}}"#),
            record(2, r#"{"a": "three"}"#),
        ];
        let whole = RecordDecoder::new(ValueFormat::Json, Some(schema.clone())).unwrap();
        let decoded = whole.decode(&records).unwrap();
        let rejected: Vec<i64> = decoded.rejected.iter().map(|r| r.offset).collect();
        assert_eq!(
            rejected,
            [1, 2],
            "every field is checked when every field is read"
        );

        let mut narrow = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
        narrow.read_only(&["a".to_string(), OFFSET_COLUMN.to_string()].into());
        let decoded = narrow.decode(&records).unwrap();
        let rejected: Vec<i64> = decoded.rejected.iter().map(|r| r.offset).collect();
        assert_eq!(
            rejected,
            [2],
            "a field that is not read cannot reject a record"
        );
        let batch = decoded.batch;
        assert_eq!(
            batch.schema(),
            whole.schema(),
            "the table's schema is unchanged"
        );
        let a = batch.column(0).as_primitive::<Int64Type>();
        assert_eq!(a.values().to_vec(), [1, 2]);
        for unread in ["b", KEY_COLUMN, HEADERS_COLUMN] {
            let column = batch.column_by_name(unread).unwrap();
            assert_eq!(column.null_count(), 2, "{unread} is not read: nulls");
        }
        let offsets = batch.column_by_name(OFFSET_COLUMN).unwrap();
        assert_eq!(
            offsets.as_primitive::<Int64Type>().values().to_vec(),
            [0, 1]
        );
    }
}
