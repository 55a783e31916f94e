//! AVX-512 VNNI tile kernels for the K-quants against Q8_K activations: one zmm lane per output row,
//! `vpdpbusd` for 4 k-values of 16 rows at once (the unsigned weight quants against the signed
//! activation bytes, so neither needs flipping).
//!
//! Same arithmetic and order as `scalar::q4k` / `scalar::q6k` (see there): the integer sums of each
//! sub-block are exact whichever instructions add them, and the float steps are the scalar kernel's, so
//! results are bit-identical to it.

use super::act::Act;
use super::avx2::prefetch_ahead;
use super::avx2_k::rows;
use super::avx512::{bcast4, f16x16, group, load64, store};
use super::layout::TILE;
use super::layout_k::{TileQ4K, TileQ6K, QK_K};
use std::arch::x86_64::*;

/// The 16 bytes `v[..16]` as f32 (unsigned).
#[inline]
#[target_feature(enable = "avx512f")]
fn u8x16(v: &[u8]) -> __m512 {
    let v = &v[..16];
    // SAFETY: `v` is 16 readable bytes (bounds-checked slice); `loadu` is unaligned.
    let v = unsafe { _mm_loadu_si128(v.as_ptr() as *const __m128i) };
    _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v))
}

/// The 16 bytes `v[..16]` as f32 (signed).
#[inline]
#[target_feature(enable = "avx512f")]
fn i8x16(v: &[i8]) -> __m512 {
    let v = &v[..16];
    // SAFETY: `v` is 16 readable bytes (bounds-checked slice); `loadu` is unaligned.
    let v = unsafe { _mm_loadu_si128(v.as_ptr() as *const __m128i) };
    _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v))
}

/// Q4_K x Q8_K for activation rows `c0..c0+C`; see `scalar::q4k`.
///
/// # Safety
/// The CPU must support AVX-512 F/BW/VNNI (`avx512::available()`).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn q4k<const C: usize>(
    tiles: &[TileQ4K],
    act: &Act,
    c0: usize,
    out: &mut [[f32; TILE]; C],
) {
    assert_eq!(tiles.len(), act.nb);
    let (qs, d, bsums) = rows::<C>(act, c0);
    let nb = act.nb;
    let low = _mm512_set1_epi8(0x0F);
    let mut acc = [_mm512_setzero_ps(); C];
    for (b, tile) in tiles.iter().enumerate() {
        prefetch_ahead(tile);
        let (dw, mw) = (f16x16(&tile.d), f16x16(&tile.dmin));
        for s in 0..8 {
            // Group p of sub-block s: 16 rows x 4 nibble bytes; low nibbles are k = 32s+4p.., high
            // k = 32s+16+4p..
            let (mut lo, mut hi) = ([_mm512_setzero_si512(); 4], [_mm512_setzero_si512(); 4]);
            for p in 0..4 {
                let v = load64(group(&tile.qs, 4 * s + p));
                lo[p] = _mm512_and_si512(v, low);
                hi[p] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
            }
            let scale = _mm512_mul_ps(dw, u8x16(&tile.sc[s * TILE..]));
            let min = _mm512_mul_ps(mw, u8x16(&tile.mn[s * TILE..]));
            for (c, acc) in acc.iter_mut().enumerate() {
                let i = c * nb + b;
                let mut isum = _mm512_setzero_si512();
                for p in 0..4 {
                    // SAFETY: `rows` checked rows c0..c0+C exist, so block `i` (b < nb) is inside
                    // `act.qs`, and `32s + 16 + 4p + 4 <= QK_K`; AVX-512F per this fn's contract.
                    let (x, y) = unsafe {
                        let a = qs.add(i * QK_K + 32 * s);
                        (bcast4(a.add(4 * p)), bcast4(a.add(16 + 4 * p)))
                    };
                    isum = _mm512_dpbusd_epi32(isum, lo[p], x);
                    isum = _mm512_dpbusd_epi32(isum, hi[p], y);
                }
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
                // candle's `acc = fma(isum, scale*da, acc)`, then `acc = fnma(min, da*bsum, acc)`
                let isum = _mm512_cvtepi32_ps(isum);
                *acc = _mm512_fmadd_ps(isum, _mm512_mul_ps(scale, _mm512_set1_ps(da)), *acc);
                *acc = _mm512_fnmadd_ps(min, _mm512_set1_ps(da * bsum), *acc);
            }
        }
    }
    store(acc, out)
}

/// Q6_K x Q8_K for activation rows `c0..c0+C`; see `scalar::q6k`. Each sub-block's integer sum starts
/// from `-32 * bsum`, the scalar kernel's `isum - 32*bsum`, exactly.
///
/// # Safety
/// As for `q4k`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn q6k<const C: usize>(
    tiles: &[TileQ6K],
    act: &Act,
    c0: usize,
    out: &mut [[f32; TILE]; C],
) {
    assert_eq!(tiles.len(), act.nb);
    let (qs, d, bsums) = rows::<C>(act, c0);
    let nb = act.nb;
    let mut acc = [_mm512_setzero_ps(); C];
    for (b, tile) in tiles.iter().enumerate() {
        prefetch_ahead(tile);
        let dw = f16x16(&tile.d);
        for s in 0..16 {
            let v: [__m512i; 4] = std::array::from_fn(|j| load64(group(&tile.qs, 4 * s + j)));
            let scale = _mm512_mul_ps(dw, i8x16(&tile.sc[s * TILE..]));
            for (c, acc) in acc.iter_mut().enumerate() {
                let i = c * nb + b;
                // SAFETY: as in `q4k`: index `i` is inside `act.d`, `16i + s` inside `act.bsums`.
                let (da, bsum) = unsafe { (*d.add(i), *bsums.add(16 * i + s) as i32) };
                let mut isum = _mm512_set1_epi32(-32 * bsum);
                for (j, v) in v.iter().enumerate() {
                    // SAFETY: `rows` checked rows c0..c0+C exist, so block `i` (b < nb) is inside
                    // `act.qs`, and `16s + 4j + 4 <= QK_K`; AVX-512F per this fn's contract.
                    let a = unsafe { bcast4(qs.add(i * QK_K + 16 * s + 4 * j)) };
                    isum = _mm512_dpbusd_epi32(isum, *v, a);
                }
                // candle's `acc = fma(isum - 32*bsum, scale*da, acc)`
                let f = _mm512_cvtepi32_ps(isum);
                *acc = _mm512_fmadd_ps(f, _mm512_mul_ps(scale, _mm512_set1_ps(da)), *acc);
            }
        }
    }
    store(acc, out)
}
