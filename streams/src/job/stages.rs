//! A query whose `WITH` clause holds aggregations or joins runs as stages: each such common
//! table expression (CTE) is a stage, and the query's final `SELECT` the last one — Nexmark q5
//! as Flink users write it:
//!
//! ```sql
//! WITH counts AS (SELECT auction, count(*) AS num, … GROUP BY auction, hop(…)),
//!      maxes AS (SELECT max(num) AS maxn, starttime FROM counts GROUP BY starttime, tumble(…))
//! SELECT c.auction, c.num FROM counts c JOIN maxes m ON … WHERE c.num >= m.maxn
//! ```
//!
//! Each stage is a job of its own (windowed, interval join, table join or stateless, whatever
//! its SQL is), named `{job}-{cte}` (its consumer group, transactional id and internal topics),
//! writing its results to `weir-{job}-{cte}-results` (as chunks of rows, `chunks`), which the
//! stages that name the CTE read under the CTE's name — the same as a chain of `weir job run`s, each exactly once, in one
//! process. A CTE that neither groups nor joins is not a stage: it is carried into the stages
//! that read it, as a `WITH` of theirs. A CTE that groups without a window (an updating
//! aggregate, its results upserts by group) is read by the stages naming it as a table — each
//! key's latest row, from its compacted results topic — as `--table` reads a topic: a stage
//! that aggregates it alone aggregates its changes (Nexmark q4's last step).
//!
//! Invariants: stages are in the order of the `WITH` (a CTE reads only earlier ones); the last
//! stage is the job itself (its name and output); every stage reads at least one input.

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
use datafusion::sql::sqlparser::ast::{
    visit_expressions, Cte, Expr, GroupByExpr, Ident, ObjectName, Query, Select, SetExpr,
    Statement, Visit, Visitor, With,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use rdkafka::admin::{NewTopic, TopicReplication};
use weir_client::CLUSTER_TIMEOUT;

use crate::error::{Result, StreamsError};
use crate::io::topic_reader;
use crate::job::purge::{Purge, Purger, NO_TIME_RETENTION};
use crate::job::stats::JobStats;
use crate::job::{run_with_metrics, topics, JobConfig, JobMetrics};
use crate::record::ValueFormat;

/// Whether `sql` runs as stages: a query whose `WITH` holds a CTE that groups or joins.
pub fn is_staged(sql: &str) -> bool {
    staged_query(sql).is_some()
}

/// `sql` parsed, when it runs as stages.
fn staged_query(sql: &str) -> Option<Box<Query>> {
    let query = parse(sql)?;
    let with = query.with.as_ref()?;
    with.cte_tables
        .iter()
        .any(|cte| is_stateful(&cte.query))
        .then_some(query)
}

/// The stages of `config`'s query, in the order they feed each other (the last one is the job
/// itself); `None` when the query is one stage.
pub fn plan(config: &JobConfig) -> Result<Option<Vec<JobConfig>>> {
    let Some(query) = staged_query(&config.query) else {
        return Ok(None);
    };
    let with = query.with.as_ref().expect("a staged query has a WITH");
    if with.recursive {
        return Err(StreamsError::Query(
            "WITH RECURSIVE cannot run over a stream".into(),
        ));
    }
    let ctes: Vec<(String, &Cte)> = with
        .cte_tables
        .iter()
        .map(|cte| (normalized(&cte.alias.name), cte))
        .collect();
    let stateful: Vec<&str> = ctes
        .iter()
        .filter(|(_, cte)| is_stateful(&cte.query))
        .map(|(name, _)| name.as_str())
        .collect();
    let updating: Vec<&str> = ctes
        .iter()
        .filter(|(name, cte)| stateful.contains(&name.as_str()) && is_updating(&cte.query))
        .map(|(name, _)| name.as_str())
        .collect();
    let upstream = Upstream {
        stateful: &stateful,
        updating: &updating,
    };
    let mut stages = Vec::new();
    for (at, (name, cte)) in ctes.iter().enumerate() {
        if stateful.contains(&name.as_str()) {
            let sql = with_carried(&cte.query, &ctes[..at], &stateful);
            stages.push(stage(config, Some(name), sql, &upstream)?);
        }
    }
    let mut last = (*query).clone();
    last.with = None;
    let sql = with_carried(&last, &ctes, &stateful);
    stages.push(stage(config, None, sql, &upstream)?);
    Ok(Some(stages))
}

/// The job's one statement, a query; `None` when it is not one (the single-stage planner says
/// what is wrong with it).
fn parse(sql: &str) -> Option<Box<Query>> {
    let mut statements = Parser::parse_sql(&GenericDialect {}, sql).ok()?;
    match (statements.pop(), statements.is_empty()) {
        (Some(Statement::Query(query)), true) => Some(query),
        _ => None,
    }
}

/// A name as the SQL planner sees it: unquoted identifiers are lower case.
fn normalized(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

/// The name of a relation with a single part (a table or a CTE), normalized.
fn relation_name(name: &ObjectName) -> Option<String> {
    match name.0.as_slice() {
        [part] => part.as_ident().map(normalized),
        _ => None,
    }
}

/// The relations `query` names (tables, CTEs), normalized.
fn relations(query: &Query) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let _ = datafusion::sql::sqlparser::ast::visit_relations(query, |name| {
        names.extend(relation_name(name));
        ControlFlow::<()>::Continue(())
    });
    names
}

/// Whether a query (or a query inside it) groups, joins or takes distinct rows: then a CTE is
/// a stage of its own.
fn is_stateful(query: &Query) -> bool {
    struct Stateful;
    impl Visitor for Stateful {
        type Break = ();
        fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
            let SetExpr::Select(select) = query.body.as_ref() else {
                return ControlFlow::Continue(());
            };
            let groups = match &select.group_by {
                GroupByExpr::All(_) => true,
                GroupByExpr::Expressions(expressions, _) => !expressions.is_empty(),
            };
            match groups || joins(select) || select.distinct.is_some() {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        }
    }
    query.visit(&mut Stateful).is_break()
}

/// Whether a stateful CTE is an updating aggregate — `GROUP BY` without a window function
/// (`tumble`, `hop`, `session`) and without a join: its results are upserts by group, which the
/// stages that name it read as a table (each key's latest row), not as a stream.
fn is_updating(query: &Query) -> bool {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return false;
    };
    let GroupByExpr::Expressions(groups, _) = &select.group_by else {
        return false;
    };
    !groups.is_empty() && !joins(select) && !groups.iter().any(mentions_window)
}

