//! The cleaner's key → latest offset map, bounded in memory.
//!
//! Keys are stored as 128-bit digests (two SipHash-1-3 hashes with independent random keys), as
//! Kafka stores MD5 digests: 24 bytes an entry whatever the key's size. Two keys sharing a digest
//! would make the cleaner drop a live record, so the digest is wide enough that this does not
//! happen in practice (≈ n² / 2¹²⁹ for n keys).
//!
//! The table is allocated once per cleaning pass at a capacity that fits in the configured
//! `log.cleaner.dedupe.buffer.size` and never grows past it; `has_room_for` tells the cleaner when
//! to stop reading the dirty section.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};

/// Bytes one entry costs in the table: the 16-byte digest, the 8-byte offset and one control
/// byte of hashbrown's table.
const BYTES_PER_BUCKET: usize = 16 + 8 + 1;

pub struct OffsetMap {
    digest_low: RandomState,
    digest_high: RandomState,
    entries: HashMap<u128, i64, BuildHasherDefault<DigestHasher>>,
    max_entries: usize,
}

impl OffsetMap {
    /// A map using at most `memory_bytes` for its table, sized for `expected_keys` when fewer.
    pub fn new(memory_bytes: usize, expected_keys: usize) -> Self {
        let max_entries = Self::max_entries_for(memory_bytes);
        let capacity = expected_keys.min(max_entries);
        OffsetMap {
            digest_low: RandomState::new(),
            digest_high: RandomState::new(),
            entries: HashMap::with_capacity_and_hasher(capacity, Default::default()),
            max_entries: capacity,
        }
    }

    /// How many keys a table of `memory_bytes` holds: hashbrown uses a power-of-two bucket
    /// count filled to at most 7/8.
    pub fn max_entries_for(memory_bytes: usize) -> usize {
        let buckets = memory_bytes / BYTES_PER_BUCKET;
        if buckets < 8 {
            return 0;
        }
        let power_of_two = 1usize << (usize::BITS - 1 - buckets.leading_zeros());
        power_of_two / 8 * 7
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `keys` more keys are sure to fit (each may be new).
    pub fn has_room_for(&self, keys: usize) -> bool {
        self.entries.len() + keys <= self.max_entries
    }

    /// Records `offset` as the latest of `key`. The caller checks `has_room_for` first.
    pub fn put(&mut self, key: &[u8], offset: i64) {
        debug_assert!(self.entries.len() < self.max_entries || self.get(key).is_some());
        let digest = self.digest(key);
        self.entries.insert(digest, offset);
    }

    /// The latest offset recorded for `key`.
    pub fn get(&self, key: &[u8]) -> Option<i64> {
        self.entries.get(&self.digest(key)).copied()
    }

    fn digest(&self, key: &[u8]) -> u128 {
        let low = self.digest_low.hash_one(key) as u128;
        let high = self.digest_high.hash_one(key) as u128;
        (high << 64) | low
    }
}

/// The table's own hasher: digests are already uniformly random, so their low bits are used as
/// they are instead of hashing them a second time.
#[derive(Default)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ byte as u64;
        }
    }

    fn write_u128(&mut self, digest: u128) {
        self.0 = digest as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_offsets_replace_earlier_ones() {
        let mut map = OffsetMap::new(1 << 20, 100);
        map.put(b"a", 1);
        map.put(b"b", 2);
        map.put(b"a", 3);
        assert_eq!(map.get(b"a"), Some(3));
        assert_eq!(map.get(b"b"), Some(2));
        assert_eq!(map.get(b"c"), None);
        assert_eq!(map.len(), 2);
    }

    #[test]
    fn capacity_follows_the_memory_bound() {
        assert_eq!(OffsetMap::max_entries_for(100), 0);
        // 1 MiB → 41943 buckets → 32768 (power of two) → 28672 keys at 7/8.
        assert_eq!(OffsetMap::max_entries_for(1 << 20), 28_672);
        let map = OffsetMap::new(1 << 20, usize::MAX);
        assert!(map.has_room_for(28_672));
        assert!(!map.has_room_for(28_673));
        let small = OffsetMap::new(1 << 20, 10);
        assert!(!small.has_room_for(11), "sized for the keys expected");
    }
}
