use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;

fn parse(format: LogFormat, line: &str) -> Result<Value, ParseError> {
    let mut out = Vec::new();
    format.parse_into(line, &mut out)?;
    Ok(serde_json::from_slice(&out).expect("parsed records are JSON"))
}

#[test]
fn nginx_combined_line() {
    let line = r#"203.0.113.9 - alice [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?a=1&b=2 HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)""#;
    assert_eq!(
        parse(LogFormat::NginxCombined, line).unwrap(),
        json!({
            "timestamp": 971211336000i64, "remote_addr": "203.0.113.9", "remote_user": "alice",
            "method": "GET", "path": "/apache_pb.gif", "query": "a=1&b=2", "protocol": "HTTP/1.0",
            "status": 200, "bytes": 2326, "referrer": "http://www.example.com/start.html",
            "user_agent": "Mozilla/4.08 [en] (Win98; I ;Nav)", "request_time": null
        })
    );
}

#[test]
fn dashes_empty_fields_ipv6_and_request_time() {
    let line = r#"2001:db8::1 - - [29/Nov/2026:23:59:59 +0000] "POST /api/v1/items HTTP/2.0" 201 - "" "-" 0.042"#;
    let parsed = parse(LogFormat::NginxCombined, line).unwrap();
    assert_eq!(parsed["remote_addr"], "2001:db8::1");
    assert_eq!(parsed["remote_user"], Value::Null);
    assert_eq!(parsed["bytes"], 0);
    assert_eq!(parsed["referrer"], Value::Null);
    assert_eq!(parsed["user_agent"], Value::Null);
    assert_eq!(parsed["request_time"], 0.042);
    assert_eq!(parsed["query"], Value::Null);
    assert_eq!(parsed["timestamp"], 1_795_996_799_000i64);
}

#[test]
fn escaped_quotes_in_user_agent_and_path() {
    let nginx = r#"10.0.0.1 - - [01/Jan/2026:00:00:00 +0100] "GET /search?q=\x22rust\x22 HTTP/1.1" 200 10 "-" "Agent \x22quoted\x22""#;
    let parsed = parse(LogFormat::NginxCombined, nginx).unwrap();
    assert_eq!(parsed["query"], "q=\"rust\"");
    assert_eq!(parsed["user_agent"], "Agent \"quoted\"");
    assert_eq!(parsed["timestamp"], 1_767_222_000_000i64);
    let apache = r#"10.0.0.1 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/1.1" 200 10 "-" "say \"hi\" \\ bye""#;
    assert_eq!(
        parse(LogFormat::ApacheCombined, apache).unwrap()["user_agent"],
        r#"say "hi" \ bye"#
    );
}

#[test]
fn odd_request_lines_are_kept_whole() {
    let garbage = r#"198.51.100.7 - - [01/Jan/2026:00:00:00 +0000] "\x16\x03\x01\x00\xA5\x01" 400 157 "-" "-""#;
    let parsed = parse(LogFormat::NginxCombined, garbage).unwrap();
    assert_eq!(parsed["method"], Value::Null);
    assert_eq!(parsed["status"], 400);
    assert!(parsed["path"].as_str().unwrap().starts_with('\u{16}'));
    let empty = r#"198.51.100.7 - - [01/Jan/2026:00:00:00 +0000] "-" 400 0 "-" "-""#;
    let parsed = parse(LogFormat::NginxCombined, empty).unwrap();
    assert_eq!(
        (parsed["method"].clone(), parsed["path"].clone()),
        (Value::Null, Value::Null)
    );
    let http09 = r#"198.51.100.7 - - [01/Jan/2026:00:00:00 +0000] "GET /" 200 5"#;
    let parsed = parse(LogFormat::ApacheCommon, http09).unwrap();
    assert_eq!(
        (parsed["method"].clone(), parsed["protocol"].clone()),
        (json!("GET"), Value::Null)
    );
}

#[test]
fn apache_common_has_no_referrer() {
    let line =
        r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#;
    let parsed = parse(LogFormat::ApacheCommon, line).unwrap();
    assert_eq!(parsed["remote_user"], "frank");
    assert_eq!(parsed["referrer"], Value::Null);
    let with_more = format!("{line} \"-\" \"curl\"");
    let error = parse(LogFormat::ApacheCommon, &with_more).unwrap_err();
    assert_eq!(error.column, line.len() + 2, "{error}");
}

