//! The interval join's state against a brute-force oracle: random rows on two inputs of a few
//! partitions each (out of order, some late, some with null keys), delivered as a job would —
//! each input partition's rows in offset order, in checkpoints of random size, the partition's
//! event time after each, partitions interleaved at random — and, half of the time, the state
//! rebuilt from its changelog at a random moment. The output must be exactly the pairs (and, for
//! a left outer join, the unmatched left rows) of all rows that are not late, whatever the
//! interleaving.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::state::{
    IntervalJoinConfig, IntervalJoinState, JoinChange, JoinChangeKey, JoinRecord, JoinRow, Joined,
    RowId, Side,
};
use crate::aggregate::datum::Datum;

const LOWER_MS: i64 = -50;
const UPPER_MS: i64 = 100;
const LATENESS_MS: i64 = 40;
const PARTITIONS: [i32; 2] = [2, 3];

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn config(left_outer: bool) -> IntervalJoinConfig {
    IntervalJoinConfig {
        lower_ms: LOWER_MS,
        upper_ms: UPPER_MS,
        left_outer,
        input_partitions: PARTITIONS.to_vec(),
        allowed_lateness_ms: LATENESS_MS,
        max_state_entries: 100_000,
    }
}

/// Per (input, partition), its rows in offset order.
fn generate(rng: &mut Rng) -> BTreeMap<(u8, i32), Vec<JoinRow>> {
    let mut inputs = BTreeMap::new();
    let mut id = 0;
    for (input, partitions) in PARTITIONS.iter().enumerate() {
        for partition in 0..*partitions {
            let mut rows = Vec::new();
            for offset in 0..60 {
                let base = offset * 20;
                let time_ms = match rng.below(10) {
                    0 => base - 30 - rng.below(80) as i64,
                    1 | 2 => base - rng.below(30) as i64,
                    _ => base,
                };
                let key = match rng.below(12) {
                    0 => Datum::Null,
                    k => Datum::Int((k % 4) as i64),
                };
                id += 1;
                rows.push(JoinRow {
                    side: if input == 0 { Side::Left } else { Side::Right },
                    id: RowId {
                        input: input as u8,
                        partition,
                        offset,
                    },
                    keys: vec![key],
                    time_ms,
                    values: vec![Datum::Int(id)].into(),
                });
            }
            inputs.insert((input as u8, partition), rows);
        }
    }
    inputs
}

/// The rows each partition does not drop as late, by the job's rule.
fn accepted(inputs: &BTreeMap<(u8, i32), Vec<JoinRow>>) -> Vec<JoinRow> {
    let mut kept = Vec::new();
    for rows in inputs.values() {
        let mut max: Option<i64> = None;
        for row in rows {
            if max.is_none_or(|m| row.time_ms >= m - LATENESS_MS) {
                kept.push(row.clone());
            }
            max = Some(max.map_or(row.time_ms, |m| m.max(row.time_ms)));
        }
    }
    kept
}

type Output = BTreeMap<(Arc<[Datum]>, Option<Arc<[Datum]>>), usize>;

fn oracle(rows: &[JoinRow], left_outer: bool) -> Output {
    let mut output = Output::new();
    for left in rows.iter().filter(|r| r.side == Side::Left) {
        let mut matched = false;
        for right in rows.iter().filter(|r| r.side == Side::Right) {
            let distance = right.time_ms - left.time_ms;
            let null = left.keys[0] == Datum::Null || right.keys[0] == Datum::Null;
            if !null && left.keys == right.keys && (LOWER_MS..=UPPER_MS).contains(&distance) {
                matched = true;
                *output
                    .entry((left.values.clone(), Some(right.values.clone())))
                    .or_default() += 1;
            }
        }
        if left_outer && !matched {
            *output.entry((left.values.clone(), None)).or_default() += 1;
        }
    }
    output
}

fn collect(joined: Vec<Joined>, output: &mut Output) {
    for row in joined {
        *output.entry((row.left, row.right)).or_default() += 1;
    }
}

/// Delivers `inputs` as a job would, to one repartition partition.
fn run(rng: &mut Rng, inputs: &BTreeMap<(u8, i32), Vec<JoinRow>>, left_outer: bool) -> Output {
    let mut state = IntervalJoinState::new(config(left_outer));
    let mut changelog = Vec::new();
    let mut output = Output::new();
    let mut positions: BTreeMap<(u8, i32), usize> = inputs.keys().map(|k| (*k, 0)).collect();
    let mut maxima: BTreeMap<(u8, i32), i64> = BTreeMap::new();
    let restore_at = rng.below(2).eq(&0).then(|| rng.below(40));
    let mut checkpoints = 0;
    while positions.iter().any(|(k, p)| *p < inputs[k].len()) {
        let open: Vec<(u8, i32)> = positions
            .iter()
            .filter(|(k, p)| **p < inputs[*k].len())
            .map(|(k, _)| *k)
            .collect();
        let source = open[rng.below(open.len() as u64) as usize];
        let rows = &inputs[&source];
        let start = positions[&source];
        let end = (start + 1 + rng.below(8) as usize).min(rows.len());
        for row in &rows[start..end] {
            let max = maxima.get(&source).copied();
            if max.is_none_or(|m| row.time_ms >= m - LATENESS_MS) {
                let record = JoinRecord::Row(row.clone());
                collect(state.merge(0, record).unwrap(), &mut output);
            }
            maxima.insert(source, max.map_or(row.time_ms, |m| m.max(row.time_ms)));
        }
        positions.insert(source, end);
        let time = JoinRecord::Time {
            input: source.0,
            partition: source.1,
            max_time_ms: maxima[&source],
        };
        state.merge(0, time).unwrap();
        collect(state.expire(0), &mut output);
        changelog.extend(state.take_changes(0));
        checkpoints += 1;
        if restore_at == Some(checkpoints) {
            state = restored(&changelog, left_outer);
        }
    }
    for (input, partition) in inputs.keys() {
        let end = JoinRecord::EndOfInput {
            input: *input,
            partition: *partition,
        };
        state.merge(0, end).unwrap();
    }
    collect(state.expire(0), &mut output);
    assert_eq!(state.entries(), 0, "everything expires at the end of input");
    output
}