/// Whether a SELECT reads more than one relation (a join, or a comma between tables).
fn joins(select: &Select) -> bool {
    select.from.len() > 1 || select.from.iter().any(|t| !t.joins.is_empty())
}

/// Whether an expression calls a window function.
fn mentions_window(expression: &Expr) -> bool {
    let mut found = false;
    let _ = visit_expressions(expression, |expression| {
        if let Expr::Function(function) = expression {
            let name = function.name.to_string().to_lowercase();
            found |= ["tumble", "hop", "session"].contains(&name.as_str());
        }
        ControlFlow::<()>::Continue(())
    });
    found
}

/// `query` with, before its own `WITH`, the stateless CTEs among `earlier` that it reads
/// (directly or through each other), in their order.
fn with_carried(query: &Query, earlier: &[(String, &Cte)], stateful: &[&str]) -> String {
    let mut needed = relations(query);
    let mut carried = Vec::new();
    for (name, cte) in earlier.iter().rev() {
        if needed.contains(name) && !stateful.contains(&name.as_str()) {
            needed.extend(relations(&cte.query));
            carried.push((*cte).clone());
        }
    }
    carried.reverse();
    let mut query = query.clone();
    if !carried.is_empty() {
        let with = query.with.get_or_insert_with(|| With {
            with_token: AttachedToken::empty(),
            recursive: false,
            cte_tables: Vec::new(),
        });
        carried.append(&mut with.cte_tables);
        with.cte_tables = carried;
    }
    query.to_string()
}

