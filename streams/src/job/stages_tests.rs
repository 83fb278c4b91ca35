//! How a query with a `WITH` is split into stages.

use crate::job::purge::Purge;
use crate::job::stages::{plan, purges, results_topic};
use crate::job::{JobConfig, JobMetrics};

fn job(inputs: &[&str], query: &str) -> JobConfig {
    let mut config = JobConfig::new("q5", "127.0.0.1:9092", inputs[0], "out", query);
    config.inputs = inputs.iter().map(|i| i.to_string()).collect();
    config
}

const Q5: &str = r#"WITH counts AS (SELECT auction, count(*) AS num, CAST(hop("dateTime", INTERVAL '2' SECOND, INTERVAL '10' SECOND) AS BIGINT) AS starttime FROM "nexmark-bid" GROUP BY auction, hop("dateTime", INTERVAL '2' SECOND, INTERVAL '10' SECOND)),
  maxes AS (SELECT max(num) AS maxn, starttime FROM counts GROUP BY starttime, tumble(_timestamp, INTERVAL '2' SECOND))
SELECT c.auction, c.num FROM counts c JOIN maxes m ON c.starttime = m.starttime AND m._timestamp BETWEEN c._timestamp AND c._timestamp WHERE c.num >= m.maxn"#;

#[test]
fn each_grouping_or_joining_cte_is_a_stage_reading_the_ones_it_names() {
    let stages = plan(&job(&["nexmark-bid"], Q5)).unwrap().expect("stages");
    let summary: Vec<_> = stages
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.inputs.clone(),
                s.input_names.clone(),
                s.output.as_str(),
            )
        })
        .collect();
    let counts = results_topic("q5-counts");
    let maxes = results_topic("q5-maxes");
    assert_eq!(
        summary,
        vec![
            (
                "q5-counts",
                vec!["nexmark-bid".to_string()],
                vec!["nexmark-bid".to_string()],
                counts.as_str()
            ),
            (
                "q5-maxes",
                vec![counts.clone()],
                vec!["counts".to_string()],
                maxes.as_str()
            ),
            (
                "q5",
                vec![counts.clone(), maxes.clone()],
                vec!["counts".to_string(), "maxes".to_string()],
                "out"
            ),
        ]
    );
    assert!(
        stages[0].query.starts_with("SELECT auction, count(*)"),
        "{}",
        stages[0].query
    );
    assert!(
        stages[1].query.contains("FROM counts GROUP BY starttime"),
        "{}",
        stages[1].query
    );
    assert!(
        stages[2]
            .query
            .starts_with("SELECT c.auction, c.num FROM counts c JOIN maxes m"),
        "{}",
        stages[2].query
    );
}

#[test]
fn a_query_without_a_grouping_cte_is_one_stage() {
    let filtered = r#"WITH big AS (SELECT auction, price FROM "nexmark-bid" WHERE price > 100) SELECT auction FROM big"#;
    assert!(plan(&job(&["nexmark-bid"], filtered)).unwrap().is_none());
    let plain = r#"SELECT auction, count(*) FROM "nexmark-bid" GROUP BY auction"#;
    assert!(plan(&job(&["nexmark-bid"], plain)).unwrap().is_none());
    assert!(plan(&job(&["nexmark-bid"], "not sql at all"))
        .unwrap()
        .is_none());
}

#[test]
fn a_stateless_cte_is_carried_into_the_stages_that_read_it() {
    let query = r#"WITH big AS (SELECT auction, price, "dateTime" FROM "nexmark-bid" WHERE price > 100),
        unused AS (SELECT 1 AS one FROM "nexmark-bid"),
        per_auction AS (SELECT auction, count(*) AS n FROM big GROUP BY auction, tumble("dateTime", INTERVAL '10' SECOND))
        SELECT auction, n FROM per_auction WHERE n > 1"#;
    let stages = plan(&job(&["nexmark-bid"], query))
        .unwrap()
        .expect("stages");
    assert_eq!(stages.len(), 2);
    assert!(
        stages[0].query.starts_with("WITH big AS ("),
        "{}",
        stages[0].query
    );
    assert!(!stages[0].query.contains("unused"), "{}", stages[0].query);
    assert_eq!(stages[0].inputs, vec!["nexmark-bid"]);
    assert_eq!(stages[1].inputs, vec![results_topic("q5-per_auction")]);
    assert_eq!(
        stages[1].query,
        "SELECT auction, n FROM per_auction WHERE n > 1"
    );
}

#[test]
fn tables_schemas_and_formats_go_to_the_stages_that_read_them() {
    let query = r#"WITH hot AS (SELECT auction, count(*) AS n, CAST(tumble("dateTime", INTERVAL '10' SECOND) AS BIGINT) AS w FROM bids GROUP BY auction, tumble("dateTime", INTERVAL '10' SECOND))
        SELECT h.auction, h.n, a.category FROM hot h JOIN auctions a ON h.auction = a._key"#;
    let mut config = job(&["nexmark-bid"], query);
    config.table = Some("bids".into());
    config.tables = vec![("auctions".into(), "nexmark-auction".into())];
    config.schema = Some(crate::io::decode::parse_schema("auction:int,dateTime:int").unwrap());
    let stages = plan(&config).unwrap().expect("stages");
    assert_eq!(stages[0].input_names, vec!["bids"]);
    assert!(stages[0].tables.is_empty());
    assert!(stages[0].input_schemas.contains_key("nexmark-bid"));
    assert!(stages[0].schema.is_none() && stages[1].schema.is_none());
    assert_eq!(
        stages[1].tables,
        vec![("auctions".to_string(), "nexmark-auction".to_string())]
    );
    assert!(
        stages[1].input_schemas.is_empty(),
        "the results are inferred, not --schema"
    );
}

