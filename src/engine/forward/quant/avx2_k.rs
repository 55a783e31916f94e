//! AVX2 (+FMA, F16C) tile kernels for the K-quants against Q8_K activations: a 16-row tile as two 8-lane
//! halves, `maddubs`+`madd` for the exact integer dots of each sub-block.
//!
//! Same arithmetic and order as `scalar::q4k` / `scalar::q6k` (see there), so results are bit-identical
//! to them.

use super::act::Act;
use super::avx2::{bcast4, by_halves, f16x8, nibble_dots, prefetch_ahead, store_half};
use super::layout::TILE;
use super::layout_k::{TileQ4K, TileQ6K, QK_K};
use std::arch::x86_64::*;

/// Pointers to row `c0`, block 0 of `act`'s quants, `d` and `bsums`; row `c0 + c`, block `b` is at
/// offset `c * nb + b` blocks from them (`QK_K` quants, one `d`, 16 `bsums` a block). Checks that rows
/// `c0..c0+C` exist and that `act` is Q8_K.
#[inline(always)]
pub(super) fn rows<const C: usize>(act: &Act, c0: usize) -> (*const i8, *const f32, *const i16) {
    assert!(c0 + C <= act.m);
    assert!(act.qk == QK_K && act.bsums.len() * 16 == act.qs.len());
    let i = c0 * act.nb;
    (
        act.qs[i * QK_K..].as_ptr(),
        act.d[i..].as_ptr(),
        act.bsums[i * 16..].as_ptr(),
    )
}

/// The 8 bytes `v[..8]` as f32 (unsigned).
#[inline]
#[target_feature(enable = "avx2")]
fn u8x8(v: &[u8]) -> __m256 {
    let v = &v[..8];
    // SAFETY: `v` is 8 readable bytes (bounds-checked slice); `loadl` reads 8 bytes, unaligned.
    let v = unsafe { _mm_loadl_epi64(v.as_ptr() as *const __m128i) };
    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v))
}

/// The 8 bytes `v[..8]` as f32 (signed).
#[inline]
#[target_feature(enable = "avx2")]
fn i8x8(v: &[i8]) -> __m256 {
    let v = &v[..8];
    // SAFETY: `v` is 8 readable bytes (bounds-checked slice); `loadl` reads 8 bytes, unaligned.
    let v = unsafe { _mm_loadl_epi64(v.as_ptr() as *const __m128i) };
    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v))
}

/// 32 bytes of a tile's quants from `at`: one 4-value group of 8 rows.
#[inline]
#[target_feature(enable = "avx2")]
fn load32(qs: &[u8], at: usize) -> __m256i {
    let v = &qs[at..at + 32];
    // SAFETY: `v` is 32 readable bytes (bounds-checked slice); `loadu` is unaligned.
    unsafe { _mm256_loadu_si256(v.as_ptr() as *const __m256i) }
}

/// Q4_K x Q8_K for activation rows `c0..c0+C`; see `scalar::q4k`.
/// Each `maddubs` pair sum is at most 2*15*127 = 3810, so the 8 of a sub-block add up in i16 (30480).
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C (`avx2::available()`).
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4k<const C: usize>(
    tiles: &[TileQ4K],
    act: &Act,
    c0: usize,
    out: &mut [[f32; TILE]; C],
) {
    assert_eq!(tiles.len(), act.nb);
    // SAFETY (each span): AVX2, FMA and F16C per this fn's contract; `tiles` is the whole row.
    by_halves!(
        tiles,
        act,
        [_mm256_setzero_ps(); C],
        out,
        store_half,
        q4k_one_row,
        |half, acc| unsafe { q4k_span(tiles, half, act, c0, acc) }
    );
}

