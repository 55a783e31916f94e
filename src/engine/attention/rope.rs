//! Rotary position embedding (RoPE, Su et al. 2021) on rows of heads, with tables for every position.

/// Interleaved RoPE (pairs `2i, 2i+1`, as llama.cpp-converted GGUFs need) with tables for every position.
pub struct Rope {
    /// `[position][rope_dim / 2]`.
    cos: Vec<f32>,
    sin: Vec<f32>,
    half: usize,
}

impl Rope {
    /// `cos`, `sin` as `[positions, rope_dim / 2]` tables.
    pub fn new(cos: Vec<f32>, sin: Vec<f32>, rope_dim: usize) -> Self {
        Self {
            cos,
            sin,
            half: rope_dim / 2,
        }
    }

    /// Rotates `xs` (`[rows][row]`, heads of `head_dim` side by side, row `r` at position
    /// `index_pos + r`) in place: `(x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos)`, candle's `rope_i`
    /// formula, so the same bits.
    pub fn apply(&self, xs: &mut [f32], head_dim: usize, row: usize, index_pos: usize) {
        for (r, x) in xs.chunks_exact_mut(row).enumerate() {
            let at = (index_pos + r) * self.half;
            let (cos, sin) = (&self.cos[at..at + self.half], &self.sin[at..at + self.half]);
            for head in x.chunks_exact_mut(head_dim) {
                for (i, pair) in head[..2 * self.half].chunks_exact_mut(2).enumerate() {
                    let (x0, x1) = (pair[0], pair[1]);
                    pair[0] = x0 * cos[i] - x1 * sin[i];
                    pair[1] = x0 * sin[i] + x1 * cos[i];
                }
            }
        }
    }
}
