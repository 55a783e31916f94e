//! Rotary position embedding (RoPE, Su et al. 2021) on rows of heads, with tables of the positions used.

/// RoPE with tables of cos and sin per position, in one of the two pairings GGUF models use: interleaved
/// (pairs `2i, 2i+1`, as llama.cpp-converted llama GGUFs need, their q/k rows being permuted for it) or
/// NeoX (pairs `i, i + d/2`, rotate halves: Qwen's unpermuted q/k).
#[derive(Clone)]
pub struct Rope {
    /// Each pair's frequency, `rope_dim / 2` of them.
    theta: Vec<f32>,
    /// `[position][rope_dim / 2]`, for the positions `cover` has been asked for so far.
    cos: Vec<f32>,
    sin: Vec<f32>,
    half: usize,
    neox: bool,
}

/// The fewest positions a table grows by: a decode step rarely grows it.
const GROW_MIN: usize = 1024;

impl Rope {
    /// RoPE with pair frequencies `theta`; `neox` pairs halves instead of neighbours. The tables start
    /// empty and grow as positions are used (`cover`): a whole context's worth is 32 MB for Gemma.
    pub fn new(theta: Vec<f32>, neox: bool) -> Self {
        Self {
            half: theta.len(),
            theta,
            cos: Vec::new(),
            sin: Vec::new(),
            neox,
        }
    }

    /// Positions the tables hold now.
    pub fn positions(&self) -> usize {
        self.cos.len() / self.half.max(1)
    }

    /// Makes the tables hold positions `0..end`. Each angle is `pos * theta[i]` in f32 and its cos
    /// and sin are f32's: candle's arithmetic for the whole table (an outer product, then `cos` and
    /// `sin`), so the same bits however far the tables have grown.
    pub fn cover(&mut self, end: usize) {
        let have = self.positions();
        if end <= have || self.half == 0 {
            return;
        }
        let to = end.max(2 * have).max(GROW_MIN);
        self.cos.reserve_exact((to - have) * self.half);
        self.sin.reserve_exact((to - have) * self.half);
        for pos in have..to {
            for &t in &self.theta {
                let angle = pos as f32 * t;
                self.cos.push(angle.cos());
                self.sin.push(angle.sin());
            }
        }
    }

    /// Rotates `xs` (`[rows][row]`, heads of `head_dim` side by side, row `r` at position
    /// `index_pos + r`, which `cover` must have reached) in place: `(x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos)`, candle's `rope_i`
    /// (interleaved) or `rope` (NeoX) formula, so the same bits.
    pub fn apply(&self, xs: &mut [f32], head_dim: usize, row: usize, index_pos: usize) {
        // A prefill's rows in parts on the pool's threads (each row is its own).
        crate::engine::forward::rows::for_row_parts_at(xs, row, |at, part| {
            self.apply_rows(part, head_dim, row, index_pos + at / row)
        });
    }

    /// `apply` on one thread.
    fn apply_rows(&self, xs: &mut [f32], head_dim: usize, row: usize, index_pos: usize) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{DType, Device, Tensor};

    /// The whole table as candle computes it: positions times frequencies (an outer product), then
    /// `cos` and `sin` of every angle.
    fn candle_table(theta: &[f32], positions: usize) -> (Vec<f32>, Vec<f32>) {
        let dev = Device::Cpu;
        let t = Tensor::new(theta, &dev).unwrap();
        let pos = Tensor::arange(0, positions as u32, &dev).unwrap();
        let angles = pos
            .to_dtype(DType::F32)
            .unwrap()
            .reshape((positions, 1))
            .unwrap()
            .matmul(&t.reshape((1, theta.len())).unwrap())
            .unwrap();
        let flat = |t: Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        (flat(angles.cos().unwrap()), flat(angles.sin().unwrap()))
    }

    #[test]
    fn tables_grown_a_step_at_a_time_hold_candles_bits() {
        let d = 64;
        let theta: Vec<f32> = (0..d)
            .step_by(2)
            .map(|i| 1f32 / 1e6f32.powf(i as f32 / d as f32))
            .collect();
        let mut rope = Rope::new(theta.clone(), false);
        assert_eq!(
            rope.positions(),
            0,
            "nothing is computed before a pass asks"
        );
        // Grown as a session grows: a prompt, then one step at a time, past the first growth.
        rope.cover(7);
        assert_eq!(rope.positions(), GROW_MIN);
        for end in GROW_MIN..GROW_MIN + 3 {
            rope.cover(end + 1);
        }
        assert_eq!(
            rope.positions(),
            2 * GROW_MIN,
            "grows by doubling, not per step"
        );
        let (cos, sin) = candle_table(&theta, rope.positions());
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&rope.cos), bits(&cos));
        assert_eq!(bits(&rope.sin), bits(&sin));
    }
}
