//! Stream–table joins taken out of a planned query: each `Join` with a declared table on one
//! side and the stream on the other becomes a [`TableJoin`] step, and the join node itself a
//! scan of the step's output (renamed to the join's columns, so everything above reads them
//! unchanged). Per checkpoint the steps run in order — innermost join first — and the rewritten
//! query then runs as a stateless (per-record) one.
//!
//! What is accepted: `JOIN` (either side the table), `LEFT JOIN` with the table on the right,
//! `RIGHT JOIN` with the table on the left, on `<stream expression> = <table>._key` plus, for
//! inner joins, any further conditions (applied as a filter). The stream side must carry its
//! `_timestamp` (the time the table is looked up at).

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::catalog::MemTable;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchemaRef, JoinType, TableReference};
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    cast as cast_expr, BinaryExpr, Expr, LogicalPlan, LogicalPlanBuilder, Operator,
};

use crate::error::{Result, StreamsError};
use crate::io::decode::{KEY_COLUMN, TIMESTAMP_COLUMN};
use crate::plan::renamed_scan;

/// Columns appended to the stream side's rows for the lookup.
pub(super) const LOOKUP_KEY: &str = "__weir_lookup_key";
pub(super) const LOOKUP_TIME: &str = "__weir_lookup_time";

/// One stream–table join, run per checkpoint by `join::lookup`.
pub struct TableJoin {
    /// The declared table's index.
    pub table: usize,
    /// The stream side (earlier joins already replaced by their scans) with the lookup key (as
    /// a string) and event time (milliseconds) appended.
    pub stream_side: LogicalPlan,
    /// Columns of the stream side before the two appended ones.
    pub stream_width: usize,
    /// Whether the table's columns come first in the join's output.
    pub table_first: bool,
    /// Stream rows without a table row are kept (with nulls for the table's columns).
    pub keep_unmatched: bool,
    /// Where the joined rows go: a table with the join's columns, named `c0…`.
    pub output: Arc<MemTable>,
}

/// `plan` with its stream–table joins replaced, and the joins in the order they run.
pub fn extract(plan: &LogicalPlan, tables: &[&str]) -> Result<(LogicalPlan, Vec<TableJoin>)> {
    if tables.is_empty() {
        return Ok((plan.clone(), Vec::new()));
    }
    let mut joins = Vec::new();
    // Each join's stream time: a later join's stream side carries it among the earlier
    // tables' own `_timestamp`s.
    let mut stream_times: Vec<Column> = Vec::new();
    let rewritten = plan
        .clone()
        .transform_up(|node| match node {
            LogicalPlan::Join(join) => {
                let index = joins.len();
                let (replacement, step) = replace(&join, tables, index, &mut stream_times)?;
                joins.push(step);
                Ok(Transformed::yes(replacement))
            }
            other => Ok(Transformed::no(other)),
        })
        .map_err(|error| match error {
            datafusion::error::DataFusionError::Plan(reason) => {
                StreamsError::Query(format!("this query cannot run over a stream: {reason}"))
            }
            other => other.into(),
        })?
        .data;
    if let Some(table) = scanned_tables(&rewritten, tables).first() {
        return Err(StreamsError::Query(format!(
            "table {table} can only be joined to a stream (JOIN … ON stream_expression = \
             {table}._key), not read on its own"
        )));
    }
    Ok((rewritten, joins))
}

