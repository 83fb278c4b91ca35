//! Weir patch: a bound on the memory one decode may allocate.
//!
//! A request's wire form is compact (an empty OffsetFetch group is 3 bytes) while its decoded
//! structs are not (~120 bytes each), so bounding counts by the bytes remaining still lets a
//! 30 MB request allocate over a gigabyte. Inside [`within`], every site that allocates for a
//! count read from the wire — an array's elements (`size_of` each, before the `Vec` is
//! reserved) and each unknown tagged field — first charges the budget, and a charge past it is
//! a decode error; nothing is allocated for it. Outside [`within`] charges are free, as
//! upstream.
//!
//! Decoding is synchronous, so the budget lives in a thread local for the length of one call.

use std::cell::Cell;

use anyhow::{bail, Result};

/// What a decode under [`within`] took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DecodeCost {
    /// Bytes charged by the sites that allocated (what the decoded structs hold beyond the
    /// input they borrow from).
    pub charged_bytes: usize,
    /// Set when a charge was refused: what the decode had asked for in all when it stopped
    /// (`charged_bytes` plus the refused charge).
    pub refused_at_bytes: Option<usize>,
}

#[derive(Clone, Copy)]
struct Budget {
    limit_bytes: usize,
    cost: DecodeCost,
}

thread_local! {
    static BUDGET: Cell<Option<Budget>> = const { Cell::new(None) };
}

/// What one node of a struct's tagged-field map (`BTreeMap<i32, Bytes>`) is charged: a node
/// holds 5 to 11 entries in ~410 bytes (and 12 edges more when internal), and the first field
/// allocates a whole one.
pub const TAGGED_FIELD_NODE_BYTES: usize = 512;
/// The fewest entries of a map's node (but the first).
const TAGGED_FIELDS_PER_NODE: usize = 5;

/// Runs `decode` with at most `limit_bytes` charged; returns its result and what it took. A
/// refused charge makes the decode fail (its error names the budget). Calls may nest: the inner
/// budget applies inside and the outer one is restored after.
pub fn within<R>(limit_bytes: usize, decode: impl FnOnce() -> R) -> (R, DecodeCost) {
    struct Restore(Option<Budget>);
    impl Drop for Restore {
        fn drop(&mut self) {
            BUDGET.with(|budget| budget.set(self.0));
        }
    }
    let outer = BUDGET.with(|budget| {
        budget.replace(Some(Budget {
            limit_bytes,
            cost: DecodeCost::default(),
        }))
    });
    let restore = Restore(outer);
    let result = decode();
    let cost = BUDGET.with(|budget| budget.get().map(|b| b.cost).unwrap_or_default());
    drop(restore);
    (result, cost)
}

/// Charges `bytes` to the current budget, if any.
pub fn charge(bytes: usize) -> Result<()> {
    BUDGET.with(|cell| {
        let Some(mut budget) = cell.get() else {
            return Ok(());
        };
        let wanted = budget.cost.charged_bytes.saturating_add(bytes);
        if wanted > budget.limit_bytes {
            budget.cost.refused_at_bytes = Some(wanted);
            cell.set(Some(budget));
            bail!(
                "decoding would hold {wanted} bytes, over this request's bound of {} bytes",
                budget.limit_bytes
            );
        }
        budget.cost.charged_bytes = wanted;
        cell.set(Some(budget));
        Ok(())
    })
}

/// Charges an array of `count` elements of `T` before it is reserved.
pub fn charge_elements<T>(count: usize) -> Result<()> {
    charge(count.saturating_mul(std::mem::size_of::<T>()))
}

/// Charges `count` tagged fields before they are read (the known ones as if they were not).
pub fn charge_tagged_fields(count: u32) -> Result<()> {
    let nodes = (count as usize).div_ceil(TAGGED_FIELDS_PER_NODE);
    charge(nodes.saturating_mul(TAGGED_FIELD_NODE_BYTES))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_past_the_limit_are_refused_and_reported() {
        let (result, cost) = within(100, || {
            charge(60)?;
            charge(60)
        });
        assert!(result.is_err());
        assert_eq!(cost.charged_bytes, 60);
        assert_eq!(cost.refused_at_bytes, Some(120));
        assert!(charge(usize::MAX).is_ok(), "no budget outside within");
    }

    #[test]
    fn nested_budgets_restore_the_outer_one() {
        let ((), outer) = within(1000, || {
            charge(10).unwrap();
            let (_, inner) = within(5, || charge(6));
            assert_eq!(inner.refused_at_bytes, Some(6));
            charge(20).unwrap();
        });
        assert_eq!(outer.charged_bytes, 30);
        assert_eq!(outer.refused_at_bytes, None);
    }
}
