//! A topic as a DataFusion table for ad-hoc queries (`weir sql`): its schema comes from a sample
//! of its first records; its records are read when the query scans it — only the partitions and
//! offsets the query's filters allow. Filters pushed down (and still applied by DataFusion after
//! the scan, so a bound is only ever a shortcut):
//!
//! - `_partition = n`, `_partition IN (…)`: only those partitions are read;
//! - `_offset` compared with a constant (`=`, `<`, `<=`, `>`, `>=`, BETWEEN): only that range;
//! - `_timestamp >= t` or `> t`: reading starts at the first offset with a timestamp at or after
//!   `t` (ListOffsets by timestamp). An upper bound on time is not pushed down: timestamps need
//!   not grow with offsets, so no offset marks the last record before `t`.
//!
//! A topic read as a table ([`TopicTable::latest_per_key`]) is read whole, without pushed-down
//! filters (the latest record of a key may lie outside any range they would allow), and holds
//! the latest record of each key: a later offset wins within a partition, a later timestamp
//! across partitions; a tombstone deletes the key; records without a key are left out.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{MemTable, Session, TableProvider};
use datafusion::common::{Result as DfResult, ScalarValue};
use datafusion::datasource::TableType;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use rdkafka::consumer::Consumer;
use rdkafka::{Offset, TopicPartitionList};

use crate::adhoc::AdhocOptions;
use crate::error::{Result, StreamsError};
use crate::io::decode::{RecordDecoder, OFFSET_COLUMN, PARTITION_COLUMN, TIMESTAMP_COLUMN};
use crate::io::topic_reader::{self, Limit, Range};
use crate::record::{InputRecord, ValueFormat};

pub struct TopicTable {
    topic: String,
    options: AdhocOptions,
    partitions: Vec<i32>,
    decoder: Arc<RecordDecoder>,
    /// Only the latest record of each key.
    latest: bool,
}

impl fmt::Debug for TopicTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TopicTable({})", self.topic)
    }
}

impl TopicTable {
    /// The table of `topic`, its JSON schema inferred from its first records.
    pub fn open(options: &AdhocOptions, topic: &str) -> Result<Self> {
        let consumer = topic_reader::consumer(&options.client)?;
        let partitions = topic_reader::partitions(&consumer, topic, options.timeout)?;
        let schema = match options.format {
            ValueFormat::Raw => None,
            ValueFormat::Json => {
                let sample = topic_reader::read(
                    &consumer,
                    topic,
                    &partitions,
                    Limit::StopAt(options.schema_sample_records),
                    options.timeout,
                )?;
                if sample.is_empty() {
                    return Err(StreamsError::Schema(format!("topic {topic} is empty")));
                }
                Some(RecordDecoder::infer(&sample)?)
            }
        };
        Ok(TopicTable {
            topic: topic.to_string(),
            options: options.clone(),
            partitions,
            decoder: Arc::new(RecordDecoder::new(options.format, schema)?),
            latest: false,
        })
    }

    /// This table holding only the latest record of each key.
    pub fn latest_per_key(self) -> Self {
        TopicTable {
            latest: true,
            ..self
        }
    }

    /// The partitions and offsets `filters` leave to read.
    fn ranges(&self, filters: &[Expr]) -> Result<Vec<Range>> {
        let mut bounds = Bounds::default();
        for filter in filters {
            bounds.narrow(filter);
        }
        let partitions: Vec<i32> = self
            .partitions
            .iter()
            .copied()
            .filter(|p| bounds.partitions.as_ref().is_none_or(|set| set.contains(p)))
            .collect();
        let mut ranges: Vec<Range> = partitions
            .iter()
            .map(|&partition| Range {
                partition,
                start: bounds.first_offset,
                end: bounds.last_offset.map(|last| last + 1),
            })
            .collect();
        if let Some(time) = bounds.first_time_ms {
            let starts = self.offsets_for_time(&partitions, time)?;
            for range in &mut ranges {
                // No record at or after the time: nothing to read in that partition.
                let start = starts.get(&range.partition).copied().unwrap_or(i64::MAX);
                range.start = Some(range.start.unwrap_or(0).max(start));
            }
        }
        Ok(ranges)
    }

