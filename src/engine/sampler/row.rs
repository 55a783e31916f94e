//! Whole-row maths over a logits vector, written so the compiler vectorises it: log-sum-exp and
//! entropy (the largest values and the best ids are `best.rs`'s).

use super::best::max_of;

/// Round to nearest with the 1.5 * 2^23 trick: `t + ROUNDER` holds `round(t)` in its low mantissa
/// bits, and `bits - ROUNDER_BITS` reads it out as an integer. `f32::round` is a library call without
/// SSE4.1, and `n as i32` is a saturating cast that compiles to scalar compares; this vectorises.
const ROUNDER: f32 = 12_582_912.0;
const ROUNDER_BITS: i32 = 0x4B40_0000;

/// Taylor coefficients of `2^f = e^(f ln 2)`, `(ln 2)^k / k!` for `k` = 6 down to 1, in Horner order;
/// the constant 1 comes last. Shared by the scalar and vector bodies, which are held to the same bits.
const EXP2_TAYLOR: [f32; 6] = [
    0.000_154_035,
    0.001_333_355,
    0.009_618_129,
    0.055_504_11,
    0.240_226_5,
    std::f32::consts::LN_2,
];

/// `e^x` for `x <= 0`, vectorisable: `2^(x log2 e)` split into an integer power (exponent bits) and a
/// degree-6 polynomial for `2^f`, `f` in [-0.5, 0.5]. Relative error below 1e-7; 0 below -87.
#[inline(always)]
fn exp_nonpos(x: f32) -> f32 {
    let t = (x * std::f32::consts::LOG2_E).max(-126.0);
    let big = t + ROUNDER;
    let n = big - ROUNDER;
    let ni = big.to_bits() as i32 - ROUNDER_BITS;
    let f = t - n;
    let mut p = EXP2_TAYLOR[0];
    for k in &EXP2_TAYLOR[1..] {
        p = k + f * p;
    }
    let p = 1.0 + f * p;
    p * f32::from_bits(((ni + 127) as u32) << 23)
}

/// Lanes of the whole-row loops: one AVX register of floats.
pub(super) const LANES: usize = 8;

/// `sum_i e^(l_i * scale - shift)` and `sum_i e^(..) * (l_i * scale - shift)`, in 8 lanes: float sums
/// are only vectorised when the program itself splits them.
fn exp_sums(xs: &[f32], scale: f32, shift: f32) -> (f32, f32) {
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    #[cfg(target_arch = "x86_64")]
    let (s, sl) = if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        unsafe { sse::exp_sums_lanes_avx2(chunks, scale, shift) }
    } else {
        sse::exp_sums_lanes(chunks, scale, shift)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (s, sl) = {
        let (mut s, mut sl) = ([0f32; LANES], [0f32; LANES]);
        for c in chunks {
            for j in 0..LANES {
                let z = c[j] * scale - shift;
                let e = exp_nonpos(z);
                s[j] += e;
                sl[j] += e * z;
            }
        }
        (s, sl)
    };
    let (mut s1, mut sl1) = (s.iter().sum::<f32>(), sl.iter().sum::<f32>());
    for &x in tail {
        let z = x * scale - shift;
        let e = exp_nonpos(z);
        s1 += e;
        sl1 += e * z;
    }
    (s1, sl1)
}

/// `ln sum_i e^(l_i / t)`: the log-normaliser of a logits row at temperature `t`.
pub(super) fn lse_scaled(logits: &[f32], t: f32) -> f32 {
    lse_scaled_from(logits, t, max_of(logits))
}

/// `lse_scaled` when `max_of(logits)` is already known (`max`): one pass instead of two.
pub(super) fn lse_scaled_from(logits: &[f32], t: f32, max: f32) -> f32 {
    let max = max / t;
    max + exp_sums(logits, 1.0 / t, max).0.ln()
}

/// Log-sum-exp and entropy (nats) of the softmax of `logits`, in one pass:
/// `H = lse - sum_i p_i l_i`, so no logarithm per token.
pub fn lse_entropy(logits: &[f32]) -> (f32, f32) {
    lse_entropy_from(logits, max_of(logits))
}

/// `lse_entropy` when `max_of(logits)` is already known (`max`).
pub(super) fn lse_entropy_from(logits: &[f32], max: f32) -> (f32, f32) {
    let (s, sl) = exp_sums(logits, 1.0, max);
    (max + s.ln(), (s.ln() - sl / s).max(0.0))
}

