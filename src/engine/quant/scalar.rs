//! Portable tile kernels: the reference the SIMD kernels must match bit for bit.
//!
//! Per output (row `r`, activation row `c`) and per block, in this order (two fused multiply-adds):
//! `acc = fma(isum, dw*da, acc)`, then for Q4_1 `acc = fma(mw, sa, acc)`, where `isum` is the exact
//! integer dot of the block. The SIMD kernels do the same operations lane by lane, so results are equal.

use super::act::Act;
use super::layout::{f16_to_f32, TileQ4_1, TileQ8_0, TILE};

/// Q4_1 weights (one row tile, all `nb` block columns) times Q8_1 activation rows `c0..c0+C`.
pub fn q4_1<const C: usize>(tiles: &[TileQ4_1], act: &Act, c0: usize) -> [[f32; TILE]; C] {
    let mut acc = [[0f32; TILE]; C];
    for (b, tile) in tiles.iter().enumerate() {
        for (c, acc) in acc.iter_mut().enumerate() {
            let a = act.block(c0 + c, b);
            let (da, sa) = (act.d[(c0 + c) * act.nb + b], act.s[(c0 + c) * act.nb + b]);
            for (r, acc) in acc.iter_mut().enumerate() {
                let mut isum = 0i32;
                for p in 0..4 {
                    for j in 0..4 {
                        let byte = tile.qs[(p * TILE + r) * 4 + j];
                        isum += (byte & 0x0F) as i32 * a[4 * p + j] as i32;
                        isum += (byte >> 4) as i32 * a[16 + 4 * p + j] as i32;
                    }
                }
                let (dw, mw) = (f16_to_f32(tile.d[r]), f16_to_f32(tile.m[r]));
                *acc = (isum as f32).mul_add(dw * da, *acc);
                *acc = mw.mul_add(sa, *acc);
            }
        }
    }
    acc
}

/// Q8_0 weights (one row tile) times Q8_0 activation rows `c0..c0+C`.
pub fn q8_0<const C: usize>(tiles: &[TileQ8_0], act: &Act, c0: usize) -> [[f32; TILE]; C] {
    let mut acc = [[0f32; TILE]; C];
    for (b, tile) in tiles.iter().enumerate() {
        for (c, acc) in acc.iter_mut().enumerate() {
            let a = act.block(c0 + c, b);
            let da = act.d[(c0 + c) * act.nb + b];
            for (r, acc) in acc.iter_mut().enumerate() {
                let mut isum = 0i32;
                for g in 0..8 {
                    for j in 0..4 {
                        isum += tile.qs[(g * TILE + r) * 4 + j] as i8 as i32 * a[4 * g + j] as i32;
                    }
                }
                *acc = (isum as f32).mul_add(f16_to_f32(tile.d[r]) * da, *acc);
            }
        }
    }
    acc
}
