//! An interval join taken out of a planned query. The `Join` of two input topics with equal keys
//! and a time bound — `ON a.k = b.k AND b.t BETWEEN a.t - INTERVAL '5' MINUTE AND a.t`, or the
//! same with `>=`/`<=` (`<`/`>` are a millisecond inside) in either order — becomes:
//!
//! - a plan per side, below the join: the side's rows projected to `[keys…, time (ms),
//!   _partition, _offset, the side's columns…]`;
//! - the bounds `lower_ms <= right.time - left.time <= upper_ms`;
//! - the query with the join replaced by a scan of the joined rows (the join's columns), other
//!   conditions of an inner join applied above it as a filter.
//!
//! What is accepted: `JOIN` and `LEFT JOIN` (a `RIGHT JOIN` is a `LEFT JOIN` with the sides
//! swapped), each side one input topic (filters and projections over it are fine, as long as
//! its `_partition` and `_offset` stay visible), one interval join per query, nothing
//! aggregated above it (yet).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::catalog::MemTable;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema, DFSchemaRef, JoinType};
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    cast as cast_expr, Between, BinaryExpr, Expr, Join, LogicalPlan, LogicalPlanBuilder, Operator,
};

use crate::aggregate::datum::Datum;
use crate::error::{Result, StreamsError};
use crate::io::decode::{OFFSET_COLUMN, PARTITION_COLUMN};
use crate::io::record_time::{self, RECORD_TIME_COLUMN};
use crate::plan::renamed_scan;
use crate::plan::window_functions::{scalar_interval_ms, WINDOW_TIME_TYPE};

/// One side of the join, evaluated on its input's rows each checkpoint.
pub struct SidePlan {
    /// The input topic (its index among the job's inputs) the side reads.
    pub input: usize,
    /// `[keys…, time ms, _partition, _offset, columns…]`.
    pub plan: LogicalPlan,
    pub keys: usize,
    /// The side's columns in the join's output.
    pub columns: usize,
}

pub struct IntervalJoinPlan {
    pub left: SidePlan,
    pub right: SidePlan,
    pub lower_ms: i64,
    pub upper_ms: i64,
    pub left_outer: bool,
    /// Where the joined rows go: a table with the join's columns, named `c0…`.
    pub joined: Arc<MemTable>,
    /// The join's columns: the left side's, then the right side's.
    pub join_schema: DFSchemaRef,
    /// The query with the join replaced by a scan of `joined`.
    pub post_join: LogicalPlan,
}

/// The columns after the keys in a side plan's rows.
pub const SIDE_TIME_COLUMN: &str = "__weir_join_time";