/// Softmax of a logits row (tests, bench).
pub fn softmax(logits: &[f32]) -> Vec<f32> {
    let lse = lse_scaled(logits, 1.0);
    logits.iter().map(|&l| (l - lse).exp()).collect()
}

/// Shannon entropy in nats of a probability vector.
pub fn entropy(probs: &[f32]) -> f32 {
    -probs
        .iter()
        .filter(|&&p| p > 0.0)
        .map(|&p| p as f64 * (p as f64).ln())
        .sum::<f64>() as f32
}

/// `exp_sums`' lanes in SSE2 (every x86-64 CPU has it): the compiler left `exp_nonpos` scalar. The same
/// operations in the same order as `exp_nonpos` on each lane, so the same bits (tested below).
#[cfg(target_arch = "x86_64")]
mod sse {
    use super::{EXP2_TAYLOR, LANES, ROUNDER, ROUNDER_BITS};
    use std::arch::x86_64::*;

    /// `e^z` for 4 lanes: `exp_nonpos`, operation for operation.
    #[inline(always)]
    fn exp4(z: __m128) -> __m128 {
        // SAFETY (all below): SSE2 register arithmetic, part of the x86-64 baseline.
        unsafe {
            let c = |v: f32| _mm_set1_ps(v);
            // `max_ps(x, -126)` is -126 when x is NaN, as `f32::max` is.
            let t = _mm_max_ps(_mm_mul_ps(z, c(std::f32::consts::LOG2_E)), c(-126.0));
            let big = _mm_add_ps(t, c(ROUNDER));
            let n = _mm_sub_ps(big, c(ROUNDER));
            let ni = _mm_sub_epi32(_mm_castps_si128(big), _mm_set1_epi32(ROUNDER_BITS));
            let f = _mm_sub_ps(t, n);
            let mut p = c(EXP2_TAYLOR[0]);
            for &k in &EXP2_TAYLOR[1..] {
                p = _mm_add_ps(c(k), _mm_mul_ps(f, p));
            }
            let p = _mm_add_ps(c(1.0), _mm_mul_ps(f, p));
            let scale = _mm_slli_epi32::<23>(_mm_add_epi32(ni, _mm_set1_epi32(127)));
            _mm_mul_ps(p, _mm_castsi128_ps(scale))
        }
    }

    /// The 8 lanes' sums `s[j] = Σ e`, `sl[j] = Σ e·z` over whole chunks, `z = x·scale − shift`.
    pub(super) fn exp_sums_lanes(
        chunks: std::slice::ChunksExact<'_, f32>,
        scale: f32,
        shift: f32,
    ) -> ([f32; LANES], [f32; LANES]) {
        // SAFETY: SSE2 only; each chunk holds exactly 8 floats (two 4-float loads).
        unsafe {
            let (sc, sh) = (_mm_set1_ps(scale), _mm_set1_ps(shift));
            let mut acc = [_mm_setzero_ps(); 4];
            for ch in chunks {
                for h in 0..2 {
                    let x = _mm_loadu_ps(ch.as_ptr().add(4 * h));
                    let z = _mm_sub_ps(_mm_mul_ps(x, sc), sh);
                    let e = exp4(z);
                    acc[h] = _mm_add_ps(acc[h], e);
                    acc[2 + h] = _mm_add_ps(acc[2 + h], _mm_mul_ps(e, z));
                }
            }
            let mut out = [[0f32; LANES]; 2];
            for (h, a) in acc.iter().enumerate() {
                _mm_storeu_ps(out[h / 2].as_mut_ptr().add(4 * (h % 2)), *a);
            }
            (out[0], out[1])
        }
    }

