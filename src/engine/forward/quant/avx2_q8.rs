//! AVX2 (+FMA, F16C) tile kernels for Q8_0 weights against Q8_0 activations: a 16-row tile as two
//! 8-lane halves, `maddubs`+`madd` for each 4-value group's exact integer dot, and candle's 8 partial
//! sums a row (see `avx2.rs` for the shared parts).
//!
//! Same arithmetic and order as `scalar::q8_0` (see there), so results are bit-identical to it.

use super::act::Act;
use super::avx2::{bcast4, by_halves, f16x8, prefetch_ahead, rows};
use super::layout::{TileQ8_0, QK, TILE};
use std::arch::x86_64::*;

/// Q8_0 x Q8_0 for activation rows `c0..c0+C`; see `scalar::q8_0`.
/// `maddubs` needs an unsigned operand: `|a| * (w with a's sign)` where `act.abs` holds `|a|` (the
/// matrix has no weight of -128, whose sign flip would overflow: `QMatrix::abs_acts`), else
/// `|w| * (a with w's sign)`, one more sign a group. Each product pair fits in i16 either way.
///
/// # Safety
/// As for `q4_1`.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q8_0<const C: usize>(
    tiles: &[TileQ8_0],
    act: &Act,
    c0: usize,
    out: &mut [[f32; TILE]; C],
) {
    assert_eq!(tiles.len(), act.nb);
    // 8 partial sums per output (one per 4-value group), as candle's AVX2 kernel keeps them.
    let zero = [[_mm256_setzero_ps(); 8]; C];
    // SAFETY (each span): AVX2, FMA and F16C per this fn's contract; `tiles` is the whole row.
    by_halves!(
        tiles,
        act,
        zero,
        out,
        store_lanes,
        q8_0_one_row,
        |half, lanes| unsafe { q8_0_span(tiles, half, act, c0, lanes) }
    );
}

/// `q8_0` for a lone activation row (a decode step): both halves of each block in one pass, each
/// activation group broadcast once for the tile's 16 rows. Its 16 partial sums (8 a half) and the rest
/// do not all fit in the 16 registers, and a few spill; taking a chunk of 8 blocks a group (or four) at
/// a time instead, to keep them in registers, read the chunk in strides and ran 1.5x slower. Each
/// partial sum still runs over the blocks in order: the same bits.
///
/// # Safety
/// As for `q4_1`; `act.m == 1`.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q8_0_one_row(tiles: &[TileQ8_0], act: &Act, out: &mut [[f32; TILE]; 1]) {
    let (qs, d, _) = rows::<1>(act, 0);
    assert_eq!(tiles.len(), act.nb);
    let abs = (!act.abs.is_empty()).then(|| {
        assert_eq!(act.abs.len(), act.qs.len());
        act.abs.as_ptr() as *const i8
    });
    let ones = _mm256_set1_epi16(1);
    // `lanes[half][g]`
    let mut lanes = [[_mm256_setzero_ps(); 8]; 2];
    for (b, tile) in tiles.iter().enumerate() {
        prefetch_ahead(tile);
        // SAFETY: `rows` checked row 0 exists: index `b < nb` is inside `act.d`.
        let da = _mm256_set1_ps(unsafe { *d.add(b) });
        let scale = [0, 1].map(|half| _mm256_mul_ps(f16x8(&tile.d, half), da));
        for g in 0..8 {
            let at = b * QK + 4 * g;
            // SAFETY: block `b < nb` of row 0 is inside `act.qs` (and `abs`, as long), `4g + 4 <= QK`
            // bytes of it read; AVX2 per this fn's contract.
            let (a, size) = unsafe { (bcast4(qs.add(at)), abs.map(|p| bcast4(p.add(at)))) };
            for (half, lanes) in lanes.iter_mut().enumerate() {
                let off = (g * TILE + 8 * half) * 4;
                let v = &tile.qs[off..off + 32];
                // SAFETY: `v` is 32 readable bytes (bounds-checked); `loadu` is unaligned.
                let v = unsafe { _mm256_loadu_si256(v.as_ptr() as *const __m256i) };
                let dot = match size {
                    Some(size) => _mm256_maddubs_epi16(size, _mm256_sign_epi8(v, a)),
                    None => _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(a, v)),
                };
                let isum = _mm256_cvtepi32_ps(_mm256_madd_epi16(dot, ones));
                lanes[g] = _mm256_fmadd_ps(scale[half], isum, lanes[g]);
            }
        }
    }
    for (half, lanes) in lanes.iter().enumerate() {
        store_lanes(out, half, std::slice::from_ref(lanes).try_into().unwrap());
    }
}