/// The interval join of `plan` over `inputs` (their table names, in order); `None` without a
/// join.
pub fn extract(plan: &LogicalPlan, inputs: &[&str]) -> Result<Option<IntervalJoinPlan>> {
    let mut joins = Vec::new();
    plan.apply(|node| {
        if let LogicalPlan::Join(join) = node {
            joins.push(join.clone());
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    let join = match joins.as_slice() {
        [] => return Ok(None),
        [join] => join,
        _ => return Err(refused("more than one join between streams in a query")),
    };
    let left_outer = match join.join_type {
        JoinType::Inner => false,
        JoinType::Left => true,
        JoinType::Right => {
            return Err(refused(
                "RIGHT JOIN between streams: write it as a LEFT JOIN with the sides swapped",
            ))
        }
        other => return Err(refused(&format!("{other} JOIN between streams"))),
    };
    let bounds = Bounds::of(join)?;
    if left_outer && !bounds.rest.is_empty() {
        return Err(refused(
            "a LEFT JOIN between streams takes only its keys and time bound in ON; put other \
             conditions in WHERE",
        ));
    }
    let left_keys: Vec<Expr> = bounds.keys.iter().map(|(l, _)| l.clone()).collect();
    let right_keys: Vec<Expr> = bounds.keys.iter().map(|(_, r)| r.clone()).collect();
    if left_keys.is_empty() {
        return Err(refused(
            "a join between streams needs equal keys (ON a.k = b.k AND <time bound>)",
        ));
    }
    let left = side_plan(&join.left, &left_keys, bounds.left_time.clone(), inputs)?;
    let right = side_plan(&join.right, &right_keys, bounds.right_time.clone(), inputs)?;
    if left.input == right.input {
        return Err(refused("an interval join of a topic with itself"));
    }
    if let Some(field) = join
        .schema
        .fields()
        .iter()
        .find(|f| !Datum::can_hold(f.data_type()))
    {
        return Err(refused(&format!(
            "a join between streams keeps its rows' columns, and column {} is of type {}, which \
             it cannot hold yet (select the columns you need, with _partition and _offset, in a \
             subquery)",
            field.name(),
            field.data_type()
        )));
    }
    // The joined rows carry their time too, for the output records (`crate::io::record_time`).
    let timed = join
        .schema
        .join(&DFSchema::try_from(Schema::new(vec![Field::new(
            RECORD_TIME_COLUMN,
            DataType::Timestamp(TimeUnit::Millisecond, None),
            true,
        )]))?)?;
    let (joined, scan) = renamed_scan(&Arc::new(timed), "__weir_interval_join")?;
    let replacement = match conjunction(bounds.rest) {
        Some(condition) => LogicalPlanBuilder::from(scan).filter(condition)?.build()?,
        None => scan,
    };
    let post_join = plan
        .clone()
        .transform_up(|node| {
            Ok(match node {
                LogicalPlan::Join(_) => Transformed::yes(replacement.clone()),
                other => Transformed::no(other),
            })
        })?
        .data;
    let mut aggregated = false;
    post_join.apply(|node| {
        aggregated |= matches!(node, LogicalPlan::Aggregate(_));
        Ok(TreeNodeRecursion::Continue)
    })?;
    if aggregated {
        return Err(refused(
            "an aggregate over a join between streams (not yet)",
        ));
    }
    let post_join = record_time::stamped_by(&post_join, RECORD_TIME_COLUMN).unwrap_or(post_join);
    Ok(Some(IntervalJoinPlan {
        left,
        right,
        lower_ms: bounds.lower_ms,
        upper_ms: bounds.upper_ms,
        left_outer,
        joined,
        join_schema: Arc::clone(&join.schema),
        post_join,
    }))
}

fn refused(what: &str) -> StreamsError {
    StreamsError::Query(format!("this query cannot run over a stream: {what}"))
}

/// The side's rows as the join needs them.
fn side_plan(
    side: &Arc<LogicalPlan>,
    keys: &[Expr],
    time: Expr,
    inputs: &[&str],
) -> Result<SidePlan> {
    let mut scanned = Vec::new();
    side.apply(|node| {
        match node {
            LogicalPlan::TableScan(scan) => scanned.push(scan.table_name.table().to_string()),
            LogicalPlan::Join(_) => scanned.push(String::new()),
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    let input = match scanned.as_slice() {
        [table] => inputs.iter().position(|i| i == table),
        _ => None,
    }
    .ok_or_else(|| refused("each side of a join between streams must read one input topic"))?;
    let schema = side.schema();
    let metadata = |name: &str| -> Result<Expr> {
        let (qualifier, field) =
            schema
                .qualified_field_with_unqualified_name(name)
                .map_err(|_| {
                    refused(&format!(
                        "each side of a join between streams must keep its {name} (select it in a \
                     subquery)"
                    ))
                })?;
        Ok(Expr::Column(Column::new(qualifier.cloned(), field.name())))
    };
    let mut columns: Vec<Expr> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| key.clone().alias(format!("__weir_join_key{i}")))
        .collect();
    columns.push(
        cast_expr(cast_expr(time, WINDOW_TIME_TYPE), DataType::Int64).alias(SIDE_TIME_COLUMN),
    );
    columns.push(metadata(PARTITION_COLUMN)?.alias("__weir_join_partition"));
    columns.push(metadata(OFFSET_COLUMN)?.alias("__weir_join_offset"));
    columns.extend(schema.columns().into_iter().map(Expr::Column));
    let plan = LogicalPlanBuilder::from(side.as_ref().clone())
        .project(columns)?
        .build()?;
    Ok(SidePlan {
        input,
        plan,
        keys: keys.len(),
        columns: schema.fields().len(),
    })
}

/// What a join's conditions say: equal keys (left, right), the time bound `lower_ms <=
/// right_time - left_time <= upper_ms`, and the conditions that are neither.
struct Bounds {
    keys: Vec<(Expr, Expr)>,
    left_time: Expr,
    right_time: Expr,
    lower_ms: i64,
    upper_ms: i64,
    rest: Vec<Expr>,
}

/// One comparison read as `right_time - left_time (>=|<=) ms`.
struct Limit {
    left_time: Expr,
    right_time: Expr,
    at_least: bool,
    ms: i64,
}

impl Bounds {
    fn of(join: &Join) -> Result<Self> {
        let mut comparisons = Vec::new();
        if let Some(filter) = &join.filter {
            for condition in split_conjunction(filter) {
                match condition {
                    Expr::Between(Between {
                        expr,
                        negated: false,
                        low,
                        high,
                    }) => {
                        comparisons.push(expr.as_ref().clone().gt_eq(low.as_ref().clone()));
                        comparisons.push(expr.as_ref().clone().lt_eq(high.as_ref().clone()));
                    }
                    other => comparisons.push(other.clone()),
                }
            }
        }
        let (left, right) = (join.left.schema(), join.right.schema());
        let mut keys = join.on.clone();
        let mut limits = Vec::new();
        let mut rest = Vec::new();
        for comparison in comparisons {
            if let Some(pair) = equal_keys(&comparison, left, right) {
                keys.push(pair);
            } else if let Some(found) = limit(&comparison, left, right) {
                limits.push(found);
            } else {
                rest.push(comparison);
            }
        }
        let missing = || {
            refused(
                "a join between streams needs a time bound on both sides, e.g. ON a.id = b.id \
                 AND b.t BETWEEN a.t - INTERVAL '15' MINUTE AND a.t (without one, it would have \
                 to keep every row for ever)",
            )
        };
        let lower = limits.iter().filter(|l| l.at_least).max_by_key(|l| l.ms);
        let upper = limits.iter().filter(|l| !l.at_least).min_by_key(|l| l.ms);
        let (Some(lower), Some(upper)) = (lower, upper) else {
            return Err(missing());
        };
        if limits
            .iter()
            .any(|l| l.left_time != lower.left_time || l.right_time != lower.right_time)
        {
            return Err(refused(
                "the time bounds of a join between streams must compare the same two times",
            ));
        }
        if lower.ms > upper.ms {
            return Err(refused(&format!(
                "the join's time bound is empty: {} ms to {} ms",
                lower.ms, upper.ms
            )));
        }
        Ok(Bounds {
            keys,
            left_time: lower.left_time.clone(),
            right_time: lower.right_time.clone(),
            lower_ms: lower.ms,
            upper_ms: upper.ms,
            rest,
        })
    }
}

/// Whether `expr` reads columns of `schema` only (and some).
fn reads_only(expr: &Expr, schema: &DFSchemaRef) -> bool {
    let columns = expr.column_refs();
    !columns.is_empty() && columns.iter().all(|c| schema.has_column(c))
}

/// `comparison` as equal keys (left expression, right expression).
fn equal_keys(comparison: &Expr, left: &DFSchemaRef, right: &DFSchemaRef) -> Option<(Expr, Expr)> {
    let Expr::BinaryExpr(BinaryExpr {
        left: a,
        op: Operator::Eq,
        right: b,
    }) = comparison
    else {
        return None;
    };
    let (a, b) = (a.as_ref().clone(), b.as_ref().clone());
    if reads_only(&a, left) && reads_only(&b, right) {
        Some((a, b))
    } else if reads_only(&a, right) && reads_only(&b, left) {
        Some((b, a))
    } else {
        None
    }
}

/// `comparison` as a limit on `right_time - left_time`, when it compares a time of one side
/// (plus or minus a constant interval) with a time of the other.
fn limit(comparison: &Expr, left: &DFSchemaRef, right: &DFSchemaRef) -> Option<Limit> {
    let Expr::BinaryExpr(BinaryExpr {
        left: a,
        op,
        right: b,
    }) = comparison
    else {
        return None;
    };
    let (a_time, a_ms) = time_plus(a)?;
    let (b_time, b_ms) = time_plus(b)?;
    let reads = reads_only;
    // a + a_ms op b + b_ms, with a the right side's time: right - left op b_ms - a_ms.
    let (right_time, left_time, op, ms) = if reads(&a_time, right) && reads(&b_time, left) {
        (a_time, b_time, *op, b_ms - a_ms)
    } else if reads(&a_time, left) && reads(&b_time, right) {
        (b_time, a_time, op.swap()?, a_ms - b_ms)
    } else {
        return None;
    };
    let (at_least, ms) = match op {
        Operator::GtEq => (true, ms),
        Operator::Gt => (true, ms.checked_add(1)?),
        Operator::LtEq => (false, ms),
        Operator::Lt => (false, ms.checked_sub(1)?),
        _ => return None,
    };
    Some(Limit {
        left_time,
        right_time,
        at_least,
        ms,
    })
}

/// `expr` as a time plus a constant: `t`, `t + INTERVAL …`, `t - INTERVAL …`, `INTERVAL … + t`.
fn time_plus(expr: &Expr) -> Option<(Expr, i64)> {
    let interval = |e: &Expr| match e {
        Expr::Literal(value, _) => scalar_interval_ms(value, "the join's bound").ok(),
        _ => None,
    };
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::Plus => match (interval(left), interval(right)) {
                (None, Some(ms)) => Some((left.as_ref().clone(), ms)),
                (Some(ms), None) => Some((right.as_ref().clone(), ms)),
                _ => None,
            },
            Operator::Minus => interval(right).map(|ms| (left.as_ref().clone(), -ms)),
            _ => None,
        },
        Expr::Literal(..) => None,
        other => Some((other.clone(), 0)),
    }
}
