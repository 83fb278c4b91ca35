//! Where a new topic's replicas go: leaders (first replicas) round-robin over the brokers from
//! a start that depends on the topic, and the followers of each partition at a shift that grows
//! each time the partitions wrap around the brokers, so that no two brokers follow each other
//! everywhere (a broker's failure spreads its load over all the others). Kafka places replicas
//! the same way (without racks).

use super::controller::ControllerError;

/// Replicas per partition, the preferred leader first. `brokers` are the candidates (sorted);
/// `start` picks the first leader (the controller derives it from the topic's id).
pub fn assign(
    brokers: &[i32],
    partitions: i32,
    replication_factor: i32,
    start: usize,
) -> Result<Vec<Vec<i32>>, ControllerError> {
    let count = brokers.len();
    if replication_factor < 1 || replication_factor as usize > count {
        return Err(ControllerError::InvalidReplicationFactor {
            replication_factor,
            live_brokers: count,
        });
    }
    let mut assignments = Vec::with_capacity(partitions.max(0) as usize);
    for partition in 0..partitions.max(0) as usize {
        let first = (start + partition) % count;
        // Shifts 0..count-2, changing each time the leaders wrap around the brokers.
        let shift = if count > 1 {
            (start / count + partition / count) % (count - 1)
        } else {
            0
        };
        let mut replicas = vec![brokers[first]];
        for index in 0..(replication_factor as usize - 1) {
            let follower = (first + 1 + (shift + index) % (count - 1)) % count;
            replicas.push(brokers[follower]);
        }
        assignments.push(replicas);
    }
    Ok(assignments)
}