/// `q4k` for a lone activation row (a decode step): both halves of each sub-block in one pass, each
/// activation group broadcast once for the tile's 16 rows (as `avx2::q4_1`). Each row's sum runs over
/// its sub-blocks in the same order: the same bits.
///
/// # Safety
/// As for `q4k`; `act.m == 1`.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q4k_one_row(tiles: &[TileQ4K], act: &Act, out: &mut [[f32; TILE]; 1]) {
    let (qs, d, bsums) = rows::<1>(act, 0);
    assert_eq!(tiles.len(), act.nb);
    let ones = _mm256_set1_epi16(1);
    let mut acc = [_mm256_setzero_ps(); 2];
    for (b, tile) in tiles.iter().enumerate() {
        prefetch_ahead(tile);
        // SAFETY: `rows` checked row 0 exists and that `act` has 16 bsums a block: index `b < nb` is
        // inside `act.d`, and `16b..16b + 16` inside `act.bsums`.
        let (da, bs) = unsafe { (*d.add(b), std::slice::from_raw_parts(bsums.add(16 * b), 16)) };
        let dw = [0, 1].map(|half| f16x8(&tile.d, half));
        let mw = [0, 1].map(|half| f16x8(&tile.dmin, half));
        for s in 0..8 {
            let mut sum16 = [_mm256_setzero_si256(); 2];
            for p in 0..4 {
                // SAFETY: block `b < nb` of row 0 is inside `act.qs`, and `32s + 16 + 4p + 4 <= QK_K`;
                // AVX2 per this fn's contract.
                let (x, y) = unsafe {
                    let a = qs.add(b * QK_K + 32 * s);
                    (bcast4(a.add(4 * p)), bcast4(a.add(16 + 4 * p)))
                };
                nibble_dots(&tile.qs, (4 * s + p) * TILE * 4, (x, y), &mut sum16);
            }
            let bsum = (bs[2 * s] as i32 + bs[2 * s + 1] as i32) as f32;
            for (half, acc) in acc.iter_mut().enumerate() {
                let scale = _mm256_mul_ps(dw[half], u8x8(&tile.sc[s * TILE + 8 * half..]));
                let min = _mm256_mul_ps(mw[half], u8x8(&tile.mn[s * TILE + 8 * half..]));
                let isum = _mm256_cvtepi32_ps(_mm256_madd_epi16(sum16[half], ones));
                // candle's `acc = fma(isum, scale*da, acc)`, then `acc = fnma(min, da*bsum, acc)`
                *acc = _mm256_fmadd_ps(isum, _mm256_mul_ps(scale, _mm256_set1_ps(da)), *acc);
                *acc = _mm256_fnmadd_ps(min, _mm256_set1_ps(da * bsum), *acc);
            }
        }
    }
    for (half, acc) in acc.iter().enumerate() {
        store_half(out, half, &[*acc]);
    }
}

