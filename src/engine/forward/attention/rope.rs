//! Rotary position embedding (RoPE, Su et al. 2021) on rows of heads, with tables for every position.

/// RoPE with tables for every position, in one of the two pairings GGUF models use: interleaved
/// (pairs `2i, 2i+1`, as llama.cpp-converted llama GGUFs need, their q/k rows being permuted for it) or
/// NeoX (pairs `i, i + d/2`, rotate halves: Qwen's unpermuted q/k).
pub struct Rope {
    /// `[position][rope_dim / 2]`.
    cos: Vec<f32>,
    sin: Vec<f32>,
    half: usize,
    neox: bool,
}

impl Rope {
    /// `cos`, `sin` as `[positions, rope_dim / 2]` tables; `neox` pairs halves instead of neighbours.
    pub fn new(cos: Vec<f32>, sin: Vec<f32>, rope_dim: usize, neox: bool) -> Self {
        Self {
            cos,
            sin,
            half: rope_dim / 2,
            neox,
        }
    }

    /// Rotates `xs` (`[rows][row]`, heads of `head_dim` side by side, row `r` at position
    /// `index_pos + r`) in place: `(x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos)`, candle's `rope_i`
    /// (interleaved) or `rope` (NeoX) formula, so the same bits.
    pub fn apply(&self, xs: &mut [f32], head_dim: usize, row: usize, index_pos: usize) {
        let half = self.half;
        for (r, x) in xs.chunks_exact_mut(row).enumerate() {
            let at = (index_pos + r) * half;
            let (cos, sin) = (&self.cos[at..at + half], &self.sin[at..at + half]);
            for head in x.chunks_exact_mut(head_dim) {
                if self.neox {
                    let (lo, hi) = head[..2 * half].split_at_mut(half);
                    for i in 0..half {
                        let (x0, x1) = (lo[i], hi[i]);
                        lo[i] = x0 * cos[i] - x1 * sin[i];
                        hi[i] = x0 * sin[i] + x1 * cos[i];
                    }
                } else {
                    for (i, pair) in head[..2 * half].chunks_exact_mut(2).enumerate() {
                        let (x0, x1) = (pair[0], pair[1]);
                        pair[0] = x0 * cos[i] - x1 * sin[i];
                        pair[1] = x0 * sin[i] + x1 * cos[i];
                    }
                }
            }
        }
    }
}
