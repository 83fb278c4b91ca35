//! Many seeds in CI (`WEIR_SIM_SEEDS`, default 300); one seed replays exactly with
//! `WEIR_SIM_SEED=N`.

use super::{Simulation, Stats};

const FAULTY_STEPS: usize = 3_000;

fn seeds() -> Vec<u64> {
    if let Some(seed) = std::env::var("WEIR_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![seed];
    }
    let count = std::env::var("WEIR_SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    (1..=count).collect()
}

#[test]
fn replication_keeps_acknowledged_writes_through_crashes_and_partitions() {
    let mut total = Stats::default();
    let seeds = seeds();
    for &seed in &seeds {
        let mut simulation = Simulation::new(seed, FAULTY_STEPS);
        simulation.run();
        let stats = simulation.stats;
        total.acknowledged += stats.acknowledged;
        total.crashes += stats.crashes;
        total.leaderships += stats.leaderships;
        total.truncations += stats.truncations;
    }
    eprintln!("{} seeds: {total:?}", seeds.len());
    // The schedules must exercise what the invariants are about, or they prove nothing.
    let runs = seeds.len() as u64;
    assert!(
        total.acknowledged >= 10 * runs,
        "too few acknowledged writes: {total:?}"
    );
    assert!(total.crashes >= runs, "too few crashes: {total:?}");
    assert!(
        total.leaderships >= 3 * runs,
        "too few leader changes: {total:?}"
    );
}
