//! Reproducible randomness for the crash tests, from a printed seed.

/// xorshift64*: reproducible runs from a printed seed, no dependency.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }

    /// `WEIR_TEST_SEED` when set (to replay a failed run's input and kills), else the clock.
    pub(crate) fn seed_from_clock() -> u64 {
        if let Some(seed) = std::env::var("WEIR_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
        {
            return seed;
        }
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low)
    }
}
