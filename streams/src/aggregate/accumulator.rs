//! The aggregates a windowed job computes incrementally. Each is mergeable: a job aggregates a
//! checkpoint's rows locally, sends the partial results through the repartition topic, and the
//! owner of the group merges them into the window's state (and its changelog).
//!
//! An aggregate over a table's changes (`crate::aggregate::changes`) also takes values back: an
//! update retracts the key's previous row. Those use the retracting forms
//! ([`AggregateKind::start_retracting`]): counts and averages as they are, a sum with its count
//! of values (so that a sum of nothing is null again), minima, maxima and distinct counts over
//! every value held with its multiplicity.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::aggregate::datum::Datum;

/// Which aggregate, as the query names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggregateKind {
    /// `count(*)` or `count(x)` (non-null values).
    Count,
    Sum,
    Min,
    Max,
    Avg,
    /// `count(DISTINCT x)`, exact.
    CountDistinct,
}

impl AggregateKind {
    /// The aggregate DataFusion names `name` (`distinct` for `count(DISTINCT …)`).
    pub fn from_name(name: &str, distinct: bool) -> Option<Self> {
        Some(match (name, distinct) {
            ("count", false) => AggregateKind::Count,
            ("count", true) => AggregateKind::CountDistinct,
            ("sum", false) => AggregateKind::Sum,
            ("min", _) => AggregateKind::Min,
            ("max", _) => AggregateKind::Max,
            ("avg" | "mean", false) => AggregateKind::Avg,
            _ => return None,
        })
    }

    pub fn start(self) -> Accumulator {
        match self {
            AggregateKind::Count => Accumulator::Count(0),
            AggregateKind::Sum => Accumulator::Sum(None),
            AggregateKind::Min => Accumulator::Min(None),
            AggregateKind::Max => Accumulator::Max(None),
            AggregateKind::Avg => Accumulator::Avg { sum: 0.0, count: 0 },
            AggregateKind::CountDistinct => Accumulator::Distinct(BTreeSet::new()),
        }
    }

    /// The state of this aggregate over values that can also be retracted.
    pub fn start_retracting(self) -> Accumulator {
        match self {
            AggregateKind::Count | AggregateKind::Avg => self.start(),
            AggregateKind::Sum => Accumulator::RetractingSum {
                sum: None,
                values: 0,
            },
            AggregateKind::Min => Accumulator::RetractingMin(Multiset::default()),
            AggregateKind::Max => Accumulator::RetractingMax(Multiset::default()),
            AggregateKind::CountDistinct => Accumulator::RetractingDistinct(Multiset::default()),
        }
    }
}

/// Values with their multiplicities (a partial may hold negative ones: retractions of values
/// added in an earlier checkpoint). Written as `[[value, count], …]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "Vec<(Datum, i64)>", into = "Vec<(Datum, i64)>")]
pub struct Multiset(BTreeMap<Datum, i64>);

impl Multiset {
    fn add(&mut self, value: &Datum, count: i64) {
        let held = self.0.entry(value.clone()).or_insert(0);
        *held += count;
        if *held == 0 {
            self.0.remove(value);
        }
    }

    fn present(&self) -> impl DoubleEndedIterator<Item = &Datum> {
        self.0
            .iter()
            .filter(|(_, count)| **count > 0)
            .map(|(value, _)| value)
    }
}

impl From<Vec<(Datum, i64)>> for Multiset {
    fn from(pairs: Vec<(Datum, i64)>) -> Self {
        let mut set = Multiset::default();
        for (value, count) in pairs {
            set.add(&value, count);
        }
        set
    }
}

impl From<Multiset> for Vec<(Datum, i64)> {
    fn from(set: Multiset) -> Self {
        set.0.into_iter().collect()
    }
}

/// An aggregate's running state (SQL semantics: nulls are ignored; a sum, min, max or average of
/// no values is null, a count is 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Accumulator {
    Count(i64),
    Sum(Option<Datum>),
    Min(Option<Datum>),
    Max(Option<Datum>),
    Avg {
        sum: f64,
        count: i64,
    },
    Distinct(BTreeSet<Datum>),
    /// A sum that values can be retracted from: `values` counts the non-null values in it.
    RetractingSum {
        sum: Option<Datum>,
        values: i64,
    },
    RetractingMin(Multiset),
    RetractingMax(Multiset),
    RetractingDistinct(Multiset),
}

