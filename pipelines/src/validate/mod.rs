//! Checking pipelines before they run: names, topics, connector settings, the SQL (planned
//! against the topic's columns), and — unless offline — that the cluster and databases answer.
//! Every problem is a diagnostic pointing at its field.

use std::future::Future;
use std::pin::Pin;
use std::collections::HashSet;
use std::time::Duration;


use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::load::{load_checked, LoadedPipeline};
use crate::error::PipelineError;
use crate::schema::{emits_changes, planned_transform, stream_schemas, table_schemas, topic_decoder};

const REACH_TIMEOUT: Duration = Duration::from_secs(5);

/// The pipelines of `path`, loaded and validated — or every problem in them, in file order:
/// what loading refused (it goes on past each) and what the checks of the (repaired) configs
/// find, but for fields loading had to repair.
///
/// Boxed so that the checks (DataFusion's planning among them) are compiled once, in this crate.
pub fn check(
    path: &std::path::Path,
    offline: bool,
) -> Pin<Box<dyn Future<Output = Result<Vec<LoadedPipeline>, Diagnostics>> + Send + '_>> {
    Box::pin(check_path(path, offline))
}

async fn check_path(
    path: &std::path::Path,
    offline: bool,
) -> Result<Vec<LoadedPipeline>, Diagnostics> {
    let mut report = load_checked(path);
    let mut problems = std::mem::take(&mut report.problems);
    let found = validate(&report.pipelines, offline).await;
    problems.extend(found.into_iter().filter(|d| !report.is_about_repaired(d)));
    if problems.is_empty() {
        return Ok(report.pipelines);
    }
    problems.sort_by_key(|d| {
        let place = d.location.map(|l| (l.line, l.column));
        (d.file.clone(), place)
    });
    Err(Diagnostics(problems))
}

/// Everything wrong with `pipelines`; `offline` skips the network checks.
/// Boxed as [`check`] is.
pub fn validate(
    pipelines: &[LoadedPipeline],
    offline: bool,
) -> Pin<Box<dyn Future<Output = Vec<Diagnostic>> + Send + '_>> {
    Box::pin(validate_all(pipelines, offline))
}

async fn validate_all(pipelines: &[LoadedPipeline], offline: bool) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    let mut names = HashSet::new();
    for pipeline in pipelines {
        if !names.insert(pipeline.config.name.clone()) {
            problems.push(pipeline.diagnostic(
                "name",
                format!("a second pipeline is named {}", pipeline.config.name),
                Some("names key topics and offsets; each pipeline needs its own".into()),
            ));
        }
        problems.extend(static_problems(pipeline));
    }
    if !problems.is_empty() {
        return problems;
    }
    for pipeline in pipelines {
        problems.extend(sql_problems(pipeline).await);
        if !offline {
            problems.extend(reachability_problems(pipeline).await);
        }
    }
    problems
}

fn is_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// `field: message` problems of a connector, pointed at `base.field`.
fn connector_problems(
    pipeline: &LoadedPipeline,
    base: &str,
    problems: Vec<String>,
) -> Vec<Diagnostic> {
    problems
        .into_iter()
        .map(|problem| match problem.split_once(": ") {
            Some((field, message)) if field.chars().all(|c| c.is_ascii_lowercase() || c == '_') => {
                pipeline.diagnostic(&format!("{base}.{field}"), message, None)
            }
            _ => pipeline.diagnostic(base, problem, None),
        })
        .collect()
}