/// The internal topic of a stage's results.
pub fn results_topic(stage_name: &str) -> String {
    format!("weir-{stage_name}-results")
}

/// The name of the stage computing CTE `cte` of job `job`.
fn stage_name(job: &str, cte: &str) -> String {
    format!("{job}-{cte}")
}

/// The stages a stage may read: every stateful CTE, and which of them are updating aggregates
/// (read as tables).
struct Upstream<'a> {
    stateful: &'a [&'a str],
    updating: &'a [&'a str],
}

/// The job of one stage: `cte` names it (`None`: the last stage, the job itself); it reads
/// the job's inputs and tables and the stateful CTEs its SQL names (updating aggregates as
/// tables, the others as streams).
fn stage(
    config: &JobConfig,
    cte: Option<&str>,
    sql: String,
    upstream: &Upstream,
) -> Result<JobConfig> {
    let parsed = parse(&sql).ok_or_else(|| {
        StreamsError::Internal(format!("a stage's SQL does not parse again: {sql}"))
    })?;
    let named = relations(&parsed);
    let mut stage = config.clone();
    stage.query = sql;
    stage.table = None;
    stage.schema = None;
    stage.inputs.clear();
    stage.input_names.clear();
    stage.input_schemas.clear();
    for (topic, table) in config.inputs.iter().zip(config.table_names()) {
        if named.contains(table) {
            stage.inputs.push(topic.clone());
            stage.input_names.push(table.to_string());
            let schema = config.input_schemas.get(topic).or(config.schema.as_ref());
            if let Some(schema) = schema {
                stage.input_schemas.insert(topic.clone(), schema.clone());
            }
        }
    }
    let read: Vec<&&str> = upstream
        .stateful
        .iter()
        .filter(|name| named.contains(**name) && Some(**name) != cte)
        .collect();
    let (tables, internal): (Vec<&&str>, Vec<&&str>) = read
        .into_iter()
        .partition(|name| upstream.updating.contains(name));
    let reads_stages = !internal.is_empty() || !tables.is_empty();
    // A stage has one value format for everything it reads: another stage's results are JSON.
    let reads_user_tables = config.tables.iter().any(|(name, _)| named.contains(name));
    let reads_raw = !stage.inputs.is_empty() || reads_user_tables;
    if reads_stages && reads_raw && config.input_format == ValueFormat::Raw {
        return Err(StreamsError::Query(format!(
            "{}: a stage cannot read a raw input or table and another stage's (JSON) results",
            cte.unwrap_or("the final SELECT")
        )));
    }
    if reads_stages {
        stage.input_format = ValueFormat::Json;
    }
    for name in internal {
        let topic = results_topic(&stage_name(&config.name, name));
        stage.inputs_in_chunks.insert(topic.clone());
        stage.inputs.push(topic);
        stage.input_names.push(name.to_string());
    }
    stage.tables.retain(|(name, _)| named.contains(name));
    for name in tables {
        let topic = results_topic(&stage_name(&config.name, name));
        stage.tables.push((name.to_string(), topic));
    }
    stage
        .table_schemas
        .retain(|name, _| stage.tables.iter().any(|(table, _)| table == name));
    if let Some(cte) = cte {
        stage.name = stage_name(&config.name, cte);
        stage.output = results_topic(&stage.name);
        stage.output_format = ValueFormat::Json;
        // An updating aggregate's upserts stay records of their own (a table, compacted).
        stage.output_in_chunks = !upstream.updating.contains(&cte);
    }
    if stage.inputs.is_empty() && stage.tables.is_empty() {
        return Err(StreamsError::Query(format!(
            "{} reads none of the job's inputs, tables or stages",
            cte.unwrap_or("the final SELECT")
        )));
    }
    Ok(stage)
}