#[test]
fn bad_lines_say_why_and_where() {
    let cases = [
        ("", "line ends before the remote address", 1),
        ("1.2.3.4 - -", "expected '[' before the time", 12),
        (
            "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700",
            "no closing ']'",
            13,
        ),
        (
            "1.2.3.4 - - [32/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 1",
            "not a valid date",
            14,
        ),
        (
            "1.2.3.4 - - [10/Foo/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 1",
            "is not dd/Mon",
            14,
        ),
        (
            "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1 200 1",
            "no closing '\"'",
            42,
        ),
        (
            "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 2000 1",
            "not a 3-digit",
            59,
        ),
        (
            "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 12x",
            "not a number",
            63,
        ),
        (
            "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 1 \"-\" \"a\" fast",
            "not a request time",
            73,
        ),
    ];
    for (line, reason, column) in cases {
        let error = parse(LogFormat::NginxCombined, line).unwrap_err();
        assert!(error.reason.contains(reason), "{line:?}: {error}");
        assert_eq!(error.column, column, "{line:?}: {error}");
    }
}

#[test]
fn json_and_raw_lines() {
    assert_eq!(
        parse(LogFormat::Json, r#" {"a": 1} "#).unwrap(),
        json!({"a": 1})
    );
    assert!(parse(LogFormat::Json, "[1]")
        .unwrap_err()
        .reason
        .contains("not a JSON object"));
    assert!(parse(LogFormat::Json, r#"{"a": }"#)
        .unwrap_err()
        .reason
        .contains("invalid JSON"));
    let mut out = Vec::new();
    LogFormat::Raw
        .parse_into("anything at all", &mut out)
        .unwrap();
    assert_eq!(out, b"anything at all");
}

#[test]
fn failed_parse_leaves_output_alone() {
    let mut out = b"kept".to_vec();
    assert!(LogFormat::NginxCombined
        .parse_into("nonsense", &mut out)
        .is_err());
    assert_eq!(out, b"kept");
}

proptest! {
    #[test]
    fn clf_time_round_trips(epoch_seconds in -2_000_000_000i64..8_000_000_000i64) {
        let text = format_clf_time(epoch_seconds * 1000);
        prop_assert_eq!(parse_clf_time(&text), Ok(epoch_seconds * 1000));
    }

    #[test]
    fn any_line_parses_or_errors_without_panicking(line in "\\PC{0,120}") {
        for format in [LogFormat::NginxCombined, LogFormat::ApacheCommon, LogFormat::Json] {
            let _ = parse(format, &line);
        }
    }

    #[test]
    fn generated_lines_parse_back(
        status in 100u16..600, bytes in 0u64..10_000_000, seconds in 0i64..4_000_000_000,
        path in "/[a-z0-9/._-]{0,30}", agent in "[ -~]{0,40}",
    ) {
        let escaped_agent = agent.replace('\\', "\\\\").replace('"', "\\\"");
        let line = format!(
            "192.0.2.1 - - [{}] \"GET {path} HTTP/1.1\" {status} {bytes} \"-\" \"{escaped_agent}\"",
            format_clf_time(seconds * 1000)
        );
        let parsed = parse(LogFormat::ApacheCombined, &line).unwrap();
        prop_assert_eq!(parsed["status"].as_u64(), Some(status as u64));
        prop_assert_eq!(parsed["bytes"].as_u64(), Some(bytes));
        prop_assert_eq!(parsed["timestamp"].as_i64(), Some(seconds * 1000));
        let expected_agent = if agent.is_empty() || agent == "-" { Value::Null } else { json!(agent) };
        prop_assert_eq!(&parsed["user_agent"], &expected_agent);
    }
}

/// Found by the `log_line` fuzz target: a multi-byte character straddling the time's fields
/// made the time parser slice inside it and panic (one bad line stopped a pipeline).
#[test]
fn a_multi_byte_character_inside_the_time_is_an_error_not_a_panic() {
    let line = "127.0.0.1 - frank [10/Oct/2000:13:55:36 -0\u{371}0] \"GET / HTTP/1.0\" 200 2686";
    let error = parse(LogFormat::ApacheCommon, line).unwrap_err();
    assert!(error.reason.contains("is not dd/Mon/yyyy"), "{error}");
    assert!(super::parse_clf_time("10/O\u{e9}t/2000:13:55:36 -0700").is_err());
}
