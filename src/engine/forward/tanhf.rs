//! `tanhf` eight lanes at a time, giving glibc's bits: fdlibm's `tanhf` over its `expm1f`, which is
//! what glibc 2.36 builds for x86-64 (no FMA contraction), written out in AVX2 with every branch
//! computed and the right one blended in per lane. Checked against glibc over all 2³² inputs once
//! (docs/NUMERICS.md), and by `gate` against `f32::tanh` at start-up, so another libm falls back to
//! its own `tanhf`.
//!
//! The branches, for `t = expm1f(a)`:
//! - `|x| ≥ 1`: `a = 2|x|`, `tanh = 1 − 2/(t + 2)`; `|x| < 1`: `a = −2|x|`, `tanh = −t/(t + 2)`;
//! - `|x| ≥ 22`: ±1; `|x| < 2⁻⁵⁵`: `x·(1 + x)`; NaN stays NaN; the sign is put back last.
//!
//! `expm1f(a)` reduces `a = k·ln2 + r` (`k = 0` below ½ln2, `k = ±1` below 1½ln2, else
//! `k = trunc(a/ln2 ± ½)`), evaluates one rational approximation of `r`, and rebuilds the result by
//! one of six formulas chosen by `k`, all six computed here.

#[cfg(target_arch = "x86_64")]
pub(crate) mod x86 {
    use std::arch::x86_64::*;

    // fdlibm's constants, by their bits.
    const LN2_HI: f32 = f32::from_bits(0x3f31_7180);
    const LN2_LO: f32 = f32::from_bits(0x3717_f7d1);
    const INV_LN2: f32 = f32::from_bits(0x3fb8_aa3b);
    /// expm1f's polynomial in `r²/2`, highest power first (Q5 … Q1).
    const Q: [f32; 5] = [
        f32::from_bits(0xb457_edbb),
        f32::from_bits(0x3686_7e54),
        f32::from_bits(0xb8a6_70cd),
        f32::from_bits(0x3ad0_0d01),
        f32::from_bits(0xbd08_8889),
    ];

    #[inline(always)]
    fn f(v: f32) -> __m256 {
        // SAFETY: AVX is implied by the callers' `avx2` target feature.
        unsafe { _mm256_set1_ps(v) }
    }

    #[inline(always)]
    fn i(v: i32) -> __m256i {
        // SAFETY: as for `f`.
        unsafe { _mm256_set1_epi32(v) }
    }

    #[inline(always)]
    fn mask(m: __m256i) -> __m256 {
        // SAFETY: as for `f`.
        unsafe { _mm256_castsi256_ps(m) }
    }

    /// `tanhf(x)` on 8 lanes, glibc's bits on every input: `expm1f` of `±2|x|` in its three stages
    /// (`reduce`, `approximate`, `rebuild`), then tanh from it. The stages pass their vectors by value
    /// and run with the same features, so they inline into one straight line (each has this one
    /// caller).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn tanh8(x: __m256) -> __m256 {
        let sign = mask(i(i32::MIN));
        let ax = _mm256_andnot_ps(sign, x);
        let ix = _mm256_castps_si256(ax);
        let (one, two) = (f(1.0), f(2.0));

        // The argument of expm1f: 2|x| where |x| ≥ 1, else −2|x| (then `neg`).
        let ge1 = mask(_mm256_cmpgt_epi32(ix, i(0x3f7f_ffff)));
        let neg = _mm256_xor_ps(ge1, mask(i(-1)));
        let a2 = _mm256_mul_ps(two, ax);
        let a = _mm256_blendv_ps(_mm256_xor_ps(a2, sign), a2, ge1);
        let ha = _mm256_castps_si256(a2);
        let (k, r, c) = reduce(a, ha, neg);
        let (hxs, e) = approximate(r);
        let em1 = rebuild((a, ha), (k, r, c), (hxs, e));