/// Creates the stages' results topics (with as many partitions as the job's first input, or
/// its first table) when missing, and notes each one's partitions in its stage.
pub fn ensure_results_topics(config: &JobConfig, stages: &mut [JobConfig]) -> Result<()> {
    let reader = topic_reader::consumer(&config.client)?;
    let first = config
        .inputs
        .first()
        .or(config.tables.first().map(|(_, topic)| topic));
    let first = first.ok_or_else(|| StreamsError::Config("a job needs an input".into()))?;
    let partitions = topic_reader::partitions(&reader, first, CLUSTER_TIMEOUT)?.len();
    let last = stages.len() - 1;
    let topics: Vec<NewTopic> = stages[..last]
        .iter()
        .map(|stage| {
            let topic = NewTopic::new(
                &stage.output,
                partitions as i32,
                TopicReplication::Fixed(-1),
            );
            match stage.output_in_chunks {
                // Read as a stream: purged once every reading stage committed past (`purge`).
                true => topic.set(NO_TIME_RETENTION.0, NO_TIME_RETENTION.1),
                false => topic.set("cleanup.policy", "compact"),
            }
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StreamsError::Internal(format!("cannot start a runtime: {e}")))?;
    topics::create(config, &runtime, &topics, "stage results topic created")?;
    for stage in &mut stages[..last] {
        // (Metadata may lag a moment behind a topic just created.)
        stage.output_partitions = Some(topics::wait_for(&reader, &stage.output)?);
    }
    Ok(())
}

/// Each results topic read as a stream, with the stages (groups) that read it.
pub(crate) fn purges(stages: &[JobConfig]) -> Vec<Purge> {
    stages
        .iter()
        .filter(|stage| stage.output_in_chunks)
        .map(|stage| Purge {
            topic: stage.output.clone(),
            readers: stages
                .iter()
                .filter(|reader| reader.inputs_in_chunks.contains(&stage.output))
                .map(|reader| reader.name.clone())
                .collect(),
        })
        .collect()
}

/// How often the stages' runner looks at `stop` and at stages that ended.
const WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// Runs every stage on a thread of its own until `stop` is set or one of them fails (then
/// all stop, and the first error is the answer); the answer is the last stage's stats, with
/// every stage's rejected and late records.
pub fn run(stages: &[JobConfig], stop: &AtomicBool, metrics: &[JobMetrics]) -> Result<JobStats> {
    let all_stop = AtomicBool::new(false);
    let mut purger = Purger::new(
        &stages[0].client,
        purges(stages),
        stages[0].purge_interval(),
    );
    let results: Vec<Result<JobStats>> = std::thread::scope(|scope| {
        let handles: Vec<_> = stages
            .iter()
            .zip(metrics)
            .map(|(stage, metrics)| {
                let all_stop = &all_stop;
                std::thread::Builder::new()
                    .name(format!("stage {}", stage.name))
                    .spawn_scoped(scope, move || {
                        let result = run_with_metrics(stage, all_stop, None, metrics);
                        if let Err(error) = &result {
                            tracing::error!(stage = %stage.name, %error, "stage failed; stopping the job");
                        }
                        all_stop.store(true, Ordering::SeqCst);
                        result
                    })
                    .expect("a thread for a stage")
            })
            .collect();
        while !all_stop.load(Ordering::SeqCst) {
            if stop.load(Ordering::SeqCst) {
                all_stop.store(true, Ordering::SeqCst);
            }
            purger.purge_if_due();
            std::thread::sleep(WATCH_INTERVAL);
        }
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(StreamsError::Internal("a stage's thread panicked".into()))
                })
            })
            .collect()
    });
    let mut stats = JobStats::default();
    let last = results.len() - 1;
    for (at, result) in results.into_iter().enumerate() {
        let done = result?;
        if at == last {
            stats.checkpoints = done.checkpoints;
            stats.records_in = done.records_in;
            stats.records_out = done.records_out;
            stats.windows_emitted = done.windows_emitted;
            stats.checkpoints_aborted += done.checkpoints_aborted;
            stats.rebalances = done.rebalances;
        }
        stats.records_rejected += done.records_rejected;
        stats.records_late += done.records_late;
        stats.partials_too_late += done.partials_too_late;
    }
    Ok(stats)
}
