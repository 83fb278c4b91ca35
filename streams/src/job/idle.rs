//! Which of a copy's input partitions are idle (`crate::watermark`): an owned input partition
//! that brought no record for the idle timeout is announced once to every state partition, and
//! again after it had records (its event time, sent with them, ends its idleness there).
//!
//! Measured by the copy that owns the partition, on its own clock, from its last record (or
//! from the assignment). A partition whose records the consumer has not fetched for that long
//! looks idle too — as a split does in Flink — so the timeout should be well above the
//! checkpoint interval.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use crate::job::poll::Polled;

pub(super) struct IdleInputs {
    timeout: Option<Duration>,
    /// Owned input partitions (input, partition) and when each last had a record.
    last_record: HashMap<(usize, i32), Instant>,
    announced: BTreeSet<(usize, i32)>,
}

impl IdleInputs {
    pub(super) fn new(timeout_ms: Option<u64>) -> Self {
        IdleInputs {
            timeout: timeout_ms.map(Duration::from_millis),
            last_record: HashMap::new(),
            announced: BTreeSet::new(),
        }
    }

    /// After a rebalance: the partitions now owned, each counting from `now`.
    pub(super) fn assigned(&mut self, owned: &[(usize, i32)], now: Instant) {
        self.last_record = owned.iter().map(|source| (*source, now)).collect();
        self.announced.clear();
    }

    /// The owned input partitions that became idle with this checkpoint's records.
    pub(super) fn newly_idle(&mut self, polled: &Polled, now: Instant) -> Vec<(usize, i32)> {
        let Some(timeout) = self.timeout else {
            return Vec::new();
        };
        for (input, (_, records)) in polled.inputs.iter().enumerate() {
            let mut previous = None;
            for record in records {
                // Records come in runs of one partition: each run is looked up once.
                if previous == Some(record.partition) {
                    continue;
                }
                previous = Some(record.partition);
                let source = (input, record.partition);
                if let Some(last) = self.last_record.get_mut(&source) {
                    *last = now;
                    self.announced.remove(&source);
                }
            }
        }
        let mut idle: Vec<(usize, i32)> = self
            .last_record
            .iter()
            .filter(|(source, last)| {
                now.duration_since(**last) >= timeout && !self.announced.contains(source)
            })
            .map(|(source, _)| *source)
            .collect();
        idle.sort_unstable();
        self.announced.extend(idle.iter().copied());
        idle
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::InputRecord;

    fn polled(partitions: &[i32]) -> Polled {
        let records = partitions
            .iter()
            .map(|p| InputRecord {
                key: None,
                value: None,
                partition: *p,
                offset: 0,
                timestamp_ms: 0,
                headers: None,
            })
            .collect();
        Polled {
            inputs: vec![("in".into(), records)],
            ..Polled::default()
        }
    }

    #[test]
    fn a_partition_without_records_for_the_timeout_is_announced_once_until_it_has_records() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut idle = IdleInputs::new(Some(1000));
        idle.assigned(&[(0, 0), (0, 1)], start);
        assert!(idle.newly_idle(&polled(&[0, 1]), at(500)).is_empty());
        assert!(idle.newly_idle(&polled(&[0]), at(1200)).is_empty());
        assert_eq!(idle.newly_idle(&polled(&[0]), at(1600)), [(0, 1)]);
        assert!(idle.newly_idle(&polled(&[0]), at(2600)).is_empty(), "once");
        assert!(idle.newly_idle(&polled(&[1]), at(2700)).is_empty());
        assert_eq!(idle.newly_idle(&polled(&[]), at(3700)), [(0, 0), (0, 1)]);
        // A partition not owned (records polled before a rebalance) is no concern.
        assert!(idle.newly_idle(&polled(&[7]), at(9000)).is_empty());
        assert!(IdleInputs::new(None)
            .newly_idle(&polled(&[]), at(9000))
            .is_empty());
    }
}
