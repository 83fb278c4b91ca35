//! A job's or a pipeline's error ends `weir` with an exit status that says what can be done
//! (README "Exit status"): 78 when the configuration or query must change, 75 when running
//! again may pass, 70 for a defect — and a `hint:` line saying so.

use std::process::{Command, Output};

use crate::support::broker::BrokerProcess;

fn weir(arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(arguments)
        .env("RUST_LOG", "off")
        .output()
        .expect("weir runs")
}

fn assert_needs_a_change(output: &Output, names: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{stderr}");
    assert!(stderr.contains(names), "the error names {names}: {stderr}");
    assert!(
        stderr.contains("hint: this needs a change"),
        "a hint line: {stderr}"
    );
}

#[test]
fn a_pipeline_or_job_that_cannot_run_as_configured_exits_78_with_a_hint() {
    let _slot = crate::support::test_slot();
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("bad.yaml");
    std::fs::write(
        &pipeline,
        "name: bad\nsource:\n  kind: generator\nsinks:\n  - kind: nosuch\n",
    )
    .unwrap();
    let path = pipeline.to_str().unwrap();
    assert_needs_a_change(
        &weir(&["pipeline", "run", path]),
        "unknown variant `nosuch`",
    );
    assert_needs_a_change(
        &weir(&["pipeline", "validate", path]),
        "unknown variant `nosuch`",
    );

    let broker = BrokerProcess::start();
    let bootstrap = broker.bootstrap();
    broker.create_topic("clicks", 1);
    let job = |schema: &str, query: &str| {
        weir(&[
            "job",
            "run",
            "--bootstrap",
            &bootstrap,
            "--name",
            "exit-status",
            "--input",
            "clicks",
            "--output",
            "out",
            "--schema",
            schema,
            "--query",
            query,
        ])
    };
    assert_needs_a_change(
        &job("id:int", "SELECT nosuch FROM clicks"),
        "No field named nosuch",
    );
    assert_needs_a_change(
        &job("id", "SELECT * FROM clicks"),
        "schema column \"id\" is not name:type",
    );
}
