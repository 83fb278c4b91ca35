//! A history checker in the style of Jepsen's Kafka checker: what clients were told about their
//! writes against what readers saw, looking for
//! - **lost writes**: a write acknowledged (alone or by its transaction's commit) but never read;
//! - **aborted reads**: a read_committed reader saw a write of an aborted transaction;
//! - **torn transactions**: a transaction whose outcome the client never learned is visible in
//!   part (transactions are all or nothing);
//! - **duplicates**: one written value at two offsets;
//! - **inconsistent offsets**: one offset read with two different values, or an acknowledged
//!   offset holding another value than the one acknowledged there;
//! - **vanished reads** (`History::vanished`): a record a reader saw that a later full read no
//!   longer holds — readers must only ever see committed records.
//!
//! Every written value is unique, so a value names its write.

use std::collections::{BTreeMap, HashMap, HashSet};

/// What the client was told about a transaction (or a single idempotent write).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The commit (or the write's ack) succeeded.
    Committed,
    /// The abort succeeded.
    Aborted,
    /// An error, a timeout or a crash: either may have happened.
    Unknown,
}

/// One transaction of `values` (partition, value); an idempotent write is a transaction of one.
#[derive(Debug, Clone)]
pub(crate) struct Txn {
    pub writes: Vec<(i32, String)>,
    pub outcome: Outcome,
    /// (partition, offset) the broker acknowledged for each write, when it said.
    pub acked_offsets: Vec<(i32, i64, String)>,
}

/// One pass of a reader over every partition: (partition, offset, value) in the order read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Read {
    pub read_committed: bool,
    pub records: Vec<(i32, i64, String)>,
}

#[derive(Debug, Default)]
pub(crate) struct History {
    pub txns: Vec<Txn>,
    pub reads: Vec<Read>,
}

/// The anomalies found, each with an example.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Anomalies {
    pub lost: Vec<String>,
    pub aborted_reads: Vec<String>,
    pub torn: Vec<String>,
    pub duplicates: Vec<String>,
    pub inconsistent_offsets: Vec<String>,
}

impl Anomalies {
    pub(crate) fn is_empty(&self) -> bool {
        *self == Anomalies::default()
    }
}

impl History {
    /// Checks the history; `final_read` (a read_committed pass after every transaction ended)
    /// decides what was lost and what was torn.
    pub(crate) fn check(&self, final_read: &Read) -> Anomalies {
        let mut anomalies = Anomalies::default();
        let all_reads: Vec<&Read> = self.reads.iter().chain([final_read]).collect();
        check_offsets(&all_reads, &self.txns, &mut anomalies);
        let visible: HashSet<&str> = final_read
            .records
            .iter()
            .map(|(_, _, v)| v.as_str())
            .collect();
        let committed_reads: Vec<&Read> = all_reads
            .iter()
            .copied()
            .filter(|r| r.read_committed)
            .collect();
        for txn in &self.txns {
            let seen = txn
                .writes
                .iter()
                .filter(|(_, v)| visible.contains(v.as_str()))
                .count();
            match txn.outcome {
                Outcome::Committed if seen < txn.writes.len() => {
                    anomalies.lost.push(describe(txn, seen));
                }
                Outcome::Unknown if seen != 0 && seen != txn.writes.len() => {
                    anomalies.torn.push(describe(txn, seen));
                }
                Outcome::Aborted => {
                    let aborted: HashSet<&str> =
                        txn.writes.iter().map(|(_, v)| v.as_str()).collect();
                    for read in &committed_reads {
                        if let Some((p, o, v)) = read
                            .records
                            .iter()
                            .find(|(_, _, v)| aborted.contains(v.as_str()))
                        {
                            anomalies
                                .aborted_reads
                                .push(format!("{v} (aborted) read committed at {p}/{o}"));
                            break;
                        }
                    }
                }
                _ => {}
            }
        }
        anomalies
    }
}

impl History {
    /// Records some read saw that `final_uncommitted` (a read_uncommitted pass at the end)
    /// no longer holds at the same offset.
    pub(crate) fn vanished(&self, final_uncommitted: &Read) -> Vec<String> {
        let last: HashSet<(i32, i64, &str)> = final_uncommitted
            .records
            .iter()
            .map(|(p, o, v)| (*p, *o, v.as_str()))
            .collect();
        let mut vanished: Vec<String> = self
            .reads
            .iter()
            .flat_map(|read| read.records.iter())
            .filter(|(p, o, v)| !last.contains(&(*p, *o, v.as_str())))
            .map(|(p, o, v)| format!("{v} was read at {p}/{o}"))
            .collect();
        vanished.sort();
        vanished.dedup();
        vanished
    }
}

