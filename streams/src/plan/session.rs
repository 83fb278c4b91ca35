//! The DataFusion session every planner and job runs queries in, and the scan that stands in
//! for what a job computes itself.

use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::MemTable;
use datafusion::common::{Column, DFSchemaRef, TableReference};
use datafusion::datasource::provider_as_source;
use datafusion::execution::context::SQLOptions;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::error::Result;
use crate::plan::window_functions;

/// A DataFusion session with the input tables registered once: each checkpoint swaps the
/// tables' rows and runs plans made at start-up (no SQL parsing or logical planning per batch).
pub struct Session {
    context: SessionContext,
    inputs: Vec<Arc<MemTable>>,
}

impl Session {
    /// A session whose tables are `tables` (name, schema), in the order inputs are given.
    pub fn new(tables: &[(&str, SchemaRef)]) -> Result<Self> {
        // One partition: a checkpoint's batch is small, and rows keep their input order (the
        // windows' per-partition watermarks rely on it).
        let context =
            SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
        window_functions::register(&context);
        let mut inputs = Vec::new();
        for (table, schema) in tables {
            let input = Arc::new(MemTable::try_new(Arc::clone(schema), vec![vec![]])?);
            context.register_table(TableReference::bare(*table), input.clone())?;
            inputs.push(input);
        }
        Ok(Session { context, inputs })
    }

    /// The logical plan of `query`, not yet optimized. Only a query: DDL, DML (`COPY … TO`,
    /// `INSERT`) and statements (`SET`) are refused, so a job's SQL cannot create tables or
    /// write files.
    pub async fn plan(&self, query: &str) -> Result<LogicalPlan> {
        let read_only = SQLOptions::new()
            .with_allow_ddl(false)
            .with_allow_dml(false)
            .with_allow_statements(false);
        let frame = self.context.sql_with_options(query, read_only).await?;
        Ok(frame.logical_plan().clone())
    }

    /// Fails as running `plan` would on a type error (at start-up rather than at a checkpoint).
    pub fn check(&self, plan: &LogicalPlan) -> Result<()> {
        self.optimize(plan)?;
        Ok(())
    }

    /// `plan` optimized as running it would (projections pushed into the scans), or the type
    /// error running it would meet.
    pub fn optimize(&self, plan: &LogicalPlan) -> Result<LogicalPlan> {
        Ok(self.context.state().optimize(plan)?)
    }

    /// Input table `index` holds `batch` (and nothing else) from now on.
    pub async fn set_input(&self, index: usize, batch: RecordBatch) {
        *self.inputs[index].batches[0].write().await = vec![batch];
    }

    pub async fn clear_inputs(&self) {
        for input in &self.inputs {
            input.batches[0].write().await.clear();
        }
    }

    pub async fn run(&self, plan: &LogicalPlan) -> Result<Vec<RecordBatch>> {
        let frame = self.context.execute_logical_plan(plan.clone()).await?;
        Ok(frame.collect().await?)
    }
}

/// A table whose columns are `schema`'s, named `c0…` (so qualified duplicates such as two
/// `_key`s cannot clash), and a scan of it, named `name`, renamed back to `schema`'s qualified
/// columns: what replaces a node the job computes itself (a window's aggregate, a table join),
/// so everything above it reads the columns unchanged.
pub(crate) fn renamed_scan(
    schema: &DFSchemaRef,
    name: &str,
) -> datafusion::error::Result<(Arc<MemTable>, LogicalPlan)> {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| f.as_ref().clone().with_name(format!("c{i}")))
        .collect();
    let table = Arc::new(MemTable::try_new(
        Arc::new(Schema::new(fields)),
        vec![vec![]],
    )?);
    let renamed: Vec<Expr> = (0..schema.fields().len())
        .map(|i| {
            let (qualifier, field) = schema.qualified_field(i);
            Expr::Column(Column::new(Some(name), format!("c{i}")))
                .alias_qualified(qualifier.cloned(), field.name())
        })
        .collect();
    let scan = LogicalPlanBuilder::scan(name, provider_as_source(table.clone()), None)?
        .project(renamed)?
        .build()?;
    Ok((table, scan))
}
