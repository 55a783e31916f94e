//! AVX2 + F16C activation quantisation, bit-identical to `act.rs`'s portable code (and so to candle).

use super::act::{round_scales, Act, ActKind};
use super::layout::QK;
use std::arch::x86_64::*;

/// `act.rs`'s `quantize_rows`, 8 lanes at a time: each block's quants, `sum(q)` and `d`, then the
/// f16 roundings of `d` and `s` 8 blocks at a time.
///
/// # Safety
/// The CPU must support AVX2 and F16C.
#[target_feature(enable = "avx2,f16c")]
pub unsafe fn quantize_rows_avx2(xs: &[f32], act: &mut Act, kind: ActKind) {
    let blocks = xs.chunks_exact(QK).zip(act.qs.chunks_exact_mut(QK));
    for (i, (x, q)) in blocks.enumerate() {
        (act.d[i], act.sum[i]) = quantize_block(x.try_into().unwrap(), q.try_into().unwrap());
    }
    // f16 round trip of 8 floats, round to nearest even as `half` does.
    let round16 = |v: __m256| _mm256_cvtph_ps(_mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v));
    let n8 = act.d.len() / 8 * 8;
    for i in (0..n8).step_by(8) {
        let (d8, sum8, s8) = (
            &mut act.d[i..i + 8],
            &act.sum[i..i + 8],
            &mut act.s[i..i + 8],
        );
        // SAFETY: `d8` is 8 floats (bounds-checked slice) read and written in place; unaligned ops.
        let d = unsafe { _mm256_loadu_ps(d8.as_ptr()) };
        let d = round16(d);
        // SAFETY: as above.
        unsafe { _mm256_storeu_ps(d8.as_mut_ptr(), d) };
        if kind == ActKind::Q8_1 {
            // SAFETY: `sum8` is 8 i32 = 32 readable bytes, `s8` 8 writable floats (bounds-checked
            // slices); unaligned ops.
            unsafe {
                let sum = _mm256_loadu_si256(sum8.as_ptr() as *const __m256i);
                let s = round16(_mm256_mul_ps(round16(_mm256_cvtepi32_ps(sum)), d));
                _mm256_storeu_ps(s8.as_mut_ptr(), s);
            }
        }
    }
    round_scales(act, kind, n8);
}

/// One block: `d = amax/127` (unrounded), `q = round(x * (1/d))` ties away from zero, `sum(q)`.
#[inline]
#[target_feature(enable = "avx2")]
fn quantize_block(x: &[f32; QK], q: &mut [i8; QK]) -> (f32, i32) {
    // SAFETY: 8 floats at `8 * j` (j < 4) of a 32-float array; `loadu` is unaligned.
    let v: [__m256; 4] = std::array::from_fn(|j| unsafe { _mm256_loadu_ps(x.as_ptr().add(8 * j)) });
    let abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFF_FFFF));
    // `max_ps(a, b)` returns b when a is NaN: NaN inputs are skipped, as in candle's fold.
    let mut m = _mm256_setzero_ps();
    for v in v {
        m = _mm256_max_ps(_mm256_and_ps(v, abs_mask), m);
    }
    let m = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps::<1>(m));
    let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    let amax = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
    let d = amax / 127.0;
    let id = _mm256_set1_ps(if d != 0.0 { 1.0 / d } else { 0.0 });
    let (half, neg_half) = (_mm256_set1_ps(0.5), _mm256_set1_ps(-0.5));
    let r = v.map(|v| {
        let v = _mm256_mul_ps(v, id);
        // Truncate (NaN lanes forced to 0), then step away from zero on a fraction >= 1/2; the
        // compare masks are -1 where true.
        let ordered = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_ORD_Q>(v, v));
        let t = _mm256_and_si256(_mm256_cvttps_epi32(v), ordered);
        let frac = _mm256_sub_ps(v, _mm256_cvtepi32_ps(t));
        let up = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(frac, half));
        let down = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LE_OQ>(frac, neg_half));
        let r = _mm256_add_epi32(_mm256_sub_epi32(t, up), down);
        _mm256_max_epi32(
            _mm256_min_epi32(r, _mm256_set1_epi32(127)),
            _mm256_set1_epi32(-128),
        )
    });
    let s = _mm256_add_epi32(_mm256_add_epi32(r[0], r[1]), _mm256_add_epi32(r[2], r[3]));
    let s = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s));
    let s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    let sum = _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32::<1>(s)));
    // packs interleave 128-bit lanes: 32-bit groups come out as r0[0..4] r1[0..4] r2.. r3.. r0[4..8]
    // r1[4..8] ...; the permute restores element order.
    let packed = _mm256_packs_epi16(
        _mm256_packs_epi32(r[0], r[1]),
        _mm256_packs_epi32(r[2], r[3]),
    );
    let ordered = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    // SAFETY: one 32-byte store into the 32-byte array `q`; `storeu` is unaligned.
    unsafe { _mm256_storeu_si256(q.as_mut_ptr() as *mut __m256i, ordered) };
    (d, sum)
}