/// `q4k`'s sums for rows `8 half..8 half + 8` over the row's `tiles`.
///
/// # Safety
/// As for `q4k`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q4k_span<const C: usize>(
    tiles: &[TileQ4K],
    half: usize,
    act: &Act,
    c0: usize,
    acc: &mut [__m256; C],
) {
    let (qs, d, bsums) = rows::<C>(act, c0);
    let nb = act.nb;
    let low = _mm256_set1_epi8(0x0F);
    let ones = _mm256_set1_epi16(1);
    assert_eq!(tiles.len(), nb);
    for (b, tile) in tiles.iter().enumerate() {
        if half == 0 {
            prefetch_ahead(tile);
        }
        let (dw, mw) = (f16x8(&tile.d, half), f16x8(&tile.dmin, half));
        for s in 0..8 {
            let mut sum16 = [_mm256_setzero_si256(); C];
            for p in 0..4 {
                let v = load32(&tile.qs, ((4 * s + p) * TILE + 8 * half) * 4);
                let lo = _mm256_and_si256(v, low);
                let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
                for (c, sum16) in sum16.iter_mut().enumerate() {
                    // SAFETY: `rows` checked rows c0..c0+C exist, so block `c * nb + b` (b < nb)
                    // is inside `act.qs`, and `32s + 16 + 4p + 4 <= QK_K`; AVX2 per this fn's contract.
                    let (x, y) = unsafe {
                        let a = qs.add((c * nb + b) * QK_K + 32 * s);
                        (bcast4(a.add(4 * p)), bcast4(a.add(16 + 4 * p)))
                    };
                    let x = _mm256_maddubs_epi16(lo, x);
                    let y = _mm256_maddubs_epi16(hi, y);
                    *sum16 = _mm256_add_epi16(*sum16, _mm256_add_epi16(x, y));
                }
            }
            let scale = _mm256_mul_ps(dw, u8x8(&tile.sc[s * TILE + 8 * half..]));
            let min = _mm256_mul_ps(mw, u8x8(&tile.mn[s * TILE + 8 * half..]));
            for (c, acc) in acc.iter_mut().enumerate() {
                let i = c * nb + b;
                // SAFETY: `rows` checked rows c0..c0+C exist and that `act` has 16 bsums a block:
                // index `i` is inside `act.d`, `16i + 2s + 1 < 16(i + 1)` inside `act.bsums`.
                let (da, b0, b1) = unsafe {
                    (
                        *d.add(i),
                        *bsums.add(16 * i + 2 * s),
                        *bsums.add(16 * i + 2 * s + 1),
                    )
                };
                let bsum = (b0 as i32 + b1 as i32) as f32;
                let isum = _mm256_cvtepi32_ps(_mm256_madd_epi16(sum16[c], ones));
                // candle's `acc = fma(isum, scale*da, acc)`, then `acc = fnma(min, da*bsum, acc)`
                *acc = _mm256_fmadd_ps(isum, _mm256_mul_ps(scale, _mm256_set1_ps(da)), *acc);
                *acc = _mm256_fnmadd_ps(min, _mm256_set1_ps(da * bsum), *acc);
            }
        }
    }
}

/// Q6_K x Q8_K for activation rows `c0..c0+C`; see `scalar::q6k`. The unsigned 6-bit quants `u = q + 32`
/// go into `maddubs` as they are (pair sums at most 2 * 63 * 128 = 16128): each row's two i16 lanes
/// start from the sub-block's `Act::lane_bias` (`32 a` summed over the values each lane takes), the
/// `u a` pairs come off them, and they end at `-sum(q a)` over their 8 values, in -32768..=32512 (the
/// subtractions on the way wrap harmlessly): one `madd` by -1 gives the sub-block's `isum - 32 bsum`.
///
/// # Safety
/// As for `q4k`.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q6k<const C: usize>(
    tiles: &[TileQ6K],
    act: &Act,
    c0: usize,
    out: &mut [[f32; TILE]; C],
) {
    assert_eq!(tiles.len(), act.nb);
    // SAFETY (each span): AVX2, FMA and F16C per this fn's contract; `tiles` is the whole row.
    by_halves!(
        tiles,
        act,
        [_mm256_setzero_ps(); C],
        out,
        store_half,
        q6k_one_row,
        |half, acc| unsafe { q6k_span(tiles, half, act, c0, acc) }
    );
}

