//! AVX-512 VNNI tile kernels: one zmm lane per output row, `vpdpbusd` for 4 k-values of 16 rows at once.
//!
//! Same arithmetic and order as `scalar.rs` (see there), so results are bit-identical to it.

use super::act::Act;
use super::avx2::prefetch_ahead;
use super::layout::{TileQ4_1, TileQ8_0, QK, TILE};

pub use super::avx512_k::{q4k, q6k};
use std::arch::x86_64::*;

/// Q5_0 kept at 5 bits, and its unsigned prefill unpacking, run AVX2's kernel (every AVX-512 CPU has
/// AVX2); AVX-512 machines load Q5_0 unpacked for `q5_0` below instead (`QMatrix::from_rows`), so
/// these serve forced-kernel tests.
pub use super::avx2::{q5_0p, q5_0u};

pub fn available() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vnni")
}

/// Broadcasts the 4 activation bytes at `a` to every 32-bit lane.
///
/// # Safety
/// `a..a + 4` must be readable (any alignment), and the CPU must support AVX-512F (`available()`).
#[inline(always)]
pub(super) unsafe fn bcast4(a: *const i8) -> __m512i {
    // SAFETY: the caller guarantees 4 readable bytes at `a` and AVX-512F; `read_unaligned` needs no
    // alignment.
    unsafe { _mm512_set1_epi32((a as *const i32).read_unaligned()) }
}

/// Pointers to row `c0`, block 0 of `act`'s quants, `d` and `s`; row `c0 + c`, block `b` is at offset
/// `(c * nb + b)` blocks from them. Checks that rows `c0..c0+C` exist.
#[inline(always)]
fn rows<const C: usize>(act: &Act, c0: usize) -> (*const i8, *const f32, *const f32) {
    assert!(c0 + C <= act.m);
    let i = c0 * act.nb;
    (
        act.qs[i * QK..].as_ptr(),
        act.d[i..].as_ptr(),
        act.s[i..].as_ptr(),
    )
}

/// 16 f16 values as f32.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn f16x16(h: &[u16; TILE]) -> __m512 {
    // SAFETY: `h` is 16 u16 = 32 readable bytes; `loadu` is unaligned.
    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(h.as_ptr() as *const __m256i) })
}

/// 64 bytes: 4 k-values of each of a tile's 16 rows.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn load64(q: &[u8; 64]) -> __m512i {
    // SAFETY: `q` is 64 readable bytes; `loadu` is unaligned.
    unsafe { _mm512_loadu_si512(q.as_ptr() as *const __m512i) }
}

#[target_feature(enable = "avx512f")]
pub(super) fn store<const C: usize>(acc: [__m512; C], out: &mut [[f32; TILE]; C]) {
    for (o, a) in out.iter_mut().zip(acc) {
        // SAFETY: a 16-float store into a 16-float array; `storeu` is unaligned.
        unsafe { _mm512_storeu_ps(o.as_mut_ptr(), a) };
    }
}

/// Group `g` (64 bytes) of a tile's quants.
#[inline(always)]
pub(super) fn group<const N: usize>(qs: &[u8; N], g: usize) -> &[u8; 64] {
    qs[64 * g..][..64].try_into().unwrap()
}

/// Q4_1 x Q8_1 for activation rows `c0..c0+C`; see `scalar::q4_1`.
///
/// # Safety
/// The CPU must support AVX-512 F/BW/VNNI (`available()`).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn q4_1<const C: usize>(
    tiles: &[TileQ4_1],
    act: &Act,
    c0: usize,
    out: &mut [[f32; TILE]; C],
) {
    assert_eq!(tiles.len(), act.nb);
    let (qs, d, s) = rows::<C>(act, c0);
    let nb = act.nb;
    let low = _mm512_set1_epi8(0x0F);
    let mut acc = [_mm512_setzero_ps(); C];
    for (b, tile) in tiles.iter().enumerate() {
        prefetch_ahead(tile);
        let (dw, mw) = (f16x16(&tile.d), f16x16(&tile.m));
        // Chunk p (64 bytes): 16 rows x 4 nibble bytes; low nibbles are k = 4p.., high k = 16+4p..
        let (mut lo, mut hi) = ([_mm512_setzero_si512(); 4], [_mm512_setzero_si512(); 4]);
        for p in 0..4 {
            let v = load64(group(&tile.qs, p));
            lo[p] = _mm512_and_si512(v, low);
            hi[p] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        }
        for (c, acc) in acc.iter_mut().enumerate() {
            let i = c * nb + b;
            let mut isum = _mm512_setzero_si512();
            for p in 0..4 {
                // SAFETY: `rows` checked rows c0..c0+C exist, so block `i` (b < nb) lies inside
                // `act.qs`, and `16 + 4p + 4 <= QK`; AVX-512F per this fn's contract.
                let (x, y) = unsafe {
                    let a = qs.add(i * QK);
                    (bcast4(a.add(4 * p)), bcast4(a.add(16 + 4 * p)))
                };
                isum = _mm512_dpbusd_epi32(isum, lo[p], x);
                isum = _mm512_dpbusd_epi32(isum, hi[p], y);
            }
            // SAFETY: as above, index `i` is inside `act.d` and `act.s` (one value per block).
            let (da, sa) = unsafe { (*d.add(i), *s.add(i)) };
            // candle's unfused `acc += (isum*dw)*da + mw*sa`
            let t = _mm512_mul_ps(
                _mm512_mul_ps(_mm512_cvtepi32_ps(isum), dw),
                _mm512_set1_ps(da),
            );
            let u = _mm512_mul_ps(mw, _mm512_set1_ps(sa));
            *acc = _mm512_add_ps(*acc, _mm512_add_ps(t, u));
        }
    }
    store(acc, out)
}

