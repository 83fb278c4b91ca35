//! Golden tests of updating aggregates (`GROUP BY` without a window): every checkpoint emits the
//! groups it changed as upserts keyed by the group, whatever the event times; a group HAVING
//! leaves out becomes a tombstone; the changelog rebuilds the groups.

use super::*;

const QUERY: &str = "SELECT user, count(*) AS hits, sum(bytes) AS total FROM weblogs \
                     GROUP BY user HAVING count(*) < 3";
const A: &str = r#"{"status": 200, "bytes": 10, "user": "a"}"#;
const B: &str = r#"{"status": 404, "bytes": 5, "user": "b"}"#;

fn upsert(key: &str, value: &str) -> (String, Option<serde_json::Value>) {
    (key.to_string(), Some(serde_json::from_str(value).unwrap()))
}

#[tokio::test]
async fn changed_groups_are_upserts_and_a_group_having_drops_is_a_tombstone() {
    let mut harness = Harness::new(QUERY, 0, A).await;
    // Only partition 0 has records: no watermark is needed to emit.
    harness
        .checkpoint(&[(0, 1_000, A), (0, 2_000, A), (0, 3_000, B)])
        .await;
    assert_eq!(
        std::mem::take(&mut harness.updates),
        [
            upsert("a", r#"{"user": "a", "hits": 2, "total": 20}"#),
            upsert("b", r#"{"user": "b", "hits": 1, "total": 5}"#),
        ]
    );
    // An older event time counts all the same (no lateness); a reaches 3: HAVING drops it.
    harness.checkpoint(&[(1, 500, A)]).await;
    assert_eq!(
        std::mem::take(&mut harness.updates),
        [("a".to_string(), None)]
    );
    // A checkpoint that changes nothing emits nothing.
    harness.checkpoint(&[]).await;
    assert!(harness.updates.is_empty());

    // A store rebuilt from the changelog goes on from the same counts.
    harness.restore_from_changelog();
    harness.checkpoint(&[(1, 600, B), (0, 700, A)]).await;
    assert_eq!(
        std::mem::take(&mut harness.updates),
        [
            ("a".to_string(), None),
            upsert("b", r#"{"user": "b", "hits": 2, "total": 10}"#),
        ]
    );
}

#[tokio::test]
async fn several_keys_make_a_json_key_and_the_select_list_can_reorder_and_compute() {
    let query = "SELECT count(*) * 10 AS tens, status, user FROM weblogs GROUP BY user, status";
    let mut harness = Harness::new(query, 0, A).await;
    harness.checkpoint(&[(0, 1_000, A), (1, 1_000, B)]).await;
    let mut updates = std::mem::take(&mut harness.updates);
    updates.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        updates,
        [
            upsert(
                r#"["a",200]"#,
                r#"{"tens": 10, "status": 200, "user": "a"}"#
            ),
            upsert(
                r#"["b",404]"#,
                r#"{"tens": 10, "status": 404, "user": "b"}"#
            ),
        ]
    );
}
