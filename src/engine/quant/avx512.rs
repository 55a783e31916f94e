//! AVX-512 VNNI tile kernels: one zmm lane per output row, `vpdpbusd` for 4 k-values of 16 rows at once.
//!
//! Same arithmetic and order as `scalar.rs` (see there), so results are bit-identical to it.

use super::act::Act;
use super::layout::{TileQ4_1, TileQ8_0, TILE};
use std::arch::x86_64::*;

pub fn available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vnni")
}

/// Broadcasts activation bytes `a[at..at+4]` to every 32-bit lane.
#[inline(always)]
unsafe fn bcast4(a: &[i8], at: usize) -> __m512i {
    debug_assert!(at + 4 <= a.len());
    // SAFETY: caller keeps `at + 4 <= a.len()` (blocks are 32 bytes, `at` is at most 28).
    _mm512_set1_epi32((a.as_ptr().add(at) as *const i32).read_unaligned())
}

/// Q4_1 x Q8_1 for activation rows `c0..c0+C`; see `scalar::q4_1`.
///
/// # Safety
/// The CPU must support AVX-512 F/BW/VNNI (`available()`); `c0 + C <= act.m`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn q4_1<const C: usize>(tiles: &[TileQ4_1], act: &Act, c0: usize) -> [[f32; TILE]; C] {
    assert!(c0 + C <= act.m && tiles.len() == act.nb);
    let low = _mm512_set1_epi8(0x0F);
    let mut acc = [_mm512_setzero_ps(); C];
    for (b, tile) in tiles.iter().enumerate() {
        let dw = _mm512_cvtph_ps(_mm256_loadu_si256(tile.d.as_ptr() as *const __m256i));
        let mw = _mm512_cvtph_ps(_mm256_loadu_si256(tile.m.as_ptr() as *const __m256i));
        let mut isum = [_mm512_setzero_si512(); C];
        for p in 0..4 {
            // 64 bytes: rows 0..16 x 4 nibble bytes; low nibbles are k = 4p.., high are k = 16+4p..
            let v = _mm512_loadu_si512(tile.qs.as_ptr().add(p * 64) as *const __m512i);
            let lo = _mm512_and_si512(v, low);
            let hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
            for (c, isum) in isum.iter_mut().enumerate() {
                let a = act.block(c0 + c, b);
                *isum = _mm512_dpbusd_epi32(*isum, lo, bcast4(a, 4 * p));
                *isum = _mm512_dpbusd_epi32(*isum, hi, bcast4(a, 16 + 4 * p));
            }
        }
        for (c, acc) in acc.iter_mut().enumerate() {
            let i = (c0 + c) * act.nb + b;
            let scale = _mm512_mul_ps(dw, _mm512_set1_ps(act.d[i]));
            *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]), scale, *acc);
            *acc = _mm512_fmadd_ps(mw, _mm512_set1_ps(act.s[i]), *acc);
        }
    }
    let mut out = [[0f32; TILE]; C];
    for (o, a) in out.iter_mut().zip(acc) {
        _mm512_storeu_ps(o.as_mut_ptr(), a);
    }
    out
}

/// Q8_0 x Q8_0 for activation rows `c0..c0+C`; see `scalar::q8_0`.
/// `vpdpbusd` wants unsigned weights, so they are flipped to `q + 128` and `128 * sum(a)` is taken off.
///
/// # Safety
/// As for `q4_1`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn q8_0<const C: usize>(tiles: &[TileQ8_0], act: &Act, c0: usize) -> [[f32; TILE]; C] {
    assert!(c0 + C <= act.m && tiles.len() == act.nb);
    let flip = _mm512_set1_epi8(-128);
    let mut acc = [_mm512_setzero_ps(); C];
    for (b, tile) in tiles.iter().enumerate() {
        let dw = _mm512_cvtph_ps(_mm256_loadu_si256(tile.d.as_ptr() as *const __m256i));
        let mut isum = [_mm512_setzero_si512(); C];
        for g in 0..8 {
            let v = _mm512_loadu_si512(tile.qs.as_ptr().add(g * 64) as *const __m512i);
            let u = _mm512_xor_si512(v, flip);
            for (c, isum) in isum.iter_mut().enumerate() {
                *isum = _mm512_dpbusd_epi32(*isum, u, bcast4(act.block(c0 + c, b), 4 * g));
            }
        }
        for (c, acc) in acc.iter_mut().enumerate() {
            let i = (c0 + c) * act.nb + b;
            let exact = _mm512_sub_epi32(isum[c], _mm512_set1_epi32(128 * act.sum[i]));
            let scale = _mm512_mul_ps(dw, _mm512_set1_ps(act.d[i]));
            *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(exact), scale, *acc);
        }
    }
    let mut out = [[0f32; TILE]; C];
    for (o, a) in out.iter_mut().zip(acc) {
        _mm512_storeu_ps(o.as_mut_ptr(), a);
    }
    out
}