/// `q6k` for a lone activation row (a decode step): both halves of each sub-block in one pass, its
/// lane bias and each activation group broadcast once for the tile's 16 rows. Each row's sum runs
/// over its sub-blocks in the same order: the same bits.
///
/// # Safety
/// As for `q6k`; `act.m == 1`.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q6k_one_row(tiles: &[TileQ6K], act: &Act, out: &mut [[f32; TILE]; 1]) {
    let (qs, d, _) = rows::<1>(act, 0);
    assert_eq!(tiles.len(), act.nb);
    let bias = act.lane_bias[..act.nb * 16].as_ptr() as *const i8;
    let minus_ones = _mm256_set1_epi16(-1);
    let mut acc = [_mm256_setzero_ps(); 2];
    for (b, tile) in tiles.iter().enumerate() {
        prefetch_ahead(tile);
        // SAFETY: `rows` checked row 0 exists: index `b < nb` is inside `act.d`.
        let da = _mm256_set1_ps(unsafe { *d.add(b) });
        let dw = [0, 1].map(|half| f16x8(&tile.d, half));
        for s in 0..16 {
            // SAFETY: `bias` holds 16 4-byte entries a block (the slice above is bounds-checked),
            // `16b + s` one of them; AVX2 per this fn's contract.
            let mut sum16 = [unsafe { bcast4(bias.add(4 * (16 * b + s))) }; 2];
            for g in 4 * s..4 * s + 4 {
                // SAFETY: block `b < nb` of row 0 is inside `act.qs`, and `4g + 4 <= QK_K`; AVX2 per
                // this fn's contract.
                let a = unsafe { bcast4(qs.add(b * QK_K + 4 * g)) };
                for (half, sum16) in sum16.iter_mut().enumerate() {
                    let v = load32(&tile.qs, (g * TILE + 8 * half) * 4);
                    *sum16 = _mm256_sub_epi16(*sum16, _mm256_maddubs_epi16(v, a));
                }
            }
            for (half, acc) in acc.iter_mut().enumerate() {
                let scale = _mm256_mul_ps(dw[half], i8x8(&tile.sc[s * TILE + 8 * half..]));
                let f = _mm256_cvtepi32_ps(_mm256_madd_epi16(sum16[half], minus_ones));
                // candle's `acc = fma(isum - 32*bsum, scale*da, acc)`
                *acc = _mm256_fmadd_ps(f, _mm256_mul_ps(scale, da), *acc);
            }
        }
    }
    for (half, acc) in acc.iter().enumerate() {
        store_half(out, half, &[*acc]);
    }
}

/// `q6k`'s sums for rows `8 half..8 half + 8` over the row's `tiles`.
///
/// # Safety
/// As for `q6k`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn q6k_span<const C: usize>(
    tiles: &[TileQ6K],
    half: usize,
    act: &Act,
    c0: usize,
    acc: &mut [__m256; C],
) {
    let (qs, d, _) = rows::<C>(act, c0);
    let nb = act.nb;
    let bias = act.lane_bias[c0 * nb * 16..(c0 + C) * nb * 16].as_ptr() as *const i8;
    let minus_ones = _mm256_set1_epi16(-1);
    assert_eq!(tiles.len(), nb);
    for (b, tile) in tiles.iter().enumerate() {
        if half == 0 {
            prefetch_ahead(tile);
        }
        let dw = f16x8(&tile.d, half);
        for s in 0..16 {
            // SAFETY: `bias` holds 16 4-byte entries a block of rows c0..c0+C (the slice above is
            // bounds-checked), `16 (c nb + b) + s` one of them; AVX2 per this fn's contract.
            let mut sum16: [__m256i; C] =
                std::array::from_fn(|c| unsafe { bcast4(bias.add(4 * (16 * (c * nb + b) + s))) });
            for g in 4 * s..4 * s + 4 {
                let v = load32(&tile.qs, (g * TILE + 8 * half) * 4);
                for (c, sum16) in sum16.iter_mut().enumerate() {
                    // SAFETY: `rows` checked rows c0..c0+C exist, so block `c * nb + b` (b < nb)
                    // is inside `act.qs`, and `4g + 4 <= QK_K`; AVX2 per this fn's contract.
                    let a = unsafe { bcast4(qs.add((c * nb + b) * QK_K + 4 * g)) };
                    *sum16 = _mm256_sub_epi16(*sum16, _mm256_maddubs_epi16(v, a));
                }
            }
            let scale = _mm256_mul_ps(dw, i8x8(&tile.sc[s * TILE + 8 * half..]));
            for (c, acc) in acc.iter_mut().enumerate() {
                // SAFETY: `rows` checked rows c0..c0+C exist: index `c * nb + b` is inside `act.d`.
                let da = unsafe { *d.add(c * nb + b) };
                let f = _mm256_cvtepi32_ps(_mm256_madd_epi16(sum16[c], minus_ones));
                // candle's `acc = fma(isum - 32*bsum, scale*da, acc)`
                *acc = _mm256_fmadd_ps(f, _mm256_mul_ps(scale, _mm256_set1_ps(da)), *acc);
            }
        }
    }
}