impl Accumulator {
    pub fn update(&mut self, value: &Datum) {
        if matches!(value, Datum::Null) {
            return;
        }
        match self {
            Accumulator::Count(count) => *count += 1,
            Accumulator::Sum(sum) => *sum = Some(add(sum.take(), value)),
            Accumulator::Min(min) => {
                if min.as_ref().is_none_or(|m| value < m) {
                    *min = Some(value.clone());
                }
            }
            Accumulator::Max(max) => {
                if max.as_ref().is_none_or(|m| value > m) {
                    *max = Some(value.clone());
                }
            }
            Accumulator::Avg { sum, count } => {
                *sum += value.as_f64().unwrap_or(0.0);
                *count += 1;
            }
            Accumulator::Distinct(values) => {
                if !values.contains(value) {
                    values.insert(value.clone());
                }
            }
            Accumulator::RetractingSum { sum, values } => {
                *sum = Some(add(sum.take(), value));
                *values += 1;
            }
            Accumulator::RetractingMin(set)
            | Accumulator::RetractingMax(set)
            | Accumulator::RetractingDistinct(set) => set.add(value, 1),
        }
    }

    /// Takes `value` back out (a row of a table replaced or deleted). Only the retracting forms
    /// and counts and averages can; the others answer false and stay as they are.
    #[must_use]
    pub fn retract(&mut self, value: &Datum) -> bool {
        if matches!(value, Datum::Null) {
            return true;
        }
        match self {
            Accumulator::Count(count) => *count -= 1,
            Accumulator::Avg { sum, count } => {
                *sum -= value.as_f64().unwrap_or(0.0);
                *count -= 1;
            }
            Accumulator::RetractingSum { sum, values } => {
                *sum = Some(subtract(sum.take(), value));
                *values -= 1;
            }
            Accumulator::RetractingMin(set)
            | Accumulator::RetractingMax(set)
            | Accumulator::RetractingDistinct(set) => set.add(value, -1),
            Accumulator::Sum(_)
            | Accumulator::Min(_)
            | Accumulator::Max(_)
            | Accumulator::Distinct(_) => return false,
        }
        true
    }

    /// Folds `other` (the same aggregate's partial state) into this one.
    pub fn merge(&mut self, other: Accumulator) {
        match (self, other) {
            (Accumulator::Count(a), Accumulator::Count(b)) => *a += b,
            (Accumulator::Sum(a), Accumulator::Sum(Some(b))) => *a = Some(add(a.take(), &b)),
            (Accumulator::Min(a), Accumulator::Min(Some(b)))
                if a.as_ref().is_none_or(|m| &b < m) =>
            {
                *a = Some(b)
            }
            (Accumulator::Max(a), Accumulator::Max(Some(b)))
                if a.as_ref().is_none_or(|m| &b > m) =>
            {
                *a = Some(b)
            }
            (Accumulator::Avg { sum, count }, Accumulator::Avg { sum: s, count: c }) => {
                *sum += s;
                *count += c;
            }
            (Accumulator::Distinct(a), Accumulator::Distinct(b)) => a.extend(b),
            (
                Accumulator::RetractingSum { sum, values },
                Accumulator::RetractingSum {
                    sum: other_sum,
                    values: other_values,
                },
            ) => {
                if let Some(other_sum) = other_sum {
                    *sum = Some(add(sum.take(), &other_sum));
                }
                *values += other_values;
            }
            (Accumulator::RetractingMin(a), Accumulator::RetractingMin(b))
            | (Accumulator::RetractingMax(a), Accumulator::RetractingMax(b))
            | (Accumulator::RetractingDistinct(a), Accumulator::RetractingDistinct(b)) => {
                for (value, count) in b.0 {
                    a.add(&value, count);
                }
            }
            // Null partial sums/minima/maxima add nothing; mismatched kinds cannot come from
            // one query's plan.
            _ => {}
        }
    }

    pub fn evaluate(&self) -> Datum {
        match self {
            Accumulator::Count(count) => Datum::Int(*count),
            Accumulator::Sum(sum) | Accumulator::Min(sum) | Accumulator::Max(sum) => {
                sum.clone().unwrap_or(Datum::Null)
            }
            Accumulator::Avg { count: 0, .. } => Datum::Null,
            Accumulator::Avg { sum, count } => Datum::Float(sum / *count as f64),
            Accumulator::Distinct(values) => Datum::Int(values.len() as i64),
            Accumulator::RetractingSum { values: 0, .. } => Datum::Null,
            Accumulator::RetractingSum { sum, .. } => sum.clone().unwrap_or(Datum::Null),
            Accumulator::RetractingMin(set) => set.present().next().cloned().unwrap_or(Datum::Null),
            Accumulator::RetractingMax(set) => {
                set.present().next_back().cloned().unwrap_or(Datum::Null)
            }
            Accumulator::RetractingDistinct(set) => Datum::Int(set.present().count() as i64),
        }
    }

    /// How many values this state holds beyond its fixed size (the distinct values): counted
    /// against the job's state bound.
    pub fn held_values(&self) -> usize {
        match self {
            Accumulator::Distinct(values) => values.len(),
            Accumulator::RetractingMin(set)
            | Accumulator::RetractingMax(set)
            | Accumulator::RetractingDistinct(set) => set.0.len(),
            _ => 0,
        }
    }
}