#[test]
fn a_results_topic_read_as_a_stream_is_purged_below_every_reading_stage() {
    let stages = plan(&job(&["nexmark-bid"], Q5)).unwrap().expect("stages");
    assert_eq!(
        purges(&stages),
        vec![
            Purge {
                topic: results_topic("q5-counts"),
                readers: vec!["q5-maxes".to_string(), "q5".to_string()],
            },
            Purge {
                topic: results_topic("q5-maxes"),
                readers: vec!["q5".to_string()],
            },
        ]
    );
    // An updating aggregate's results are a table (compacted, loaded whole): never purged.
    let q4 = r#"WITH prices AS (SELECT auction, max(price) AS top FROM "nexmark-bid" GROUP BY auction)
        SELECT count(*) AS n FROM "nexmark-bid" b JOIN prices p ON b.auction = p._key GROUP BY tumble(b._timestamp, INTERVAL '1' SECOND)"#;
    if let Ok(Some(stages)) = plan(&job(&["nexmark-bid"], q4)) {
        assert_eq!(
            purges(&stages),
            vec![],
            "{:?}",
            stages.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
    }
}

#[test]
fn refused_with_the_reason() {
    let recursive = r#"WITH RECURSIVE c AS (SELECT auction, count(*) AS n FROM "nexmark-bid" GROUP BY auction) SELECT * FROM c"#;
    let error = plan(&job(&["nexmark-bid"], recursive))
        .unwrap_err()
        .to_string();
    assert!(error.contains("RECURSIVE"), "{error}");
    let orphan = r#"WITH c AS (SELECT auction, count(*) AS n FROM "nexmark-bid" GROUP BY auction) SELECT 1 AS one"#;
    let error = plan(&job(&["nexmark-bid"], orphan))
        .unwrap_err()
        .to_string();
    assert!(error.contains("final SELECT reads none"), "{error}");
    let mut raw = job(
        &["a", "b"],
        r#"WITH c AS (SELECT value, count(*) AS n FROM a GROUP BY value) SELECT * FROM c JOIN b ON c.value = b.value"#,
    );
    raw.input_format = crate::record::ValueFormat::Raw;
    let error = plan(&raw).unwrap_err().to_string();
    assert!(error.contains("raw input"), "{error}");
    // A raw table beside a stage's results would be decoded as JSON: refused too.
    let mut raw_table = job(
        &["a"],
        r#"WITH c AS (SELECT value, count(*) AS n FROM a GROUP BY value) SELECT * FROM c JOIN t ON c.value = t._key"#,
    );
    raw_table.input_format = crate::record::ValueFormat::Raw;
    raw_table.tables = vec![("t".to_string(), "t-topic".to_string())];
    let error = plan(&raw_table).unwrap_err().to_string();
    assert!(error.contains("raw input or table"), "{error}");
}

#[test]
fn the_stages_metrics_render_as_one_text_each_family_once() {
    let all = [
        JobMetrics::new("q5-counts", "0"),
        JobMetrics::new("q5", "0"),
    ];
    let text = JobMetrics::render_all(&all);
    let family = "# TYPE weir_job_checkpoints_total counter";
    assert_eq!(text.matches(family).count(), 1, "{text}");
    assert!(
        text.contains(r#"weir_job_checkpoints_total{instance="0",job="q5-counts"} 0"#),
        "{text}"
    );
    assert!(
        text.contains(r#"weir_job_checkpoints_total{instance="0",job="q5"} 0"#),
        "{text}"
    );
}

#[test]
fn an_updating_aggregate_is_read_as_a_table_the_others_as_streams() {
    let query = r#"WITH joined AS (SELECT a.id, a.category, b.price FROM "nexmark-auction" a JOIN "nexmark-bid" b
            ON a.id = b.auction AND b._timestamp BETWEEN a._timestamp AND a._timestamp + INTERVAL '10' SECOND),
        maxes AS (SELECT id, category, max(price) AS final FROM joined GROUP BY id, category),
        hourly AS (SELECT category, count(*) AS n FROM joined GROUP BY category, TUMBLE(_timestamp, INTERVAL '1' HOUR))
        SELECT category, avg(final) AS avg_final FROM maxes GROUP BY category"#;
    let stages = plan(&job(&["nexmark-auction", "nexmark-bid"], query))
        .unwrap()
        .expect("stages");
    let names: Vec<&str> = stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["q5-joined", "q5-maxes", "q5-hourly", "q5"]);
    assert!(stages[0].output_in_chunks, "a join's results are a stream");
    assert!(
        !stages[1].output_in_chunks,
        "an updating aggregate's upserts stay records"
    );
    assert!(
        stages[2].output_in_chunks,
        "a window's results are a stream"
    );
    assert_eq!(stages[1].inputs, vec![results_topic("q5-joined")]);
    assert!(stages[1]
        .inputs_in_chunks
        .contains(&results_topic("q5-joined")));
    assert!(stages[3].inputs.is_empty());
    assert_eq!(
        stages[3].tables,
        vec![("maxes".to_string(), results_topic("q5-maxes"))]
    );
    assert!(
        stages[3].resolved().table_as_input,
        "aggregating a table alone: its changes"
    );
}