        // tanh from expm1, then the edges and the sign. One division for both: `2/(t+2)` where
        // |x| ≥ 1 (then `1 − q`), `−t/(t+2)` below.
        let num = _mm256_blendv_ps(_mm256_xor_ps(em1, sign), two, ge1);
        let q = _mm256_div_ps(num, _mm256_add_ps(em1, two));
        let mut z = _mm256_blendv_ps(q, _mm256_sub_ps(one, q), ge1);
        z = _mm256_blendv_ps(z, one, mask(_mm256_cmpgt_epi32(ix, i(0x41af_ffff))));
        z = _mm256_xor_ps(z, _mm256_and_ps(x, sign));
        let tiny = mask(_mm256_cmpgt_epi32(i(0x2400_0000), ix));
        z = _mm256_blendv_ps(z, _mm256_mul_ps(x, _mm256_add_ps(one, x)), tiny);
        _mm256_blendv_ps(z, _mm256_add_ps(x, x), _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x))
    }

    /// expm1f's reduction `a = k·ln2 + r` (`c` the rounding of `r = hi − lo`), for `a` negative in the
    /// lanes of `neg` and `ha` the bits of `|a|`: `k = 0` below ½ln2, `±1` below 1½ln2, else
    /// `trunc(a/ln2 ± ½)`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn reduce(a: __m256, ha: __m256i, neg: __m256) -> (__m256i, __m256, __m256) {
        let above_half = _mm256_cmpgt_epi32(ha, i(0x3eb1_7218));
        let below_1_5 = _mm256_cmpgt_epi32(i(0x3f85_1592), ha);
        let k_unit = mask(_mm256_and_si256(above_half, below_1_5));
        let k_general = mask(_mm256_andnot_si256(below_1_5, above_half));
        let bias = _mm256_blendv_ps(f(0.5), f(-0.5), neg);
        let kg = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(f(INV_LN2), a), bias));
        let tk = _mm256_cvtepi32_ps(kg);
        let hi_g = _mm256_sub_ps(a, _mm256_mul_ps(tk, f(LN2_HI)));
        let lo_g = _mm256_mul_ps(tk, f(LN2_LO));
        let hi_1 = _mm256_blendv_ps(
            _mm256_sub_ps(a, f(LN2_HI)),
            _mm256_add_ps(a, f(LN2_HI)),
            neg,
        );
        let lo_1 = _mm256_blendv_ps(f(LN2_LO), f(-LN2_LO), neg);
        let k_1 = _mm256_blendv_ps(mask(i(1)), mask(i(-1)), neg);
        let zero = _mm256_setzero_ps();
        let hi = _mm256_blendv_ps(_mm256_blendv_ps(a, hi_1, k_unit), hi_g, k_general);
        let lo = _mm256_blendv_ps(_mm256_blendv_ps(zero, lo_1, k_unit), lo_g, k_general);
        let k = _mm256_castps_si256(_mm256_blendv_ps(
            _mm256_blendv_ps(zero, k_1, k_unit),
            mask(kg),
            k_general,
        ));
        let r = _mm256_sub_ps(hi, lo);
        (k, r, _mm256_sub_ps(_mm256_sub_ps(hi, r), lo))
    }

    /// expm1f's rational approximation on `r`: `hxs = r·r/2` and the correction `e`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn approximate(r: __m256) -> (__m256, __m256) {
        let hfx = _mm256_mul_ps(f(0.5), r);
        let hxs = _mm256_mul_ps(r, hfx);
        let mut p = f(Q[0]);
        for q in &Q[1..] {
            p = _mm256_add_ps(f(*q), _mm256_mul_ps(hxs, p));
        }
        let r1 = _mm256_add_ps(f(1.0), _mm256_mul_ps(hxs, p));
        let t = _mm256_sub_ps(f(3.0), _mm256_mul_ps(r1, hfx));
        let den = _mm256_sub_ps(f(6.0), _mm256_mul_ps(r, t));
        (
            hxs,
            _mm256_mul_ps(hxs, _mm256_div_ps(_mm256_sub_ps(r1, t), den)),
        )
    }

    /// expm1f's six ways back from the approximation, by `k`, each computed and the right one
    /// blended in per lane; `a` itself where `|a|` (bits `ha`) is below 2⁻²⁵.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn rebuild(
        (a, ha): (__m256, __m256i),
        (k, r, c): (__m256i, __m256, __m256),
        (hxs, e): (__m256, __m256),
    ) -> __m256 {
        let (one, two, half) = (f(1.0), f(2.0), f(0.5));
        let k0 = _mm256_sub_ps(r, _mm256_sub_ps(_mm256_mul_ps(r, e), hxs));
        let e2 = _mm256_sub_ps(_mm256_sub_ps(_mm256_mul_ps(r, _mm256_sub_ps(e, c)), c), hxs);
        let k_minus1 = _mm256_sub_ps(_mm256_mul_ps(half, _mm256_sub_ps(r, e2)), half);
        let k_plus1 = _mm256_blendv_ps(
            _mm256_add_ps(one, _mm256_mul_ps(two, _mm256_sub_ps(r, e2))),
            _mm256_mul_ps(f(-2.0), _mm256_sub_ps(e2, _mm256_add_ps(r, half))),
            _mm256_cmp_ps::<_CMP_LT_OQ>(r, f(-0.25)),
        );
        let scale = |y: __m256| {
            _mm256_castsi256_ps(_mm256_add_epi32(
                _mm256_castps_si256(y),
                _mm256_slli_epi32::<23>(k),
            ))
        };
        let far = _mm256_sub_ps(scale(_mm256_sub_ps(one, _mm256_sub_ps(e2, r))), one);
        let t_mid = mask(_mm256_sub_epi32(
            i(0x3f80_0000),
            _mm256_srlv_epi32(i(0x0100_0000), k),
        ));
        let mid = scale(_mm256_sub_ps(t_mid, _mm256_sub_ps(e2, r)));
        let t_high = mask(_mm256_slli_epi32::<23>(_mm256_sub_epi32(i(0x7f), k)));
        let high = scale(_mm256_add_ps(
            _mm256_sub_ps(r, _mm256_add_ps(e2, t_high)),
            one,
        ));
        let k_gt = |v: i32| mask(_mm256_cmpgt_epi32(k, i(v)));
        let k_eq = |v: i32| mask(_mm256_cmpeq_epi32(k, i(v)));
        let mut em1 = high; // 23 ≤ k ≤ 56
        em1 = _mm256_blendv_ps(em1, mid, _mm256_andnot_ps(k_gt(22), k_gt(1)));
        let far_k = _mm256_or_ps(k_gt(56), _mm256_xor_ps(k_gt(-2), mask(i(-1))));
        em1 = _mm256_blendv_ps(em1, far, far_k);
        em1 = _mm256_blendv_ps(em1, k_plus1, k_eq(1));
        em1 = _mm256_blendv_ps(em1, k_minus1, k_eq(-1));
        em1 = _mm256_blendv_ps(em1, k0, k_eq(0));
        let tiny_a = mask(_mm256_cmpgt_epi32(i(0x3300_0000), ha));
        _mm256_blendv_ps(em1, a, tiny_a)
    }

    /// `out[i] = tanhf(x[i])` for whole groups of 8 (the probe and the tests).
    #[target_feature(enable = "avx2")]
    pub(crate) fn tanhs(x: &[f32], out: &mut [f32]) {
        for (x, o) in x.chunks_exact(8).zip(out.chunks_exact_mut(8)) {
            // SAFETY: each chunk holds exactly 8 floats.
            unsafe { _mm256_storeu_ps(o.as_mut_ptr(), tanh8(_mm256_loadu_ps(x.as_ptr()))) };
        }
    }
}
