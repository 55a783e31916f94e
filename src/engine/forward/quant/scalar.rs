//! Portable tile kernels: the reference the SIMD kernels must match bit for bit.
//!
//! They do candle's own float arithmetic, in candle's order, so the fast path returns exactly what
//! `QMatMul` does (same quantised activations, same exact integer block dots):
//! - Q4_1 (`vec_dot_q4_1_q8_1`, scalar in candle): per block `acc += (isum*dw)*da + mw*sa`, unfused.
//! - Q8_0 (candle's AVX2 `vec_dot_q8_0_q8_0`): 8 lanes, lane `g` takes the dot of k-values
//!   `4g..4g+4` of each block, `lane_g = fma(dw*da, isum_g, lane_g)`; then the lanes are added as
//!   `((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7))`. (candle without AVX2 sums in another order, so there
//!   the two paths agree only to rounding.)
//! - Q5_0 (`vec_dot_q5_0_q8_0`, scalar in candle): per block `acc += (isum*dw)*da`, unfused.
//! - Q4_K and Q6_K against Q8_K: candle's x86 tile kernels (`repack_x86`, which `QMatMul` runs on any
//!   x86 with AVX2+FMA for matrices of whole 16-row tiles; see `QMatrix::from_qtensor`), one f32
//!   accumulator per output, per sub-block in order:
//!   Q4_K `acc = fma(isum, (d*sc)*da, acc)` then `acc = fma(-(dmin*mn), da*bsum, acc)`;
//!   Q6_K `acc = fma(isum - 32*bsum, (d*sc)*da, acc)`. (candle without AVX2 sums in another order.)
//!
//! The SIMD kernels do the same operations with one lane per output row.

use super::act::Act;
use super::layout::{f16_to_f32, SignedQ5, TileQ4_1, TileQ8_0, TILE};
use super::layout_k::{TileQ4K, TileQ6K};

/// The tile's scales as f32, one per row.
fn scales(bits: &[u16; TILE]) -> [f32; TILE] {
    bits.map(f16_to_f32)
}

/// Q4_1 weights (one row tile, all `nb` block columns) times Q8_1 activation rows `c0..c0+C`.
/// Loops keep the 16 rows innermost, so the compiler can vectorise across them (NEON, SSE2).
pub fn q4_1<const C: usize>(tiles: &[TileQ4_1], act: &Act, c0: usize) -> [[f32; TILE]; C] {
    let mut acc = [[0f32; TILE]; C];
    for (b, tile) in tiles.iter().enumerate() {
        let (dw, mw) = (scales(&tile.d), scales(&tile.m));
        for (c, acc) in acc.iter_mut().enumerate() {
            let a = act.block(c0 + c, b);
            let (da, sa) = (act.d[(c0 + c) * act.nb + b], act.s[(c0 + c) * act.nb + b]);
            let mut isum = [0i32; TILE];
            for p in 0..4 {
                for j in 0..4 {
                    let (lo, hi) = (a[4 * p + j] as i32, a[16 + 4 * p + j] as i32);
                    for (r, isum) in isum.iter_mut().enumerate() {
                        let byte = tile.qs[(p * TILE + r) * 4 + j];
                        *isum += (byte & 0x0F) as i32 * lo + (byte >> 4) as i32 * hi;
                    }
                }
            }
            for r in 0..TILE {
                acc[r] += (isum[r] as f32 * dw[r]) * da + mw[r] * sa;
            }
        }
    }
    acc
}

/// Q8_0 weights (one row tile) times Q8_0 activation rows `c0..c0+C`.
pub fn q8_0<const C: usize>(tiles: &[TileQ8_0], act: &Act, c0: usize) -> [[f32; TILE]; C] {
    let mut lanes = [[[0f32; TILE]; 8]; C];
    for (b, tile) in tiles.iter().enumerate() {
        let dw = scales(&tile.d);
        for (c, lanes) in lanes.iter_mut().enumerate() {
            let a = act.block(c0 + c, b);
            let da = act.d[(c0 + c) * act.nb + b];
            for (g, lane) in lanes.iter_mut().enumerate() {
                let mut isum = [0i32; TILE];
                for j in 0..4 {
                    let x = a[4 * g + j] as i32;
                    for (r, isum) in isum.iter_mut().enumerate() {
                        *isum += tile.qs[(g * TILE + r) * 4 + j] as i8 as i32 * x;
                    }
                }
                for r in 0..TILE {
                    lane[r] = (dw[r] * da).mul_add(isum[r] as f32, lane[r]);
                }
            }
        }
    }
    // candle's `hsum_float_8` order
    lanes.map(|l| {
        std::array::from_fn(|r| {
            ((l[0][r] + l[4][r]) + (l[2][r] + l[6][r]))
                + ((l[1][r] + l[5][r]) + (l[3][r] + l[7][r]))
        })
    })
}