    fn offsets_for_time(
        &self,
        partitions: &[i32],
        time_ms: i64,
    ) -> Result<std::collections::BTreeMap<i32, i64>> {
        let consumer = topic_reader::consumer(&self.options.client)?;
        let mut query = TopicPartitionList::new();
        for &partition in partitions {
            query
                .add_partition_offset(&self.topic, partition, Offset::Offset(time_ms))
                .map_err(StreamsError::kafka("listing offsets by time"))?;
        }
        let found = consumer
            .offsets_for_times(query, self.options.timeout)
            .map_err(StreamsError::kafka("listing offsets by time"))?;
        Ok(found
            .elements()
            .iter()
            .filter_map(|e| Some((e.partition(), e.offset().to_raw()?)))
            .filter(|(_, offset)| *offset >= 0)
            .collect())
    }
}

#[async_trait]
impl TableProvider for TopicTable {
    fn schema(&self) -> SchemaRef {
        self.decoder.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|filter| {
                let mut bounds = Bounds::default();
                if !self.latest && bounds.narrow(filter) {
                    TableProviderFilterPushDown::Inexact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let ranges = self.ranges(filters).map_err(external)?;
        let latest = self.latest;
        let options = self.options.clone();
        let topic = self.topic.clone();
        let decoder = Arc::clone(&self.decoder);
        let batch = tokio::task::spawn_blocking(move || -> Result<_> {
            let consumer = topic_reader::consumer(&options.client)?;
            let records = topic_reader::read_ranges(
                &consumer,
                &topic,
                &ranges,
                Limit::FailBeyond(options.max_records),
                options.timeout,
            )?;
            tracing::debug!(%topic, ?ranges, records = records.len(), "scanned");
            let records = if latest {
                latest_records(&topic, records)
            } else {
                records
            };
            let decoded = decoder.decode(&records)?;
            if !decoded.rejected.is_empty() {
                tracing::warn!(%topic, rejected = decoded.rejected.len(), first = ?decoded.rejected[0], "records left out: they do not decode");
            }
            Ok(decoded.batch)
        })
        .await
        .map_err(|e| DataFusionError::External(Box::new(e)))?
        .map_err(external)?;
        let table = MemTable::try_new(self.schema(), vec![vec![batch]])?;
        table.scan(state, projection, &[], None).await
    }
}

/// The latest record of each key that is not a tombstone, in partition and offset order.
fn latest_records(topic: &str, mut records: Vec<InputRecord>) -> Vec<InputRecord> {
    records.sort_by_key(|r| (r.partition, r.offset));
    let mut latest: HashMap<Vec<u8>, InputRecord> = HashMap::new();
    let mut unkeyed = 0;
    for record in records {
        let Some(key) = record.key.clone() else {
            unkeyed += 1;
            continue;
        };
        let older = latest.get(&key).is_some_and(|held| {
            held.partition != record.partition && held.timestamp_ms > record.timestamp_ms
        });
        if !older {
            latest.insert(key, record);
        }
    }
    if unkeyed > 0 {
        tracing::warn!(%topic, records = unkeyed, "records without a key left out of the table");
    }
    let mut rows: Vec<InputRecord> = latest.into_values().filter(|r| r.value.is_some()).collect();
    rows.sort_by_key(|r| (r.partition, r.offset));
    rows
}

fn external(error: StreamsError) -> DataFusionError {
    DataFusionError::External(Box::new(error))
}

/// What the pushed-down filters allow.
#[derive(Debug, Default)]
struct Bounds {
    partitions: Option<BTreeSet<i32>>,
    first_offset: Option<i64>,
    last_offset: Option<i64>,
    first_time_ms: Option<i64>,
}

impl Bounds {
    /// Narrows the bounds by `filter`; false when the filter is not one that can be pushed down.
    fn narrow(&mut self, filter: &Expr) -> bool {
        match filter {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                match (
                    column_name(left),
                    integer(right),
                    column_name(right),
                    integer(left),
                ) {
                    (Some(column), Some(value), _, _) => self.compare(column, *op, value),
                    (_, _, Some(column), Some(value)) => match op.swap() {
                        Some(op) => self.compare(column, op, value),
                        None => false,
                    },
                    _ => false,
                }
            }
            Expr::Between(between) if !between.negated => {
                let column = column_name(&between.expr);
                match (column, integer(&between.low), integer(&between.high)) {
                    (Some(column), Some(low), Some(high)) => {
                        self.compare(column, Operator::GtEq, low)
                            && self.compare(column, Operator::LtEq, high)
                    }
                    _ => false,
                }
            }
            Expr::InList(list) if !list.negated => {
                let values: Option<Vec<i64>> = list.list.iter().map(integer).collect();
                match (column_name(&list.expr), values) {
                    (Some(PARTITION_COLUMN), Some(values)) => {
                        self.keep_partitions(values.into_iter().map(|v| v as i32).collect());
                        true
                    }
                    _ => false,
                }
            }
            _ => false,
        }
    }

    fn compare(&mut self, column: &str, op: Operator, value: i64) -> bool {
        let raise =
            |bound: &mut Option<i64>, to: i64| *bound = Some(bound.map_or(to, |b| b.max(to)));
        let lower =
            |bound: &mut Option<i64>, to: i64| *bound = Some(bound.map_or(to, |b| b.min(to)));
        match (column, op) {
            (PARTITION_COLUMN, Operator::Eq) => self.keep_partitions([value as i32].into()),
            (OFFSET_COLUMN, Operator::Eq) => {
                raise(&mut self.first_offset, value);
                lower(&mut self.last_offset, value);
            }
            (OFFSET_COLUMN, Operator::Gt) => raise(&mut self.first_offset, value.saturating_add(1)),
            (OFFSET_COLUMN, Operator::GtEq) => raise(&mut self.first_offset, value),
            (OFFSET_COLUMN, Operator::Lt) => lower(&mut self.last_offset, value.saturating_sub(1)),
            (OFFSET_COLUMN, Operator::LtEq) => lower(&mut self.last_offset, value),
            (TIMESTAMP_COLUMN, Operator::Gt) => {
                raise(&mut self.first_time_ms, value.saturating_add(1))
            }
            (TIMESTAMP_COLUMN, Operator::GtEq) => raise(&mut self.first_time_ms, value),
            _ => return false,
        }
        true
    }

    fn keep_partitions(&mut self, partitions: BTreeSet<i32>) {
        self.partitions = Some(match self.partitions.take() {
            Some(kept) => kept.intersection(&partitions).copied().collect(),
            None => partitions,
        });
    }
}

fn column_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Column(column) => Some(column.name.as_str()),
        _ => None,
    }
}

/// A constant integer, or a timestamp literal in milliseconds.
fn integer(expr: &Expr) -> Option<i64> {
    let Expr::Literal(value, _) = expr else {
        return None;
    };
    match value {
        ScalarValue::Int8(Some(v)) => Some((*v).into()),
        ScalarValue::Int16(Some(v)) => Some((*v).into()),
        ScalarValue::Int32(Some(v)) => Some((*v).into()),
        ScalarValue::Int64(Some(v)) => Some(*v),
        ScalarValue::UInt8(Some(v)) => Some((*v).into()),
        ScalarValue::UInt16(Some(v)) => Some((*v).into()),
        ScalarValue::UInt32(Some(v)) => Some((*v).into()),
        ScalarValue::TimestampSecond(Some(v), _) => v.checked_mul(1000),
        ScalarValue::TimestampMillisecond(Some(v), _) => Some(*v),
        ScalarValue::TimestampMicrosecond(Some(v), _) => Some(v.div_euclid(1000)),
        ScalarValue::TimestampNanosecond(Some(v), _) => Some(v.div_euclid(1_000_000)),
        _ => None,
    }
}
