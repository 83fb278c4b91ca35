//! Golden tests of session windows: sessions merge across checkpoints and partitions, a gap
//! splits them, a record behind its partition's watermark is late, and the changelog (with the
//! tombstones of merged sessions) rebuilds the same state.

use super::*;

const QUERY: &str = "SELECT session(_timestamp, INTERVAL '30' SECOND) AS started, user, \
                            count(*) AS clicks, max(_timestamp) AS last_click \
                     FROM weblogs GROUP BY session(_timestamp, INTERVAL '30' SECOND), user";
const A: &str = r#"{"status": 200, "bytes": 10, "user": "a"}"#;
const B: &str = r#"{"status": 200, "bytes": 10, "user": "b"}"#;

/// Checkpoints 1 and 2 of the scenario: afterwards user a has one session [0, 50 s] (two
/// sessions merged by a record between them) and b's first session [5 s] was emitted.
async fn first_two_checkpoints(harness: &mut Harness) {
    // a: [0, 10 s] (ends 40 s) and [50 s] (ends 80 s): 40 s of silence apart. b: [5 s].
    let out = harness
        .checkpoint(&[(0, 0, A), (0, 5_000, B), (0, 10_000, A), (1, 50_000, A)])
        .await;
    assert_eq!(out, json(&[]), "watermark min(10, 50) s closes nothing");
    // 35 s is within 30 s of both of a's sessions: they become one. b's 36 s is one second past
    // the end of [5 s] (35 s): a new session. Watermark 36 s closes [5 s].
    let out = harness.checkpoint(&[(0, 35_000, A), (0, 36_000, B)]).await;
    assert_eq!(
        out,
        json(&[
            r#"{"started": "1970-01-01T00:00:05", "user": "b", "clicks": 1, "last_click": "1970-01-01T00:00:05"}"#
        ])
    );
}

#[tokio::test]
async fn sessions_merge_across_partitions_and_close_at_the_watermark() {
    let mut harness = Harness::new(QUERY, 0, A).await;
    first_two_checkpoints(&mut harness).await;
    assert_third_checkpoint_and_end(&mut harness).await;
}

async fn assert_third_checkpoint_and_end(harness: &mut Harness) {
    // 20 s on partition 1 is behind its watermark (50 s): late, although a's session is open.
    // Watermark min(100, 90) s closes a's [0, 50 s] (ends 80 s) and b's [36 s] (ends 66 s).
    let out = harness
        .checkpoint(&[(1, 20_000, A), (0, 100_000, A), (1, 90_000, B)])
        .await;
    assert_eq!(
        out,
        json(&[
            r#"{"started": "1970-01-01T00:00:00", "user": "a", "clicks": 4, "last_click": "1970-01-01T00:00:50"}"#,
            r#"{"started": "1970-01-01T00:00:36", "user": "b", "clicks": 1, "last_click": "1970-01-01T00:00:36"}"#,
        ])
    );
    assert_eq!(harness.late, [(1, 1)]);
    assert_eq!(harness.store.open_windows(), 2);
    // A bounded run's end closes the two sessions still open.
    let out = harness.end_of_input(&[0, 1]).await;
    assert_eq!(
        out,
        json(&[
            r#"{"started": "1970-01-01T00:01:30", "user": "b", "clicks": 1, "last_click": "1970-01-01T00:01:30"}"#,
            r#"{"started": "1970-01-01T00:01:40", "user": "a", "clicks": 1, "last_click": "1970-01-01T00:01:40"}"#,
        ])
    );
    assert_eq!(
        (harness.store.open_windows(), harness.store.entries()),
        (0, 0)
    );
}

/// A store rebuilt from the changelog written so far — a merged session's tombstone included —
/// holds the same sessions and emits the same rows.
#[tokio::test]
async fn sessions_restored_from_the_changelog_emit_the_same() {
    let mut harness = Harness::new(QUERY, 0, A).await;
    first_two_checkpoints(&mut harness).await;
    harness.restore_from_changelog();
    assert_third_checkpoint_and_end(&mut harness).await;
}

#[tokio::test]
async fn a_session_needs_a_positive_gap_in_days_or_less() {
    let records = [record(0, 0, 0, A)];
    let schema = RecordDecoder::infer(&records).unwrap();
    let decoder = RecordDecoder::new(ValueFormat::Json, Some(schema)).unwrap();
    for (gap, expected) in [
        ("1 month", "months"),
        ("0 seconds", "at least one millisecond"),
    ] {
        let query = format!(
            "SELECT session(_timestamp, INTERVAL '{gap}'), count(*) FROM weblogs \
             GROUP BY session(_timestamp, INTERVAL '{gap}')"
        );
        let error = match SqlTransform::new(&[("weblogs", decoder.schema())], &query).await {
            Ok(_) => panic!("accepted: {query}"),
            Err(error) => error.to_string(),
        };
        assert!(error.contains(expected), "{query}: {error}");
    }
}

/// A copy owning both state partitions emits by the smaller of their watermarks: at the end of
/// the input, a partition whose own sessions end earlier (or that has none left) must not hold
/// the other's last sessions back — every session comes out, none stays open.
#[tokio::test]
async fn the_end_of_input_closes_the_sessions_of_every_owned_partition() {
    let mut harness = Harness::new(QUERY, 0, A).await;
    harness.store.set_owned(vec![0, 1]);
    // Eight users (their sessions spread over both state partitions), one click each, 10 s
    // apart: each a session of its own, ending at different times.
    let users: Vec<String> = (0..8)
        .map(|user| format!(r#"{{"status": 200, "bytes": 10, "user": "u{user}"}}"#))
        .collect();
    let rows: Vec<(i32, i64, &str)> = users
        .iter()
        .enumerate()
        .map(|(user, value)| ((user % 2) as i32, 10_000 * user as i64, value.as_str()))
        .collect();
    let mut out = harness.checkpoint(&rows).await;
    out.extend(harness.end_of_input(&[0, 1]).await);
    let mut started: Vec<&str> = out
        .iter()
        .map(|row| row["user"].as_str().unwrap())
        .collect();
    started.sort_unstable();
    assert_eq!(started, ["u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7"]);
    assert_eq!(
        (harness.store.open_windows(), harness.store.entries()),
        (0, 0)
    );
}
