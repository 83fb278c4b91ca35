//! The hash map that job state (window groups, join rows) is kept in.
//!
//! Its keys come from the input, so the hasher must not be predictable: aHash with a random
//! seed per map (as DataFusion's group-by tables), rather than std's SipHash, which took
//! 6–8 % of a windowed job's loop thread hashing group keys (`perf`, Nexmark q5's counts).

use std::collections::{HashMap, HashSet};

/// A `HashMap` with a randomly seeded aHash.
pub type StateMap<K, V> = HashMap<K, V, ahash::RandomState>;

/// A `HashSet` with a randomly seeded aHash.
pub type StateSet<T> = HashSet<T, ahash::RandomState>;