/// Integer sums stay integers (wrapping, as DataFusion's do); any float makes a float.
fn add(sum: Option<Datum>, value: &Datum) -> Datum {
    match (sum, value) {
        (None, value) => value.clone(),
        (Some(Datum::Int(a)), Datum::Int(b)) => Datum::Int(a.wrapping_add(*b)),
        (Some(a), b) => Datum::Float(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
    }
}

/// `sum - value`, as [`add`] keeps types.
fn subtract(sum: Option<Datum>, value: &Datum) -> Datum {
    match (sum, value) {
        (None, Datum::Int(b)) => Datum::Int(b.wrapping_neg()),
        (Some(Datum::Int(a)), Datum::Int(b)) => Datum::Int(a.wrapping_sub(*b)),
        (a, b) => {
            Datum::Float(a.and_then(|a| a.as_f64()).unwrap_or(0.0) - b.as_f64().unwrap_or(0.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY_KIND: [AggregateKind; 6] = [
        AggregateKind::Count,
        AggregateKind::Sum,
        AggregateKind::Min,
        AggregateKind::Max,
        AggregateKind::Avg,
        AggregateKind::CountDistinct,
    ];

    fn run(kind: AggregateKind, values: &[Datum]) -> Datum {
        let mut accumulator = kind.start();
        for value in values {
            accumulator.update(value);
        }
        accumulator.evaluate()
    }

    /// Aggregating in two parts and merging equals aggregating at once, for every kind.
    #[test]
    fn merged_partials_equal_the_whole() {
        let values = [
            Datum::Int(5),
            Datum::Null,
            Datum::Int(-2),
            Datum::Int(5),
            Datum::Int(9),
        ];
        for kind in EVERY_KIND {
            for split in 0..=values.len() {
                let mut left = kind.start();
                values[..split].iter().for_each(|v| left.update(v));
                let mut right = kind.start();
                values[split..].iter().for_each(|v| right.update(v));
                let json = serde_json::to_string(&right).unwrap();
                left.merge(serde_json::from_str(&json).unwrap());
                assert_eq!(
                    left.evaluate(),
                    run(kind, &values),
                    "{kind:?} split at {split}"
                );
            }
        }
        assert_eq!(run(AggregateKind::Count, &values), Datum::Int(4));
        assert_eq!(run(AggregateKind::Sum, &values), Datum::Int(17));
        assert_eq!(run(AggregateKind::Min, &values), Datum::Int(-2));
        assert_eq!(run(AggregateKind::Max, &values), Datum::Int(9));
        assert_eq!(run(AggregateKind::Avg, &values), Datum::Float(4.25));
        assert_eq!(run(AggregateKind::CountDistinct, &values), Datum::Int(3));
    }

    /// Values added in one partial and some of them retracted in a later one (through JSON, as
    /// the repartition topic carries them) give the aggregate of what is left, for every kind;
    /// retracting everything gives the aggregate of nothing.
    #[test]
    fn retracted_values_leave_the_aggregate_of_the_rest() {
        let added = [
            Datum::Int(5),
            Datum::Int(9),
            Datum::Null,
            Datum::Int(-2),
            Datum::Int(9),
        ];
        let retracted = [Datum::Int(9), Datum::Int(-2), Datum::Null];
        let left = [Datum::Int(5), Datum::Int(9)];
        for kind in EVERY_KIND {
            let mut state = kind.start_retracting();
            added.iter().for_each(|v| state.update(v));
            let mut later = kind.start_retracting();
            for value in &retracted {
                assert!(later.retract(value), "{kind:?}");
            }
            let json = serde_json::to_string(&later).unwrap();
            state.merge(serde_json::from_str(&json).unwrap());
            assert_eq!(state.evaluate(), run(kind, &left), "{kind:?}");
            let mut everything = kind.start_retracting();
            left.iter().for_each(|v| assert!(everything.retract(v)));
            state.merge(everything);
            assert_eq!(state.evaluate(), run(kind, &[]), "{kind:?} emptied");
        }
        assert!(!AggregateKind::Max.start().retract(&Datum::Int(1)));
    }

    #[test]
    fn aggregates_of_nothing_are_null_or_zero() {
        assert_eq!(run(AggregateKind::Count, &[Datum::Null]), Datum::Int(0));
        assert_eq!(run(AggregateKind::Sum, &[]), Datum::Null);
        assert_eq!(run(AggregateKind::Avg, &[]), Datum::Null);
        assert_eq!(
            run(AggregateKind::Sum, &[Datum::Int(1), Datum::Float(0.5)]),
            Datum::Float(1.5)
        );
    }
}