fn describe(txn: &Txn, seen: usize) -> String {
    format!(
        "{} of {} writes visible, e.g. {:?} ({:?})",
        seen,
        txn.writes.len(),
        txn.writes.first().map(|(_, v)| v),
        txn.outcome
    )
}

/// Duplicates and inconsistent offsets, over every read and every acknowledged offset.
fn check_offsets(reads: &[&Read], txns: &[Txn], anomalies: &mut Anomalies) {
    let mut at_offset: BTreeMap<(i32, i64), &str> = BTreeMap::new();
    let mut offset_of: HashMap<&str, (i32, i64)> = HashMap::new();
    let mut reported: HashSet<String> = HashSet::new();
    let acked = txns.iter().flat_map(|t| t.acked_offsets.iter());
    let observed = reads.iter().flat_map(|r| r.records.iter());
    for (partition, offset, value) in acked.chain(observed) {
        let key = (*partition, *offset);
        match at_offset.get(&key) {
            Some(previous) if *previous != value => {
                let report = format!("{partition}/{offset} holds {previous} and {value}");
                if reported.insert(report.clone()) {
                    anomalies.inconsistent_offsets.push(report);
                }
            }
            Some(_) => {}
            None => {
                at_offset.insert(key, value);
            }
        }
        match offset_of.get(value.as_str()) {
            Some(first) if *first != key => {
                let report = format!(
                    "{value} at {}/{} and {partition}/{offset}",
                    first.0, first.1
                );
                if reported.insert(report.clone()) {
                    anomalies.duplicates.push(report);
                }
            }
            Some(_) => {}
            None => {
                offset_of.insert(value, key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(values: &[&str], outcome: Outcome) -> Txn {
        Txn {
            writes: values.iter().map(|v| (0, v.to_string())).collect(),
            outcome,
            acked_offsets: Vec::new(),
        }
    }

    fn read(committed: bool, records: &[(i64, &str)]) -> Read {
        Read {
            read_committed: committed,
            records: records
                .iter()
                .map(|(o, v)| (0, *o, v.to_string()))
                .collect(),
        }
    }

    fn history() -> History {
        History {
            txns: vec![
                txn(&["a1", "a2"], Outcome::Committed),
                txn(&["b1"], Outcome::Aborted),
                txn(&["c1", "c2"], Outcome::Unknown),
            ],
            reads: vec![read(false, &[(0, "a1"), (1, "a2"), (2, "b1")])],
        }
    }

    #[test]
    fn a_record_read_then_gone_has_vanished() {
        let history = history();
        let last = read(false, &[(0, "a1"), (1, "a2"), (2, "b1")]);
        assert!(history.vanished(&last).is_empty());
        let shorter = read(false, &[(0, "a1"), (1, "a2")]);
        assert_eq!(history.vanished(&shorter), vec!["b1 was read at 0/2"]);
    }

    #[test]
    fn a_correct_history_has_no_anomalies() {
        let h = history();
        let all = read(true, &[(0, "a1"), (1, "a2"), (4, "c1"), (5, "c2")]);
        assert!(h.check(&all).is_empty(), "{:?}", h.check(&all));
        let none_of_unknown = read(true, &[(0, "a1"), (1, "a2")]);
        assert!(h.check(&none_of_unknown).is_empty());
    }

    #[test]
    fn each_anomaly_is_found() {
        let h = history();
        let lost = h.check(&read(true, &[(0, "a1")]));
        assert_eq!(lost.lost.len(), 1);
        let aborted = h.check(&read(true, &[(0, "a1"), (1, "a2"), (2, "b1")]));
        assert_eq!(aborted.aborted_reads.len(), 1);
        let torn = h.check(&read(true, &[(0, "a1"), (1, "a2"), (4, "c1")]));
        assert_eq!(torn.torn.len(), 1);
        let duplicate = h.check(&read(true, &[(0, "a1"), (1, "a2"), (3, "a2")]));
        assert_eq!(duplicate.duplicates.len(), 1);
        let moved = h.check(&read(true, &[(0, "a1"), (1, "c1"), (4, "a2")]));
        assert!(!moved.inconsistent_offsets.is_empty());
    }

    #[test]
    fn an_acknowledged_offset_must_hold_the_acknowledged_value() {
        let mut h = history();
        h.txns[0].acked_offsets = vec![(0, 0, "a1".into()), (0, 1, "a2".into())];
        assert!(h.check(&read(true, &[(0, "a1"), (1, "a2")])).is_empty());
        h.txns[0].acked_offsets[1].1 = 7;
        let anomalies = h.check(&read(true, &[(0, "a1"), (1, "a2")]));
        assert_eq!(anomalies.duplicates.len(), 1, "a2 acked at 7, read at 1");
    }
}