fn restored(
    changelog: &[(JoinChangeKey, Option<JoinChange>)],
    left_outer: bool,
) -> IntervalJoinState {
    let mut state = IntervalJoinState::new(config(left_outer));
    for (key, value) in changelog {
        let key: JoinChangeKey = serde_json::from_slice(&serde_json::to_vec(key).unwrap()).unwrap();
        let value: Option<JoinChange> = value
            .as_ref()
            .map(|v| serde_json::from_slice(&serde_json::to_vec(v).unwrap()).unwrap());
        state.restore(0, key, value).unwrap();
    }
    state
}

#[test]
fn every_pair_of_rows_not_late_meets_once_whatever_the_interleaving() {
    for seed in 1..=60u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let inputs = generate(&mut rng);
        let kept = accepted(&inputs);
        for left_outer in [false, true] {
            let expected = oracle(&kept, left_outer);
            assert!(expected.len() > 50, "seed {seed}: the rows meet");
            let output = run(&mut rng, &inputs, left_outer);
            assert_eq!(output, expected, "seed {seed}, left outer {left_outer}");
        }
    }
}

#[test]
fn the_state_bound_is_an_error_not_growth() {
    let mut state = IntervalJoinState::new(IntervalJoinConfig {
        max_state_entries: 2,
        ..config(false)
    });
    for offset in 0..3 {
        let row = JoinRow {
            side: Side::Left,
            id: RowId {
                input: 0,
                partition: 0,
                offset,
            },
            keys: vec![Datum::Int(1)],
            time_ms: 0,
            values: Vec::new().into(),
        };
        let result = state.merge(0, JoinRecord::Row(row));
        assert_eq!(result.is_err(), offset == 2, "row {offset}");
    }
}

fn row(side: Side, offset: i64, time_ms: i64) -> JoinRow {
    let input = if side == Side::Left { 0 } else { 1 };
    JoinRow {
        side,
        id: RowId {
            input,
            partition: 0,
            offset,
        },
        keys: vec![Datum::Int(1)],
        time_ms,
        values: vec![Datum::Int(offset)].into(),
    }
}

fn time(input: u8, partition: i32, max_time_ms: i64) -> JoinRecord {
    JoinRecord::Time {
        input,
        partition,
        max_time_ms,
    }
}

/// Input 1's partitions 1 and 2 never have a record: only their idleness lets the watermark
/// start, and the rows then leave the state — those that came and went between two changelog
/// writes without a trace in the changelog, the one written before as a tombstone.
#[test]
fn idle_partitions_let_rows_expire_and_short_lived_rows_skip_the_changelog() {
    let mut state = IntervalJoinState::new(IntervalJoinConfig {
        input_partitions: vec![1, 3],
        ..config(false)
    });
    state
        .merge(0, JoinRecord::Row(row(Side::Left, 0, 0)))
        .unwrap();
    state.merge(0, time(0, 0, 0)).unwrap();
    let written = state.take_changes(0);
    assert!(written.contains(&(
        JoinChangeKey::Row(row(Side::Left, 0, 0).id),
        Some(JoinChange::Row {
            row: row(Side::Left, 0, 0),
            matched: false
        })
    )));
    state
        .merge(0, JoinRecord::Row(row(Side::Left, 1, 1000)))
        .unwrap();
    let joined = state
        .merge(0, JoinRecord::Row(row(Side::Right, 0, 1040)))
        .unwrap();
    assert_eq!(joined.len(), 1);
    assert_eq!(joined[0].time_ms, 1040, "the later of the pair's times");
    state.merge(0, time(0, 0, 2000)).unwrap();
    state.merge(0, time(1, 0, 2000)).unwrap();
    assert!(state.expire(0).is_empty());
    assert_eq!(
        state.entries(),
        3,
        "partitions 1 and 2 of input 1 hold the watermark"
    );
    state
        .merge(
            0,
            JoinRecord::Idle {
                input: 1,
                partition: 1,
            },
        )
        .unwrap();
    state
        .merge(
            0,
            JoinRecord::Idle {
                input: 1,
                partition: 2,
            },
        )
        .unwrap();
    assert_eq!(state.watermark(0), Some(2000 - LATENESS_MS));
    state.expire(0);
    assert_eq!(state.entries(), 0);
    let changes = state.take_changes(0);
    let rows: Vec<_> = changes
        .iter()
        .filter(|(key, _)| matches!(key, JoinChangeKey::Row(_)))
        .collect();
    assert_eq!(
        rows,
        [&(JoinChangeKey::Row(row(Side::Left, 0, 0).id), None)],
        "only the row written before leaves a tombstone"
    );
    // The idleness is in the changelog: a restored state has the same watermark.
    let restored = restored(&[written, changes].concat(), false);
    assert_eq!(restored.watermark(0), Some(2000 - LATENESS_MS));
}
