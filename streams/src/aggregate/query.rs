//! A windowed query taken apart: DataFusion plans the user's SQL once; the plan's `Aggregate`
//! (grouped by `tumble(…)`, `hop(…)` or `session(…)` and the other keys) is cut out and done incrementally by
//! the job, and the rest runs on DataFusion:
//!
//! - the **pre-aggregate plan** is everything below the aggregate (scan, WHERE, scalar
//!   functions) projected to `[event time, _partition, _offset, keys…, aggregate arguments…]`;
//! - the **post-aggregate plan** is everything above it (HAVING, the SELECT list, ORDER BY),
//!   reading the emitted windows from a table with exactly the aggregate's output schema.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, TimestampMillisecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{MemTable, TableProvider};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchemaRef};
use datafusion::logical_expr::{
    cast as cast_expr, Aggregate, Expr, LogicalPlan, LogicalPlanBuilder,
};

use crate::aggregate::accumulator::AggregateKind;
use crate::aggregate::datum::{to_array, Datum};
use crate::aggregate::updates;
use crate::error::{Result, StreamsError};
use crate::io::decode::{OFFSET_COLUMN, PARTITION_COLUMN, TIMESTAMP_COLUMN};
use crate::plan::window_functions::{scalar_interval_ms, HOP, SESSION, TUMBLE, WINDOW_TIME_TYPE};
use crate::plan::window_spec::{WindowSpec, Windows};
use crate::plan::{renamed_scan, Session};

/// The table the post-aggregate plan reads the emitted windows from.
const WINDOWS_TABLE: &str = "__weir_windows";

/// Columns of the pre-aggregate plan's output, in order; keys and arguments follow.
pub const TIME_COLUMN: usize = 0;
pub const PARTITION_COLUMN_INDEX: usize = 1;
pub const OFFSET_COLUMN_INDEX: usize = 2;
pub const FIRST_KEY_COLUMN: usize = 3;

pub struct WindowedQuery {
    pub window: Windows,
    /// The group keys besides the window.
    pub keys: usize,
    pub aggregates: Vec<AggregateKind>,
    pre_aggregate: LogicalPlan,
    post_aggregate: LogicalPlan,
    windows: Arc<MemTable>,
    /// The aggregate's output: its group expressions (one of them the window) then aggregates.
    aggregate_schema: SchemaRef,
    /// Where the window is among the group expressions (none for an updating aggregate).
    window_position: Option<usize>,
    /// The result rows carry their group's number ([`updates::GROUP_NUMBER_COLUMN`]): always
    /// for an updating aggregate, and for windows whose query above the aggregate keeps one
    /// row per group (so each result row's window end is known: its record time).
    pub numbered: bool,
}

/// One emitted group: its window, key values and aggregate values.
pub struct WindowRow {
    pub window_start_ms: i64,
    /// Where the window ends (exclusive; a session: its last row plus the gap); `i64::MAX` for
    /// an updating aggregate's group.
    pub window_end_ms: i64,
    pub keys: Vec<Datum>,
    pub values: Vec<Datum>,
}

impl WindowedQuery {
    /// The columns of the query's result (what the part above the aggregate makes of it).
    pub fn output_schema(&self) -> SchemaRef {
        let schema = self.post_aggregate.schema().as_arrow().clone();
        let fields = schema
            .fields()
            .iter()
            .filter(|f| f.name() != updates::GROUP_NUMBER_COLUMN)
            .cloned()
            .collect::<Vec<_>>();
        Arc::new(datafusion::arrow::datatypes::Schema::new(fields))
    }