fn replace(
    join: &datafusion::logical_expr::Join,
    tables: &[&str],
    index: usize,
    stream_times: &mut Vec<Column>,
) -> datafusion::error::Result<(LogicalPlan, TableJoin)> {
    let refuse = |reason: String| datafusion::error::DataFusionError::Plan(reason);
    let left_table = table_scanned(&join.left, tables);
    let right_table = table_scanned(&join.right, tables);
    let (table, table_first) = match (left_table, right_table) {
        (None, Some(table)) => (table, false),
        (Some(table), None) => (table, true),
        (Some(_), Some(_)) => {
            return Err(refuse(
                "a join of two tables is not supported in a job".into(),
            ))
        }
        (None, None) => {
            return Err(refuse(
                "a join of two streams in a query that also joins declared tables is not \
                 supported yet: join the streams within a time bound in a job without tables, \
                 or declare one side as a table (--table NAME=TOPIC)"
                    .into(),
            ))
        }
    };
    let keep_unmatched = match (join.join_type, table_first) {
        (JoinType::Inner, _) => false,
        (JoinType::Left, false) | (JoinType::Right, true) => true,
        (join_type, _) => {
            return Err(refuse(format!(
                "{join_type} JOIN with table {} on that side is not supported: the stream's \
                 rows are kept (LEFT JOIN table) or only matched ones (JOIN)",
                tables[table]
            )))
        }
    };
    let (stream, table_side) = match table_first {
        false => (&join.left, &join.right),
        true => (&join.right, &join.left),
    };
    let table_qualifier = table_side.schema().qualified_field(0).0.cloned();
    let (key, rest) =
        lookup_key(join, table_side.schema(), table_qualifier.as_ref()).ok_or_else(|| {
            refuse(format!(
                "a join with table {} needs ON stream_expression = {}._key",
                tables[table], tables[table]
            ))
        })?;
    if keep_unmatched && !rest.is_empty() {
        return Err(refuse(
            "an outer join with a table takes only ON stream_expression = table._key; put \
             other conditions in WHERE"
                .into(),
        ));
    }
    let time = stream_time(stream.schema(), tables, stream_times).ok_or_else(|| {
        refuse(format!(
            "the stream side of the join with {} must carry its {TIMESTAMP_COLUMN} (the time \
             the table is looked up at)",
            tables[table]
        ))
    })?;
    let stream_width = stream.schema().fields().len();
    let mut columns: Vec<Expr> = stream
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    columns.push(cast_expr(key, DataType::Utf8).alias(LOOKUP_KEY));
    columns.push(cast_expr(time, DataType::Int64).alias(LOOKUP_TIME));
    let stream_side = LogicalPlanBuilder::from(stream.as_ref().clone())
        .project(columns)?
        .build()?;
    let (output, scan) = renamed_scan(&join.schema, &format!("__weir_join{index}"))?;
    let replacement = match conjunction(rest) {
        Some(condition) => LogicalPlanBuilder::from(scan).filter(condition)?.build()?,
        None => scan,
    };
    let step = TableJoin {
        table,
        stream_side,
        stream_width,
        table_first,
        keep_unmatched,
        output,
    };
    Ok((replacement, step))
}

/// The index of the declared table `plan` scans directly (under aliases only).
fn table_scanned(plan: &LogicalPlan, tables: &[&str]) -> Option<usize> {
    match plan {
        LogicalPlan::TableScan(scan) => tables
            .iter()
            .position(|t| scan.table_name == TableReference::bare(*t)),
        LogicalPlan::SubqueryAlias(alias) => table_scanned(&alias.input, tables),
        _ => None,
    }
}

fn scanned_tables(plan: &LogicalPlan, tables: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    let _ = plan.apply(|node| {
        if let Some(t) = table_scanned(node, tables) {
            found.push(tables[t].to_string());
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    found
}

/// The stream's expression compared with the table's `_key`, and the other conditions.
fn lookup_key(
    join: &datafusion::logical_expr::Join,
    table_schema: &DFSchemaRef,
    table_qualifier: Option<&TableReference>,
) -> Option<(Expr, Vec<Expr>)> {
    let is_table_key = |e: &Expr| match e {
        Expr::Column(c) => c.name == KEY_COLUMN && c.relation.as_ref() == table_qualifier,
        _ => false,
    };
    let reads_table = |e: &Expr| e.column_refs().iter().any(|c| table_schema.has_column(c));
    let mut conditions: Vec<Expr> = join
        .on
        .iter()
        .map(|(l, r)| l.clone().eq(r.clone()))
        .collect();
    if let Some(filter) = &join.filter {
        conditions.extend(split_conjunction(filter).into_iter().cloned());
    }
    let mut key = None;
    let mut rest = Vec::new();
    for condition in conditions {
        let found = match &condition {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Eq,
                right,
            }) if key.is_none() => match (is_table_key(left), is_table_key(right)) {
                (true, false) if !reads_table(right) => Some(right.as_ref().clone()),
                (false, true) if !reads_table(left) => Some(left.as_ref().clone()),
                _ => None,
            },
            _ => None,
        };
        match found {
            Some(stream_expr) => key = Some(stream_expr),
            None => rest.push(condition),
        }
    }
    Some((key?, rest))
}

/// The stream side's `_timestamp`: an earlier join's stream time, else the one column of that
/// name not of a declared table. Recorded in `stream_times` for the joins above.
fn stream_time(
    schema: &DFSchemaRef,
    tables: &[&str],
    stream_times: &mut Vec<Column>,
) -> Option<Expr> {
    if let Some(known) = stream_times.iter().find(|c| schema.has_column(c)) {
        return Some(Expr::Column(known.clone()));
    }
    let candidates: Vec<Column> = schema
        .columns()
        .into_iter()
        .filter(|c| c.name == TIMESTAMP_COLUMN)
        .filter(|c| {
            !c.relation
                .as_ref()
                .is_some_and(|r| tables.iter().any(|t| r.table() == *t))
        })
        .collect();
    match candidates.as_slice() {
        [only] => {
            stream_times.push(only.clone());
            Some(Expr::Column(only.clone()))
        }
        _ => None,
    }
}