/// Q5_0 weights (one row tile, in either form: `layout::SignedQ5`) times Q8_0 activation rows
/// `c0..c0+C`.
pub fn q5_0<const C: usize>(tiles: &[impl SignedQ5], act: &Act, c0: usize) -> [[f32; TILE]; C] {
    let mut acc = [[0f32; TILE]; C];
    for (b, tile) in tiles.iter().enumerate() {
        let dw = scales(tile.scales());
        for (c, acc) in acc.iter_mut().enumerate() {
            let a = act.block(c0 + c, b);
            let da = act.d[(c0 + c) * act.nb + b];
            let mut isum = [0i32; TILE];
            for (v, &x) in a.iter().enumerate() {
                for (r, isum) in isum.iter_mut().enumerate() {
                    *isum += tile.signed(r, v) as i32 * x as i32;
                }
            }
            for r in 0..TILE {
                acc[r] += (isum[r] as f32 * dw[r]) * da;
            }
        }
    }
    acc
}

/// Q5_0 kept at 5 bits, and unpacked unsigned: `q5_0` on the other forms.
pub use self::{q5_0 as q5_0p, q5_0 as q5_0u};

/// Q4_K weights (one row tile, all super-block columns) times Q8_K activation rows `c0..c0+C`.
pub fn q4k<const C: usize>(tiles: &[TileQ4K], act: &Act, c0: usize) -> [[f32; TILE]; C] {
    let mut acc = [[0f32; TILE]; C];
    for (b, tile) in tiles.iter().enumerate() {
        let (d, dmin) = (scales(&tile.d), scales(&tile.dmin));
        for s in 0..8 {
            let scale: [f32; TILE] = std::array::from_fn(|r| d[r] * tile.sc[s * TILE + r] as f32);
            let min: [f32; TILE] = std::array::from_fn(|r| dmin[r] * tile.mn[s * TILE + r] as f32);
            for (c, acc) in acc.iter_mut().enumerate() {
                let i = (c0 + c) * act.nb + b;
                let a = &act.block(c0 + c, b)[32 * s..][..32];
                let bsums = &act.bsums[i * 16 + 2 * s..][..2];
                let (da, bsum) = (act.d[i], (bsums[0] as i32 + bsums[1] as i32) as f32);
                let mut isum = [0i32; TILE];
                for p in 0..4 {
                    for j in 0..4 {
                        let (lo, hi) = (a[4 * p + j] as i32, a[16 + 4 * p + j] as i32);
                        for (r, isum) in isum.iter_mut().enumerate() {
                            let byte = tile.qs[((4 * s + p) * TILE + r) * 4 + j];
                            *isum += (byte & 0x0F) as i32 * lo + (byte >> 4) as i32 * hi;
                        }
                    }
                }
                for r in 0..TILE {
                    acc[r] = (isum[r] as f32).mul_add(scale[r] * da, acc[r]);
                    acc[r] = (-min[r]).mul_add(da * bsum, acc[r]);
                }
            }
        }
    }
    acc
}

/// Q6_K weights (one row tile, all super-block columns) times Q8_K activation rows `c0..c0+C`.
pub fn q6k<const C: usize>(tiles: &[TileQ6K], act: &Act, c0: usize) -> [[f32; TILE]; C] {
    let mut acc = [[0f32; TILE]; C];
    for (b, tile) in tiles.iter().enumerate() {
        let d = scales(&tile.d);
        for s in 0..16 {
            let scale: [f32; TILE] = std::array::from_fn(|r| d[r] * tile.sc[s * TILE + r] as f32);
            for (c, acc) in acc.iter_mut().enumerate() {
                let i = (c0 + c) * act.nb + b;
                let a = &act.block(c0 + c, b)[16 * s..][..16];
                let (da, bsum) = (act.d[i], act.bsums[i * 16 + s] as i32);
                let mut isum = [0i32; TILE];
                for (j, &x) in a.iter().enumerate() {
                    let (g, k) = (4 * s + j / 4, j % 4);
                    for (r, isum) in isum.iter_mut().enumerate() {
                        *isum += tile.qs[(g * TILE + r) * 4 + k] as i32 * x as i32;
                    }
                }
                for r in 0..TILE {
                    acc[r] = ((isum[r] - 32 * bsum) as f32).mul_add(scale[r] * da, acc[r]);
                }
            }
        }
    }
    acc
}