    /// `exp_sums_lanes` with the 8 lanes in one AVX register: the same lanes, operations and order (no
    /// fused multiply-add), so the same bits (tested below). Four chunks' exponentials are computed side
    /// by side, each a chain of ~20 dependent operations, so the core overlaps them: one at a time left
    /// it waiting on latency at half its throughput. The sums still add chunk after chunk, in order.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn exp_sums_lanes_avx2(
        mut chunks: std::slice::ChunksExact<'_, f32>,
        scale: f32,
        shift: f32,
    ) -> ([f32; LANES], [f32; LANES]) {
        let c = |v: f32| _mm256_set1_ps(v);
        let (sc, sh) = (c(scale), c(shift));
        // `z` and `e^z` of one chunk: `exp4`, eight lanes wide.
        let exp8 = |ch: &[f32]| {
            // SAFETY: each chunk holds exactly 8 floats.
            let x = unsafe { _mm256_loadu_ps(ch.as_ptr()) };
            let z = _mm256_sub_ps(_mm256_mul_ps(x, sc), sh);
            let t = _mm256_max_ps(_mm256_mul_ps(z, c(std::f32::consts::LOG2_E)), c(-126.0));
            let big = _mm256_add_ps(t, c(ROUNDER));
            let n = _mm256_sub_ps(big, c(ROUNDER));
            let ni = _mm256_sub_epi32(_mm256_castps_si256(big), _mm256_set1_epi32(ROUNDER_BITS));
            let f = _mm256_sub_ps(t, n);
            let mut p = c(EXP2_TAYLOR[0]);
            for &k in &EXP2_TAYLOR[1..] {
                p = _mm256_add_ps(c(k), _mm256_mul_ps(f, p));
            }
            let p = _mm256_add_ps(c(1.0), _mm256_mul_ps(f, p));
            let pow = _mm256_slli_epi32::<23>(_mm256_add_epi32(ni, _mm256_set1_epi32(127)));
            (z, _mm256_mul_ps(p, _mm256_castsi256_ps(pow)))
        };
        let (mut s, mut sl) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut add = |(z, e): (__m256, __m256)| {
            s = _mm256_add_ps(s, e);
            sl = _mm256_add_ps(sl, _mm256_mul_ps(e, z));
        };
        while chunks.len() >= 4 {
            let mut four = [(_mm256_setzero_ps(), _mm256_setzero_ps()); 4];
            for q in &mut four {
                *q = exp8(chunks.next().expect("four chunks left"));
            }
            four.into_iter().for_each(&mut add);
        }
        chunks.for_each(|ch| add(exp8(ch)));
        let mut out = [[0f32; LANES]; 2];
        // SAFETY: 8-float stores into 8-float arrays.
        unsafe {
            _mm256_storeu_ps(out[0].as_mut_ptr(), s);
            _mm256_storeu_ps(out[1].as_mut_ptr(), sl);
        }
        (out[0], out[1])
    }

    #[cfg(test)]
    mod tests {
        use super::super::exp_nonpos;
        use super::*;

        /// Every lane is `exp_nonpos`'s bits (NaN, infinities, zeros and underflow included), and the
        /// sums are the scalar loop's.
        #[test]
        fn lanes_are_the_scalar_code() {
            let special = [
                f32::NAN,
                f32::NEG_INFINITY,
                -0.0,
                0.0,
                -200.0,
                -87.5,
                -1e-9,
                -126.5,
            ];
            let xs: Vec<f32> = (0..4096).map(|i| -(i as f32) * 0.0371).collect();
            for x in xs.chunks_exact(4).chain(special.chunks_exact(4)) {
                let mut e = [0f32; 4];
                // SAFETY: SSE2 4-float load and store.
                unsafe { _mm_storeu_ps(e.as_mut_ptr(), exp4(_mm_loadu_ps(x.as_ptr()))) };
                for (x, e) in x.iter().zip(e) {
                    assert_eq!(e.to_bits(), exp_nonpos(*x).to_bits(), "e^{x}");
                }
            }
            let (s, sl) = exp_sums_lanes(xs.chunks_exact(LANES), 0.9, 0.25);
            let (mut s2, mut sl2) = ([0f32; LANES], [0f32; LANES]);
            for c in xs.chunks_exact(LANES) {
                for j in 0..LANES {
                    let z = c[j] * 0.9 - 0.25;
                    let e = exp_nonpos(z);
                    s2[j] += e;
                    sl2[j] += e * z;
                }
            }
            let bits = |v: [f32; LANES]| v.map(f32::to_bits);
            assert_eq!(bits(s), bits(s2));
            assert_eq!(bits(sl), bits(sl2));
            if is_x86_feature_detected!("avx2") {
                let mut xs = xs.clone();
                xs.extend_from_slice(&special);
                // SAFETY: the CPU has AVX2.
                let wide = unsafe { exp_sums_lanes_avx2(xs.chunks_exact(LANES), 0.9, 0.25) };
                assert_eq!(
                    bits(wide.0),
                    bits(exp_sums_lanes(xs.chunks_exact(LANES), 0.9, 0.25).0)
                );
                assert_eq!(
                    bits(wide.1),
                    bits(exp_sums_lanes(xs.chunks_exact(LANES), 0.9, 0.25).1)
                );
            }
        }
    }
}
