//! What a query may do over a stream, checked when it is planned.
//!
//! A job runs its plan over each checkpoint's records, so anything whose answer depends on rows
//! of *other* checkpoints would silently answer per batch: a join would miss every pair whose
//! sides arrived in different checkpoints, a LIMIT would drop rows from each batch, ORDER BY and
//! OVER (…) would sort or number within an arbitrary slice. Such queries are refused with the
//! reason, before the job starts, rather than run with batch semantics. What stays: projections,
//! filters, scalar functions, UNION ALL of inputs, UNNEST, and one GROUP BY — over an event-time
//! window, or without one as an updating aggregate (taken apart by `crate::aggregate::query`). Joins with declared tables are taken out of
//! the plan before this check (`crate::join::plan`).
//!
//! Statements other than a query (DDL, DML, COPY … TO, SET) are refused by the session's SQL
//! options (`sql::Session::plan`), not here: a job's query cannot create tables or write files.

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::{Expr, LogicalPlan};

use crate::error::{Result, StreamsError};

/// Refuses what `plan` does that a job cannot do correctly over a stream.
pub fn check(plan: &LogicalPlan) -> Result<()> {
    let mut refusal = None;
    let mut reads_input = false;
    plan.apply(|node| {
        if matches!(node, LogicalPlan::TableScan(_)) {
            reads_input = true;
        }
        refusal = refused_node(node).or_else(|| refused_expressions(node));
        Ok(match refusal {
            Some(_) => TreeNodeRecursion::Stop,
            None => TreeNodeRecursion::Continue,
        })
    })?;
    if let Some(reason) = refusal {
        return Err(StreamsError::Query(format!(
            "this query cannot run over a stream: {reason}"
        )));
    }
    if !reads_input {
        return Err(StreamsError::Query(
            "this query reads no input topic: it would emit the same rows at every checkpoint"
                .into(),
        ));
    }
    Ok(())
}

fn refused_node(node: &LogicalPlan) -> Option<&'static str> {
    Some(match node {
        LogicalPlan::Join(_) => {
            "a join would only pair rows that arrive in the same checkpoint; declare the \
             looked-up topic as a table (--table NAME=TOPIC) to join each record with its \
             value as of the record's time, or join two input topics within a time bound \
             (ON a.k = b.k AND b.t BETWEEN a.t - INTERVAL … AND a.t + INTERVAL …)"
        }
        LogicalPlan::Sort(_) => {
            "ORDER BY over a stream never ends (a job emits rows in input order per partition; \
             sort where the output is read, e.g. with `weir sql`)"
        }
        LogicalPlan::Limit(_) => "LIMIT/OFFSET over a stream would drop rows from every checkpoint",
        LogicalPlan::Window(_) => {
            "OVER (…) window functions would number or rank rows within one checkpoint only"
        }
        LogicalPlan::Distinct(_) => {
            "DISTINCT over a stream needs state; GROUP BY the columns instead (an updating \
             aggregate, one row per group kept current) or by an event-time window, e.g. \
             GROUP BY tumble(_timestamp, INTERVAL '1 minute'), …"
        }
        LogicalPlan::RecursiveQuery(_) => "recursive queries are not supported over a stream",
        LogicalPlan::Subquery(_) => "subqueries are not supported over a stream",
        _ => return None,
    })
}

fn refused_expressions(node: &LogicalPlan) -> Option<&'static str> {
    node.expressions().iter().find_map(|expr| {
        let mut refusal = None;
        let _ = expr.apply(|e| {
            refusal = match e {
                Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_) => {
                    Some("subqueries (IN (SELECT …), EXISTS, scalar subqueries) read other rows than the record's own; they are not supported over a stream")
                }
                Expr::WindowFunction(_) => Some(
                    "OVER (…) window functions would number or rank rows within one checkpoint only",
                ),
                _ => None,
            };
            Ok(match refusal {
                Some(_) => TreeNodeRecursion::Stop,
                None => TreeNodeRecursion::Continue,
            })
        });
        refusal
    })
}
