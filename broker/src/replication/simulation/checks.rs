//! The simulation's invariants, checked against the replicas' real logs.

use std::collections::BTreeMap;

use super::{BROKERS, TOPIC};
use crate::log::batch::BatchIter;
use crate::partition::Partition;

/// A batch in a log: (offset, leader epoch, CRC of its content). One record per batch here,
/// and every produced value is distinct, so equal triples are the same record.
pub(super) type Entry = (i64, i32, u32);

/// Every batch of `partition`'s log.
pub(super) fn read_log(partition: &Partition) -> Vec<Entry> {
    let start = partition.offsets().log_start_offset;
    let read = partition
        .read_for_follower(start, usize::MAX / 2)
        .expect("the log reads");
    BatchIter::new(&read.records)
        .map(|batch| {
            let (_, header) = batch.expect("a well-formed batch");
            (
                header.base_offset,
                header.partition_leader_epoch,
                header.crc,
            )
        })
        .collect()
}

#[derive(Default)]
pub(super) struct Checker {
    /// Writes answered as acknowledged (acks=all), by offset.
    acknowledged: BTreeMap<i64, Entry>,
    /// The longest prefix any leader's high watermark covered: what is committed.
    committed: Vec<Entry>,
    /// Each leadership's high watermark so far, by (broker, leader epoch).
    leader_high_watermarks: BTreeMap<(i32, i32), i64>,
    /// Set when two different records were acknowledged at one offset.
    conflict: Option<String>,
}

impl Checker {
    pub(super) fn acknowledged(&mut self, offset: i64, leader_epoch: i32, crc: u32) {
        let entry = (offset, leader_epoch, crc);
        if let Some(earlier) = self.acknowledged.insert(offset, entry) {
            if earlier != entry && self.conflict.is_none() {
                self.conflict = Some(format!(
                    "two records acknowledged at offset {offset}: {earlier:?} and {entry:?}"
                ));
            }
        }
    }

    /// Whether broker `broker`'s leadership at `leader_epoch` was seen before.
    pub(super) fn is_leading(&self, broker: i32, leader_epoch: i32) -> bool {
        self.leader_high_watermarks
            .contains_key(&(broker, leader_epoch))
    }

    /// A replica begins leading with `log`: it must hold every acknowledged write.
    pub(super) fn new_leader(
        &self,
        broker: i32,
        leader_epoch: i32,
        log: &[Entry],
    ) -> Result<(), String> {
        for (offset, entry) in &self.acknowledged {
            if log.get(*offset as usize) != Some(entry) {
                return Err(format!(
                    "broker {broker} leads epoch {leader_epoch} without acknowledged write \
                     {entry:?} (it has {:?})",
                    log.get(*offset as usize)
                ));
            }
        }
        Ok(())
    }

    /// After every step: leaders' high watermarks only grow and extend the committed log,
    /// every replica agrees with it below its own high watermark, and every acknowledged
    /// write is committed.
    pub(super) fn check(&mut self, replicas: &[(i32, &Partition)]) -> Result<(), String> {
        if let Some(conflict) = &self.conflict {
            return Err(conflict.clone());
        }
        let logs: Vec<(i32, &Partition, Vec<Entry>)> = replicas
            .iter()
            .map(|(id, partition)| (*id, *partition, read_log(partition)))
            .collect();
        for (id, partition, log) in logs.iter().filter(|(_, p, _)| p.is_leader()) {
            let high_watermark = partition.high_watermark();
            let key = (*id, partition.leader_epoch());
            let previous = self.leader_high_watermarks.insert(key, high_watermark);
            if previous.is_some_and(|previous| previous > high_watermark) {
                return Err(format!(
                    "broker {id}'s high watermark moved back from {previous:?} to \
                     {high_watermark} in leader epoch {}",
                    key.1
                ));
            }
            let covered = &log[..(high_watermark.max(0) as usize).min(log.len())];
            agree(*id, covered, &self.committed)?;
            if covered.len() > self.committed.len() {
                self.committed = covered.to_vec();
            }
        }
        for (id, partition, log) in &logs {
            let high_watermark = partition.high_watermark().max(0) as usize;
            agree(*id, &log[..high_watermark.min(log.len())], &self.committed)?;
        }
        for (offset, entry) in &self.acknowledged {
            if self.committed.get(*offset as usize) != Some(entry) {
                return Err(format!(
                    "acknowledged write {entry:?} is not committed (committed has {:?})",
                    self.committed.get(*offset as usize)
                ));
            }
        }
        Ok(())
    }
}

/// `prefix` (a replica's log below its high watermark) and the committed log agree where both
/// reach.
fn agree(broker: i32, prefix: &[Entry], committed: &[Entry]) -> Result<(), String> {
    let differs = prefix.iter().zip(committed).position(|(a, b)| a != b);
    match differs {
        Some(at) => Err(format!(
            "broker {broker} has {:?} at offset {at} below its high watermark; committed is {:?}",
            prefix[at], committed[at]
        )),
        None => Ok(()),
    }
}

impl super::Simulation {
    /// All replicas hold the same log, the leader's high watermark is its log end, and the
    /// ISR holds every replica.
    pub(super) fn converged(&self) -> bool {
        let Some(state) = self
            .controller
            .image()
            .topic_by_name(TOPIC)
            .map(|t| &t.partitions[0])
        else {
            return false;
        };
        let Some(leader) = self.brokers.get(&state.leader) else {
            return false;
        };
        let Some(leading) = leader.partition.as_ref().filter(|p| p.is_leader()) else {
            return false;
        };
        let offsets = leading.offsets();
        let logs: Vec<_> = self
            .brokers
            .values()
            .filter_map(|b| b.partition.as_ref())
            .map(|p| read_log(p))
            .collect();
        state.isr.len() == BROKERS as usize
            && offsets.high_watermark == offsets.log_end_offset
            && logs.len() == BROKERS as usize
            && logs.windows(2).all(|pair| pair[0] == pair[1])
    }

    pub(super) fn describe(&self) -> String {
        let mut lines = vec![format!(
            "controller: {:?}",
            self.controller
                .image()
                .topic_by_name(TOPIC)
                .map(|t| &t.partitions[0])
        )];
        for broker in self.brokers.values() {
            let state = broker.partition.as_ref().map(|p| {
                let offsets = p.offsets();
                format!(
                    "leader={} epoch={} hw={} end={} log={:?}",
                    p.is_leader(),
                    p.leader_epoch(),
                    offsets.high_watermark,
                    offsets.log_end_offset,
                    read_log(p)
                        .iter()
                        .map(|(offset, epoch, _)| (*offset, *epoch))
                        .collect::<Vec<_>>()
                )
            });
            lines.push(format!(
                "broker {}: alive={} applied={} following={:?} {}",
                broker.id,
                broker.alive,
                broker.applied,
                broker.following,
                state.unwrap_or_default()
            ));
        }
        lines.join("\n")
    }
}