fn static_problems(pipeline: &LoadedPipeline) -> Vec<Diagnostic> {
    let config = &pipeline.config;
    let mut problems = Vec::new();
    if !is_topic_name(&config.name) {
        problems.push(pipeline.diagnostic(
            "name",
            format!("'{}' is not a pipeline name", config.name),
            Some("letters, digits, '.', '_' and '-' (it names topics)".into()),
        ));
    }
    for (field, topic) in [
        ("topic.name", config.topic_name()),
        ("dead_letter_topic", config.dead_letter_topic()),
    ] {
        if !is_topic_name(&topic) {
            problems.push(pipeline.diagnostic(
                field,
                format!("'{topic}' is not a valid topic name"),
                Some("letters, digits, '.', '_' and '-', at most 249".into()),
            ));
        }
    }
    problems.extend(table_problems(pipeline));
    if config.parallelism == 0 || config.parallelism > crate::rows::MAX_WORKERS {
        let message = format!("must be between 1 and {}", crate::rows::MAX_WORKERS);
        problems.push(pipeline.diagnostic("parallelism", message, None));
    }
    if config.topic.partitions.is_some_and(|p| p < 1) {
        problems.push(pipeline.diagnostic("topic.partitions", "must be at least 1", None));
    }
    if config.checkpoint_interval_ms == 0 || config.checkpoint_max_records == 0 {
        problems.push(pipeline.diagnostic(
            "checkpoint_interval_ms",
            "checkpoint interval and size must be positive",
            None,
        ));
    }
    let source_problems = config.source.connector().problems();
    problems.extend(connector_problems(pipeline, "source", source_problems));
    if config.sinks.is_empty() {
        problems.push(pipeline.diagnostic(
            "",
            "the pipeline has no sinks",
            Some(format!(
                "add `sinks:` with at least one of {}",
                weir_connectors::registry::SinkConfig::KINDS.join(", ")
            )),
        ));
    }
    for (index, sink) in config.sinks.iter().enumerate() {
        let sink_problems = sink.connector().problems();
        problems.extend(connector_problems(
            pipeline,
            &format!("sinks[{index}]"),
            sink_problems,
        ));
    }
    if let Err(error) = topic_decoder(config) {
        problems.push(pipeline.diagnostic(
            "schema",
            error.to_string(),
            Some("e.g. `schema: \"time:timestamp,user:string,amount:float\"`".into()),
        ));
    }
    problems
}

/// Declared tables and streams: names given once, topics that can be topics, are not the
/// pipeline's own, and are declared once.
fn table_problems(pipeline: &LoadedPipeline) -> Vec<Diagnostic> {
    let config = &pipeline.config;
    let Some(transform) = &config.transform else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    let own = [config.topic_name(), config.dead_letter_topic(), config.job_output_topic()];
    let mut names = HashSet::new();
    let mut topics = HashSet::new();
    let declared = (transform.tables.iter().enumerate().map(|(i, t)| ("table", "tables", i, t)))
        .chain(transform.streams.iter().enumerate().map(|(i, s)| ("stream", "streams", i, s)));
    for (what, list, index, table) in declared {
        let field = format!("transform.{list}[{index}]");
        if table.name.is_empty() || !names.insert(table.name.as_str()) || table.name == transform.table {
            problems.push(pipeline.diagnostic(
                &format!("{field}.name"),
                format!("{what} name '{}' is empty or already taken", table.name),
                Some(format!("the topic is table `{}` in the query", transform.table)),
            ));
        }
        if !is_topic_name(&table.topic) || own.contains(&table.topic) || !topics.insert(&table.topic) {
            problems.push(pipeline.diagnostic(
                &format!("{field}.topic"),
                format!("'{}' cannot be a {what}'s topic", table.topic),
                Some("a valid topic name other than the pipeline's own topics, named once".into()),
            ));
        }
    }
    if transform.table_history_ms < 0 {
        problems.push(pipeline.diagnostic("transform.table_history_ms", "cannot be negative", None));
    }
    problems
}