/// `act_k.rs`'s Q8_K block, 8 lanes at a time: the largest magnitude as integer bits (NaN bits
/// zeroed), the first value that has it, then `round(iscale * x)` ties away from zero, clamped by the
/// saturating packs, and the sum of each 16 quants. Returns `d`. Bit-identical to the portable block
/// for every input the model can give (`iscale * x` is within ±127.0001, or ±inf for a block whose
/// largest magnitude is below 3.7e-37, where both step the truncation of ±inf the same way).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn quantize_block_k(x: &[f32; 256], q: &mut [i8; 256], bsums: &mut [i16; 16]) -> f32 {
    let load = |j: usize| {
        // SAFETY: 8 floats at `8 * j` (j < 32) of a 256-float array; `loadu` is unaligned.
        unsafe { _mm256_loadu_si256(x.as_ptr().add(8 * j) as *const __m256i) }
    };
    let (abs, inf) = (
        _mm256_set1_epi32(0x7FFF_FFFF),
        _mm256_set1_epi32(0x7F80_0000),
    );
    let mut m = _mm256_setzero_si256();
    for j in 0..32 {
        let bits = _mm256_and_si256(load(j), abs);
        m = _mm256_max_epi32(m, _mm256_andnot_si256(_mm256_cmpgt_epi32(bits, inf), bits));
    }
    let m = _mm_max_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256::<1>(m));
    let m = _mm_max_epi32(m, _mm_unpackhi_epi64(m, m));
    let amax_bits = _mm_cvtsi128_si32(_mm_max_epi32(m, _mm_shuffle_epi32::<1>(m)));
    if amax_bits == 0 {
        q.fill(0);
        bsums.fill(0);
        return 0.0;
    }
    let want = _mm256_set1_epi32(amax_bits);
    let first = (0..32)
        .find_map(|j| {
            let hit = _mm256_cmpeq_epi32(_mm256_and_si256(load(j), abs), want);
            let mask = _mm256_movemask_ps(_mm256_castsi256_ps(hit));
            (mask != 0).then(|| 8 * j + mask.trailing_zeros() as usize)
        })
        .expect("amax is one of the values");
    let iscale = -127f32 / x[first];
    let scale = _mm256_set1_ps(iscale);
    let (half, neg_half) = (_mm256_set1_ps(0.5), _mm256_set1_ps(-0.5));
    let ones = (_mm256_set1_epi8(1), _mm256_set1_epi16(1));
    for k in 0..8 {
        let r: [__m256i; 4] = std::array::from_fn(|i| {
            let v = _mm256_mul_ps(_mm256_castsi256_ps(load(4 * k + i)), scale);
            // Truncate (NaN lanes forced to 0, as `NaN as i32`), then step away from zero on a
            // fraction >= 1/2; the compare masks are -1 where true.
            let ordered = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_ORD_Q>(v, v));
            let t = _mm256_and_si256(_mm256_cvttps_epi32(v), ordered);
            let frac = _mm256_sub_ps(v, _mm256_cvtepi32_ps(t));
            let up = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(frac, half));
            let down = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LE_OQ>(frac, neg_half));
            _mm256_add_epi32(_mm256_sub_epi32(t, up), down)
        });
        // As in `quantize_block`: the saturating packs clamp to -128..=127, the permute restores order.
        let packed = _mm256_packs_epi16(
            _mm256_packs_epi32(r[0], r[1]),
            _mm256_packs_epi32(r[2], r[3]),
        );
        let qv = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        // SAFETY: 32 bytes at `32 * k` (k < 8) of the 256-byte `q`; `storeu` is unaligned.
        unsafe { _mm256_storeu_si256(q.as_mut_ptr().add(32 * k) as *mut __m256i, qv) };
        // Each 128-bit half is 16 quants: pairs, fours, then two horizontal adds give its sum.
        let fours = _mm256_madd_epi16(_mm256_maddubs_epi16(ones.0, qv), ones.1);
        let s = _mm256_hadd_epi32(fours, fours);
        let s = _mm256_hadd_epi32(s, s);
        bsums[2 * k] = _mm256_extract_epi32::<0>(s) as i16;
        bsums[2 * k + 1] = _mm256_extract_epi32::<4>(s) as i16;
    }
    1.0 / iscale
}

/// `act::lane_biases` (`len` 16 or 32), 32 quants a step: `maddubs` by ones gives the pair sums, two
/// shuffled adds sum each 128-bit half's 4 dwords as i16 pairs (dword `i` holds pairs `2i`, `2i + 1`:
/// lanes 0 and 1 of its 4-value group), and a block of 32 adds its two halves. Every sum is exact in
/// i16 (`Act::lane_bias`).
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn lane_biases(qs: &[i8], len: usize, times: i16) -> Vec<[i16; 2]> {
    assert!((len == 16 || len == 32) && qs.len().is_multiple_of(32));
    let pair = |x: i32| [x as i16, (x >> 16) as i16];
    let mut out = Vec::with_capacity(qs.len() / len);
    for q in qs.chunks_exact(32) {
        // SAFETY: `q` is 32 readable bytes; `loadu` is unaligned.
        let v = unsafe { _mm256_loadu_si256(q.as_ptr() as *const __m256i) };
        let p = _mm256_maddubs_epi16(_mm256_set1_epi8(1), v);
        let p = _mm256_add_epi16(p, _mm256_shuffle_epi32::<0b01_00_11_10>(p));
        let p = _mm256_add_epi16(p, _mm256_shuffle_epi32::<0b10_11_00_01>(p));
        let (lo, hi) = (_mm256_castsi256_si128(p), _mm256_extracti128_si256::<1>(p));
        let times = _mm_set1_epi16(times);
        if len == 16 {
            out.push(pair(_mm_cvtsi128_si32(_mm_mullo_epi16(lo, times))));
            out.push(pair(_mm_cvtsi128_si32(_mm_mullo_epi16(hi, times))));
        } else {
            let both = _mm_mullo_epi16(_mm_add_epi16(lo, hi), times);
            out.push(pair(_mm_cvtsi128_si32(both)));
        }
    }
    out
}
