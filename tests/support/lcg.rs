//! The one pseudo-random stream that generated test inputs are drawn from: Knuth's 64-bit MMIX linear
//! congruential generator. Each test maps its numbers to values in its own way; the stream is shared so
//! that no test writes the generator out again.

/// A 64-bit LCG whose state is the last number drawn.
pub struct Lcg(pub u64);

impl Lcg {
    /// The next state (and number): `s * 6364136223846793005 + 1442695040888963407`, wrapping.
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }

    /// The stream after one step from `seed`: a seed of 0 does not start at state 0.
    pub fn stepped(seed: u64) -> Lcg {
        let mut g = Lcg(seed);
        g.next();
        g
    }

    /// A uniform value in [0, 1) from the next number's top 24 bits.
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}