/// Stores rows `8 half..8 half + 8` of each output row of a Q8_0 tile: the sum of its 8 partial sums,
/// in candle's order.
#[inline]
#[target_feature(enable = "avx2")]
fn store_lanes<const C: usize>(out: &mut [[f32; TILE]; C], half: usize, lanes: &[[__m256; 8]; C]) {
    let add = |a, b| _mm256_add_ps(a, b);
    for (o, l) in out.iter_mut().zip(lanes) {
        let sum = add(
            add(add(l[0], l[4]), add(l[2], l[6])),
            add(add(l[1], l[5]), add(l[3], l[7])),
        );
        let o = &mut o[8 * half..][..8];
        // SAFETY: `o` is 8 writable floats (bounds-checked slice); `storeu` is unaligned.
        unsafe { _mm256_storeu_ps(o.as_mut_ptr(), sum) };
    }
}

/// `q8_0`'s partial sums for rows `8 half..8 half + 8` over the row's `tiles`.
///
/// # Safety
/// As for `q4_1`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q8_0_span<const C: usize>(
    tiles: &[TileQ8_0],
    half: usize,
    act: &Act,
    c0: usize,
    lanes: &mut [[__m256; 8]; C],
) {
    let (qs, d, _) = rows::<C>(act, c0);
    let nb = act.nb;
    assert_eq!(tiles.len(), nb);
    let abs = (!act.abs.is_empty()).then(|| {
        assert_eq!(act.abs.len(), act.qs.len());
        act.abs[c0 * nb * QK..(c0 + C) * nb * QK].as_ptr() as *const i8
    });
    let ones = _mm256_set1_epi16(1);
    for (b, tile) in tiles.iter().enumerate() {
        if half == 0 {
            prefetch_ahead(tile);
        }
        let dw = f16x8(&tile.d, half);
        for (g, lane) in (0..8).zip(0..) {
            let at = (g * TILE + 8 * half) * 4;
            let v = &tile.qs[at..at + 32];
            // SAFETY: `v` is 32 readable bytes (bounds-checked slice); `loadu` is unaligned.
            let v = unsafe { _mm256_loadu_si256(v.as_ptr() as *const __m256i) };
            // The weights as the dot takes them: as they are against `|a|`, else their sizes.
            let w = match abs {
                Some(_) => v,
                None => _mm256_sign_epi8(v, v),
            };
            for (c, lanes) in lanes.iter_mut().enumerate() {
                let at = (c * nb + b) * QK + 4 * g;
                // SAFETY: `rows` checked rows c0..c0+C exist, so block `c * nb + b` (b < nb) is
                // inside `act.qs` (and `abs`, as long) with `4g + 4 <= QK` bytes of it read, and
                // index `c * nb + b` is inside `act.d`; AVX2 per this fn's contract.
                let (a, da) = unsafe { (bcast4(qs.add(at)), *d.add(c * nb + b)) };
                let dot = match abs {
                    // SAFETY: as above.
                    Some(abs) => unsafe {
                        _mm256_maddubs_epi16(bcast4(abs.add(at)), _mm256_sign_epi8(w, a))
                    },
                    None => _mm256_maddubs_epi16(w, _mm256_sign_epi8(a, v)),
                };
                let isum = _mm256_madd_epi16(dot, ones);
                let scale = _mm256_mul_ps(dw, _mm256_set1_ps(da));
                lanes[lane] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(isum), lanes[lane]);
            }
        }
    }
}
