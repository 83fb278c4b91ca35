use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::*;
use crate::source::{Source, SourceRecord};
use crate::weblog::LogFormat;

fn config(pattern: &Path) -> FileSourceConfig {
    let mut config = FileSourceConfig::new(&[pattern.to_str().unwrap()], LogFormat::Raw);
    config.scan_interval_ms = 1;
    config.rotate_wait_ms = 0;
    config
}

fn append(path: &Path, text: &str) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// Everything the source hands out until it has nothing more (a few idle polls).
fn drain(source: &mut FileSource) -> Vec<SourceRecord> {
    let mut out = Vec::new();
    let mut idle = 0;
    while idle < 3 {
        let before = out.len();
        source
            .poll(1000, Duration::from_millis(5), &mut out)
            .unwrap();
        idle = if out.len() == before { idle + 1 } else { 0 };
    }
    out
}

fn lines(records: &[SourceRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| String::from_utf8(r.value.clone()).unwrap())
        .collect()
}

/// Applies position updates the way the pipeline's compacted positions topic would.
fn commit(source: &mut FileSource, committed: &mut HashMap<String, Vec<u8>>) {
    for update in source.take_positions().unwrap() {
        match update.value {
            Some(value) => committed.insert(update.key, value),
            None => committed.remove(&update.key),
        };
    }
}

fn restart(config: &FileSourceConfig, committed: &HashMap<String, Vec<u8>>) -> FileSource {
    let mut source = FileSource::new(config.clone()).unwrap();
    source.restore(committed).unwrap();
    source
}

#[test]
fn partial_lines_wait_and_restart_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    append(&log, "one\r\ntwo\nthr");
    let config = config(&log);
    let mut committed = HashMap::new();
    let mut source = restart(&config, &committed);
    assert_eq!(lines(&drain(&mut source)), ["one", "two"]);
    commit(&mut source, &mut committed);
    append(&log, "ee\nfour\n");
    assert_eq!(lines(&drain(&mut source)), ["three", "four"]);
    // Not committed: a restart hands them out again, and nothing before them.
    let mut source = restart(&config, &committed);
    assert_eq!(lines(&drain(&mut source)), ["three", "four"]);
    commit(&mut source, &mut committed);
    let mut source = restart(&config, &committed);
    assert!(drain(&mut source).is_empty());
}

#[test]
fn rotation_by_rename_reads_the_old_file_to_its_end_then_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    append(&log, "a1\na2\n");
    let mut committed = HashMap::new();
    let mut source = restart(&config(&log), &committed);
    assert_eq!(lines(&drain(&mut source)), ["a1", "a2"]);
    commit(&mut source, &mut committed);
    // The server writes a last line to the renamed file, then reopens its log.
    fs::rename(&log, dir.path().join("access.log.1")).unwrap();
    append(&dir.path().join("access.log.1"), "a3\n");
    append(&log, "b1\n");
    let mut got = lines(&drain(&mut source));
    got.sort();
    assert_eq!(got, ["a3", "b1"]);
    commit(&mut source, &mut committed);
    assert_eq!(
        committed.len(),
        1,
        "the finished file's position is forgotten"
    );
}

#[test]
fn a_file_renamed_while_down_is_found_by_its_inode() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    append(&log, "a1\n");
    let mut committed = HashMap::new();
    let config = config(&log);
    let mut source = restart(&config, &committed);
    assert_eq!(lines(&drain(&mut source)), ["a1"]);
    commit(&mut source, &mut committed);
    drop(source);
    append(&log, "a2\n");
    fs::rename(&log, dir.path().join("access.log.1")).unwrap();
    append(&log, "b1\n");
    let mut source = restart(&config, &committed);
    let mut got = lines(&drain(&mut source));
    got.sort();
    assert_eq!(got, ["a2", "b1"]);
}

#[test]
fn copytruncate_starts_the_file_over() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    append(&log, "old line one\nold line two\n");
    let mut source = restart(&config(&log), &HashMap::new());
    assert_eq!(drain(&mut source).len(), 2);
    fs::copy(&log, dir.path().join("access.log.1")).unwrap();
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&log)
        .unwrap();
    append(&log, "new\n");
    assert_eq!(lines(&drain(&mut source)), ["new"]);
}

#[test]
fn a_replaced_file_is_not_resumed_at_the_old_position() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    append(&log, &"x".repeat(2000));
    append(&log, "\n");
    let config = config(&log);
    let mut committed = HashMap::new();
    let mut source = restart(&config, &committed);
    assert_eq!(drain(&mut source).len(), 1);
    commit(&mut source, &mut committed);
    // Same inode, different content of the same length or longer: not the same file.
    fs::write(&log, format!("{}\nnext\n", "y".repeat(2000))).unwrap();
    let mut source = restart(&config, &committed);
    assert_eq!(drain(&mut source).len(), 2);
}

#[test]
fn long_lines_are_cut_once_even_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let mut config = config(&log);
    config.max_line_bytes = 10;
    append(&log, "short\n");
    append(&log, &"z".repeat(100_000));
    let mut committed = HashMap::new();
    let mut source = restart(&config, &committed);
    let records = drain(&mut source);
    assert_eq!(records.len(), 2);
    assert_eq!(records[1].value, b"zzzzzzzzzz");
    assert!(records[1]
        .problem
        .as_deref()
        .unwrap()
        .contains("longer than 10 bytes"));
    commit(&mut source, &mut committed);
    append(&log, "zzz\nafter\n");
    let mut source = restart(&config, &committed);
    assert_eq!(lines(&drain(&mut source)), ["after"]);
}

#[test]
fn start_at_end_skips_what_is_there_at_the_first_start() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    append(&log, "before\n");
    let mut config = config(&log);
    config.start_at = StartAt::End;
    let mut source = restart(&config, &HashMap::new());
    assert!(drain(&mut source).is_empty());
    append(&log, "after\n");
    assert_eq!(lines(&drain(&mut source)), ["after"]);
}

#[test]
fn globs_match_several_files_and_exclude_compressed_ones() {
    let dir = tempfile::tempdir().unwrap();
    append(&dir.path().join("a.log"), "a\n");
    append(&dir.path().join("b.log"), "b\n");
    append(&dir.path().join("c.log.gz"), "binary\n");
    let mut source = restart(&config(&dir.path().join("*.log*")), &HashMap::new());
    let mut got = lines(&drain(&mut source));
    got.sort();
    assert_eq!(got, ["a", "b"]);
    assert!(FileSource::new(FileSourceConfig::new(&["[unclosed"], LogFormat::Raw)).is_err());
}