    /// Takes `plan` apart; `None` when it has no aggregate (a stateless query).
    pub fn from_plan(session: &Session, plan: &LogicalPlan) -> Result<Option<Self>> {
        let mut aggregates = Vec::new();
        plan.apply(|node| {
            if let LogicalPlan::Aggregate(aggregate) = node {
                aggregates.push(aggregate.clone());
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        let aggregate = match aggregates.len() {
            0 => return Ok(None),
            1 => aggregates.remove(0),
            _ => {
                return Err(unsupported(
                    "more than one GROUP BY (or DISTINCT) in a query",
                ))
            }
        };
        let (window_position, window, time) = match find_window(&aggregate)? {
            Some((position, window, time)) => (Some(position), window, time),
            // No window: an updating aggregate, whose rows' times do not matter.
            None => (None, Windows::Updating, time_column(&aggregate)?),
        };
        let keys: Vec<Expr> = aggregate
            .group_expr
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != window_position)
            .map(|(_, e)| e.clone())
            .collect();
        let (kinds, arguments) = aggregate_arguments(&aggregate)?;
        let pre_aggregate = pre_aggregate_plan(&aggregate, time, &keys, arguments)?;
        let aggregate_schema = Arc::new(aggregate.schema.as_arrow().clone());
        let (numbered, (windows, post_aggregate)) = match window {
            Windows::Updating => (true, updates::post_aggregate_plan(plan, &aggregate.schema)?),
            _ => match updates::post_aggregate_plan(plan, &aggregate.schema) {
                Ok(numbered) => (true, numbered),
                Err(_) => (false, post_aggregate_plan(plan, &aggregate.schema)?),
            },
        };
        session.check(&pre_aggregate)?;
        Ok(Some(WindowedQuery {
            window,
            keys: keys.len(),
            aggregates: kinds,
            pre_aggregate,
            post_aggregate,
            windows,
            aggregate_schema,
            window_position,
            numbered,
        }))
    }

    /// The rows of one checkpoint's input, filtered and projected for aggregation.
    pub async fn pre_aggregate(&self, session: &Session) -> Result<Vec<RecordBatch>> {
        session.run(&self.pre_aggregate).await
    }

    /// The query's result rows for emitted windows (an updating aggregate's with their group
    /// numbers, which [`updates::updates`] reads).
    pub async fn post_aggregate(
        &self,
        session: &Session,
        rows: &[WindowRow],
    ) -> Result<Vec<RecordBatch>> {
        let output = self.run_post_aggregate(session, rows).await?;
        if self.window == Windows::Updating {
            return Ok(output);
        }
        Ok(output
            .into_iter()
            .map(|batch| without_numbers(batch).0)
            .collect())
    }

    /// The query's result rows for emitted windows, each batch with its rows' event times: the
    /// last millisecond of their window (as Flink stamps window results), or `None` when the
    /// query above the aggregate does not keep track of its groups.
    pub async fn timed_output(
        &self,
        session: &Session,
        rows: &[WindowRow],
    ) -> Result<Vec<(RecordBatch, Option<Vec<i64>>)>> {
        let output = self.run_post_aggregate(session, rows).await?;
        let mut timed = Vec::with_capacity(output.len());
        for batch in output {
            let (batch, numbers) = without_numbers(batch);
            let times = match numbers {
                Some(numbers) => Some(
                    numbers
                        .iter()
                        .map(|n| {
                            usize::try_from(n.unwrap_or(-1))
                                .ok()
                                .and_then(|n| rows.get(n))
                                .map(|row| row.window_end_ms.saturating_sub(1))
                                .ok_or_else(|| {
                                    StreamsError::Internal(format!(
                                        "a window's result row names group {n:?} of {}",
                                        rows.len()
                                    ))
                                })
                        })
                        .collect::<Result<Vec<i64>>>()?,
                ),
                None => None,
            };
            timed.push((batch, times));
        }
        Ok(timed)
    }

    async fn run_post_aggregate(
        &self,
        session: &Session,
        rows: &[WindowRow],
    ) -> Result<Vec<RecordBatch>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let batch = self.aggregate_batch(rows)?;
        *self.windows.batches[0].write().await = vec![batch];
        let output = session.run(&self.post_aggregate).await;
        self.windows.batches[0].write().await.clear();
        output
    }

    /// The emitted groups as the aggregate's output would hold them.
    fn aggregate_batch(&self, rows: &[WindowRow]) -> Result<RecordBatch> {
        let fields = self.aggregate_schema.fields();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(fields.len());
        let mut key = 0;
        // The group expressions: the keys, and the window when there is one.
        let groups = self.keys + usize::from(self.window_position.is_some());
        for (index, field) in fields.iter().enumerate() {
            let column = if Some(index) == self.window_position {
                let starts: ArrayRef = Arc::new(TimestampMillisecondArray::from_iter_values(
                    rows.iter().map(|r| r.window_start_ms),
                ));
                cast(&starts, field.data_type())?
            } else if index < groups {
                let column = to_array(rows.iter().map(|r| &r.keys[key]), field.data_type())?;
                key += 1;
                column
            } else {
                let values = rows.iter().map(|r| &r.values[index - groups]);
                to_array(values, field.data_type())?
            };
            columns.push(column);
        }
        if self.numbered {
            columns.push(updates::group_numbers(rows.len()));
        }
        let schema = self.windows.schema();
        Ok(RecordBatch::try_new(schema, columns)?)
    }
}

/// `batch` without its group numbers, and the numbers (when it has them).
fn without_numbers(mut batch: RecordBatch) -> (RecordBatch, Option<Vec<Option<i64>>>) {
    let Ok(index) = batch.schema().index_of(updates::GROUP_NUMBER_COLUMN) else {
        return (batch, None);
    };
    let column = batch.remove_column(index);
    let numbers = cast(&column, &DataType::Int64)
        .ok()
        .map(|numbers| numbers.as_primitive::<Int64Type>().iter().collect());
    (batch, numbers)
}

fn unsupported(what: &str) -> StreamsError {
    StreamsError::Query(format!("a job's query cannot have {what}"))
}

/// The group expression that is `tumble(…)`, `hop(…)` or `session(…)`: its position, the
/// windows, the event time expression (None: no window).
fn find_window(aggregate: &Aggregate) -> Result<Option<(usize, Windows, Expr)>> {
    let mut found = None;
    for (position, expr) in aggregate.group_expr.iter().enumerate() {
        let Expr::ScalarFunction(function) = unalias(expr) else {
            continue;
        };
        let name = function.func.name();
        if ![TUMBLE, HOP, SESSION].contains(&name) {
            continue;
        }
        if found.is_some() {
            return Err(unsupported("more than one window in its GROUP BY"));
        }
        let interval = |i: usize, what: &str| -> Result<i64> {
            match function.args.get(i).map(unalias) {
                Some(Expr::Literal(value, _)) => Ok(scalar_interval_ms(value, what)?),
                _ => Err(StreamsError::Query(format!(
                    "{name}(): {what} must be a constant INTERVAL"
                ))),
            }
        };
        let window = match name {
            TUMBLE => Windows::Fixed(WindowSpec::tumble(interval(1, "the window size")?)?),
            HOP => Windows::Fixed(WindowSpec::hop(
                interval(1, "the slide")?,
                interval(2, "the window size")?,
            )?),
            _ => Windows::session(interval(1, "the gap")?)?,
        };
        found = Some((position, window, function.args[0].clone()));
    }
    Ok(found)
}

/// The record time of an updating aggregate's input (carried along, not used).
fn time_column(aggregate: &Aggregate) -> Result<Expr> {
    let (qualifier, field) = aggregate
        .input
        .schema()
        .qualified_field_with_unqualified_name(TIMESTAMP_COLUMN)
        .map_err(|_| unsupported("an aggregate over anything but the input topic itself"))?;
    Ok(Expr::Column(Column::new(qualifier.cloned(), field.name())))
}

fn unalias(expr: &Expr) -> &Expr {
    match expr {
        Expr::Alias(alias) => unalias(&alias.expr),
        other => other,
    }
}

/// Each aggregate's kind and argument.
fn aggregate_arguments(aggregate: &Aggregate) -> Result<(Vec<AggregateKind>, Vec<Expr>)> {
    let mut kinds = Vec::new();
    let mut arguments = Vec::new();
    for expr in &aggregate.aggr_expr {
        let Expr::AggregateFunction(function) = unalias(expr) else {
            return Err(unsupported(&format!("the aggregate {expr}")));
        };
        let params = &function.params;
        let kind = AggregateKind::from_name(function.func.name(), params.distinct)
            .filter(|_| params.filter.is_none() && params.order_by.is_empty())
            .filter(|_| params.args.len() == 1)
            .ok_or_else(|| {
                unsupported(&format!(
                    "the aggregate {expr} (windows compute count, count(DISTINCT), sum, min, \
                     max and avg of one argument)"
                ))
            })?;
        kinds.push(kind);
        arguments.push(params.args[0].clone());
    }
    Ok((kinds, arguments))
}

fn pre_aggregate_plan(
    aggregate: &Aggregate,
    time: Expr,
    keys: &[Expr],
    arguments: Vec<Expr>,
) -> Result<LogicalPlan> {
    let input_schema = aggregate.input.schema();
    let metadata = |name: &str| -> Result<Expr> {
        let (qualifier, field) = input_schema
            .qualified_field_with_unqualified_name(name)
            .map_err(|_| {
                unsupported("a windowed aggregate over anything but the input topic itself")
            })?;
        Ok(Expr::Column(Column::new(qualifier.cloned(), field.name())))
    };
    let mut columns = vec![
        cast_expr(time, WINDOW_TIME_TYPE).alias("__time"),
        metadata(PARTITION_COLUMN)?.alias("__partition"),
        metadata(OFFSET_COLUMN)?.alias("__offset"),
    ];
    columns.extend(
        keys.iter()
            .enumerate()
            .map(|(i, k)| k.clone().alias(format!("__key{i}"))),
    );
    columns.extend(
        arguments
            .into_iter()
            .enumerate()
            .map(|(i, a)| a.alias(format!("__argument{i}"))),
    );
    Ok(LogicalPlanBuilder::from(aggregate.input.as_ref().clone())
        .project(columns)?
        .build()?)
}

/// `plan` with its aggregate replaced by a scan of the emitted windows, renamed to the
/// aggregate's output columns (so everything above it reads them unchanged).
fn post_aggregate_plan(
    plan: &LogicalPlan,
    aggregate_schema: &DFSchemaRef,
) -> Result<(Arc<MemTable>, LogicalPlan)> {
    let (windows, replacement) = renamed_scan(aggregate_schema, WINDOWS_TABLE)?;
    let post = plan
        .clone()
        .transform_up(|node| {
            Ok(match node {
                LogicalPlan::Aggregate(_) => Transformed::yes(replacement.clone()),
                other => Transformed::no(other),
            })
        })?
        .data;
    Ok((windows, post))
}