/// The transform planned against the topic's columns: unknown columns, bad syntax, a windowed
/// query where one is not possible yet.
async fn sql_problems(pipeline: &LoadedPipeline) -> Vec<Diagnostic> {
    let Ok(decoder) = topic_decoder(&pipeline.config) else {
        return Vec::new();
    };
    let Some(transform) = &pipeline.config.transform else {
        return sink_rows_problems(pipeline, &decoder.value_schema(), false);
    };
    let schema = decoder.schema();
    let columns: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let mut hint = format!("table `{}` has columns {}", transform.table, columns.join(", "));
    match table_schemas(&pipeline.config) {
        Ok(tables) => {
            for (name, schema) in tables {
                let columns: Vec<&str> =
                    schema.fields().iter().map(|f| f.name().as_str()).collect();
                hint.push_str(&format!(
                    "; table `{name}` has _key, _timestamp and {}",
                    columns.join(", ")
                ));
            }
        }
        Err(error) => {
            return vec![pipeline.diagnostic(
                "transform.tables",
                without_pipeline(error),
                Some("e.g. `schema: \"name:string,tier:string\"`".into()),
            )]
        }
    }
    match stream_schemas(&pipeline.config) {
        Ok(streams) => {
            for ((_, schema), stream) in streams.iter().zip(&transform.streams) {
                let columns: Vec<&str> =
                    schema.fields().iter().map(|f| f.name().as_str()).collect();
                hint.push_str(&format!(
                    "; stream `{}` has _key, _timestamp and {}",
                    stream.name,
                    columns.join(", ")
                ));
            }
        }
        Err(error) => {
            return vec![pipeline.diagnostic(
                "transform.streams",
                without_pipeline(error),
                Some("e.g. `schema: \"order:string,amount:double,time:timestamp\"`".into()),
            )]
        }
    }
    if weir_streams::job::stages::is_staged(&transform.sql) {
        hint.push_str(
            "; a WITH whose CTEs group or join runs as stages in `weir job run` only, \
             not in a pipeline's transform: run it as a job reading the pipeline's topic",
        );
    }
    match planned_transform(&pipeline.config, &decoder).await {
        Ok(Some(planned)) => {
            sink_rows_problems(pipeline, &planned.output_schema(), emits_changes(&planned))
        }
        Ok(None) => Vec::new(),
        Err(error) => vec![pipeline.diagnostic("transform.sql", without_pipeline(error), Some(hint))],
    }
}

/// What each sink says of the rows it would be given (an updating aggregate's changes when
/// `changes`): a key column that is not among them, for one.
fn sink_rows_problems(
    pipeline: &LoadedPipeline,
    rows: &arrow::datatypes::Schema,
    changes: bool,
) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    for (index, sink) in pipeline.config.sinks.iter().enumerate() {
        let found = sink.connector().rows_problems(rows, changes);
        problems.extend(connector_problems(pipeline, &format!("sinks[{index}]"), found));
    }
    problems
}

/// The error's message without the pipeline's name (the diagnostic names it).
fn without_pipeline(error: PipelineError) -> String {
    match error {
        PipelineError::Streams { source, .. } => source.to_string(),
        PipelineError::Stage { message, .. } => message,
        other => other.to_string(),
    }
}

async fn reachability_problems(pipeline: &LoadedPipeline) -> Vec<Diagnostic> {
    let config = &pipeline.config;
    let mut problems = Vec::new();
    if let Some(bootstrap) = &config.bootstrap {
        let client = config.client(bootstrap);
        let topic = config.topic_name();
        let reached = tokio::task::block_in_place(|| client.reach_for(&[&topic], REACH_TIMEOUT));
        if let Err(unreached) = reached {
            problems.push(pipeline.diagnostic(
                "bootstrap",
                format!("cluster {bootstrap} cannot be used: {}", unreached.message),
                Some(unreached.hint.unwrap_or_else(|| {
                    "leave `bootstrap` out to run on an embedded broker".into()
                })),
            ));
        }
    }
    let source = config.source.connector();
    if let Err(unreachable) = tokio::task::block_in_place(|| source.reach(REACH_TIMEOUT)) {
        problems.push(pipeline.diagnostic(
            &format!("source.{}", unreachable.field),
            unreachable.message,
            unreachable.hint,
        ));
    }
    for (index, sink) in config.sinks.iter().enumerate() {
        if let Err(unreachable) = sink.connector().reach(REACH_TIMEOUT).await {
            problems.push(pipeline.diagnostic(
                &format!("sinks[{index}].{}", unreachable.field),
                unreachable.message,
                unreachable.hint,
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests;
