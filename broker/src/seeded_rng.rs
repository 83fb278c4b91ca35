//! A small deterministic generator (xorshift) for the seeded schedules of the coordinator
//! tests: a failing seed replays exactly, and no dependency is needed for it.

pub(crate) struct SeededRng(u64);

impl SeededRng {
    /// Any seed works (zero is mapped away from xorshift's fixed point).
    pub(crate) fn new(seed: u64) -> Self {
        SeededRng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// A number in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