/// Q8_0 x Q8_0 for activation rows `c0..c0+C`; see `scalar::q8_0` (8 partial sums per output, one
/// per 4-value group, as candle's AVX2 kernel keeps them). `vpdpbusd` wants unsigned weights, so
/// they are flipped to `q + 128` and each group's dot starts from `-128 * sum(a)`.
///
/// # Safety
/// As for `q4_1`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn q8_0<const C: usize>(
    tiles: &[TileQ8_0],
    act: &Act,
    c0: usize,
    out: &mut [[f32; TILE]; C],
) {
    assert_eq!(tiles.len(), act.nb);
    let (qs, d, _) = rows::<C>(act, c0);
    assert_eq!(act.gsum.len() * 4, act.qs.len());
    let gsum = act.gsum[c0 * act.nb * QK / 4..].as_ptr();
    let nb = act.nb;
    let flip = _mm512_set1_epi8(-128);
    let mut lanes = [[_mm512_setzero_ps(); 8]; C];
    for (b, tile) in tiles.iter().enumerate() {
        prefetch_ahead(tile);
        let dw = f16x16(&tile.d);
        for (c, lanes) in lanes.iter_mut().enumerate() {
            let i = c * nb + b;
            // SAFETY: `rows` checked rows c0..c0+C exist, so index `i` (b < nb) is inside `act.d`.
            let scale = _mm512_mul_ps(dw, _mm512_set1_ps(unsafe { *d.add(i) }));
            for (g, lane) in lanes.iter_mut().enumerate() {
                let u = _mm512_xor_si512(load64(group(&tile.qs, g)), flip);
                // SAFETY: rows c0..c0+C exist (checked by `rows`) and `gsum` has QK/4 = 8 entries per
                // block (asserted above), so `i * 8 + g` is inside it; block `i` of `act.qs` is too,
                // with `4g + 4 <= QK` bytes read; AVX-512F per this fn's contract.
                let (gs, a) = unsafe { (*gsum.add(i * 8 + g), bcast4(qs.add(i * QK + 4 * g))) };
                let isum = _mm512_dpbusd_epi32(_mm512_set1_epi32(-128 * gs), u, a);
                *lane = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(isum), *lane);
            }
        }
    }
    // candle's `hsum_float_8` order
    let add = |a, b| _mm512_add_ps(a, b);
    let sums = lanes.map(|l| {
        add(
            add(add(l[0], l[4]), add(l[2], l[6])),
            add(add(l[1], l[5]), add(l[3], l[7])),
        )
    });
    store(sums, out)
}

/// Q5_0 (unpacked to signed bytes) x Q8_0 for activation rows `c0..c0+C`; see `scalar::q5_0`. As in
/// `q8_0` the weights are flipped to `q + 128` for `vpdpbusd`, but a block's 8 groups chain into one
/// integer sum that starts from `-128 * sum(a)`: the exact `isum` of the scalar kernel, then its unfused
/// `acc += (isum*dw)*da`.
///
/// # Safety
/// As for `q4_1`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn q5_0<const C: usize>(
    tiles: &[TileQ8_0],
    act: &Act,
    c0: usize,
    out: &mut [[f32; TILE]; C],
) {
    assert_eq!(tiles.len(), act.nb);
    assert_eq!(act.sum.len(), act.d.len());
    let (qs, d, _) = rows::<C>(act, c0);
    let sum = act.sum[c0 * act.nb..].as_ptr();
    let nb = act.nb;
    let flip = _mm512_set1_epi8(-128);
    let mut acc = [_mm512_setzero_ps(); C];
    for (b, tile) in tiles.iter().enumerate() {
        prefetch_ahead(tile);
        let dw = f16x16(&tile.d);
        let u: [__m512i; 8] =
            std::array::from_fn(|g| _mm512_xor_si512(load64(group(&tile.qs, g)), flip));
        for (c, acc) in acc.iter_mut().enumerate() {
            let i = c * nb + b;
            // SAFETY: `rows` checked rows c0..c0+C exist, so index `i` (b < nb) is inside `act.d` and
            // `act.sum` (one value a block, asserted equal in length), and block `i` of `act.qs` holds
            // the `4g + 4 <= QK` bytes read; AVX-512F per this fn's contract.
            let (da, sa) = unsafe { (*d.add(i), *sum.add(i)) };
            let mut isum = _mm512_set1_epi32(-128 * sa);
            for (g, u) in u.iter().enumerate() {
                // SAFETY: as above.
                let a = unsafe { bcast4(qs.add(i * QK + 4 * g)) };
                isum = _mm512_dpbusd_epi32(isum, *u, a);
            }
            // candle's unfused `acc += (isum*dw)*da`
            let t = _mm512_mul_ps(
                _mm512_mul_ps(_mm512_cvtepi32_ps(isum), dw),
                _mm512_set1_ps(da),
            );
            *acc = _mm512_add_ps(*acc, t);
        }
    }
    store(acc, out)
}
