//! The attention kernel with AVX-512F, on the CPUs that have it: the exponentials eight doubles at a
//! time, their 32-entry table read by two register permutes instead of a gather, and the weighted sums'
//! chains compiled for 16-lane registers (`Job::run_avx512`). Every lane does `x86.rs`'s operations
//! (and so the portable code's) in the same order: the same bits, tested below.

use super::arith::{Arith, Fused};
use super::expf::{C0, C1, C2, INV_LN2_N, SHIFT, TAB, UNDERFLOW};
use super::x86::Avx2;
use crate::engine::forward::kv_cache::KvElem;
use std::arch::x86_64::*;

/// Proof that this CPU has AVX-512F besides AVX2 and FMA: only `detect` makes one.
#[derive(Clone, Copy)]
pub(super) struct Avx512(Avx2);

impl Avx512 {
    /// `None` without AVX-512F, or when `bench --isa` caps the kernels below AVX-512 (`Isa::allowed`).
    pub(super) fn detect() -> Option<Avx512> {
        let avx2 = Avx2::detect()?;
        let allowed = crate::engine::forward::quant::Isa::Avx512Vnni.allowed();
        (allowed && is_x86_feature_detected!("avx512f")).then_some(Avx512(avx2))
    }
}

impl Arith for Avx512 {
    const FUSED: bool = true;
    /// Three queries' 64-element chains are 12 of the 32 registers: enough in flight to cover the
    /// multiply-add latency, where one query's four would leave the FMA units idle.
    const SUMS_TOGETHER: usize = 3;
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        Fused::mul_add(a, b, c)
    }
    #[inline(always)]
    fn mul_add64(a: f64, b: f64, c: f64) -> f64 {
        Fused::mul_add64(a, b, c)
    }

    /// `x86.rs`'s: each key's dot is eight lanes wide, so wider registers would change its order.
    #[inline(always)]
    fn scores<E: KvElem>(self, q: &[f32], k: &[E], stride: usize, scale: f32, s: &mut [f32]) {
        self.0.scores(q, k, stride, scale, s)
    }

    #[inline(always)]
    fn scores3<E: KvElem>(
        self,
        q: [&[f32]; 3],
        k: &[E],
        stride: usize,
        scale: f32,
        s: [&mut [f32]; 3],
    ) {
        self.0.scores3(q, k, stride, scale, s)
    }

    #[inline(always)]
    fn exps(self, s: &mut [f32], max: f32) {
        // SAFETY: an `Avx512` exists only if the CPU has AVX-512F, AVX2 and FMA (`detect`).
        unsafe { exps(s, max) }
    }
}

/// `Arith::exps`: `expf::exp` eight lanes at a time, the rest one at a time.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
fn exps(s: &mut [f32], max: f32) {
    let max8 = _mm256_set1_ps(max);
    let mut eights = s.chunks_exact_mut(8);
    for out in &mut eights {
        let out: &mut [f32; 8] = out.try_into().unwrap();
        // SAFETY: an 8-float load from an 8-float array.
        let x = _mm256_sub_ps(unsafe { _mm256_loadu_ps(out.as_ptr()) }, max8);
        // SAFETY: an 8-float store into an 8-float array.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), exp8(x)) };
    }
    for x in eights.into_remainder() {
        *x = super::expf::exp::<Fused>(*x - max);
    }
}

/// `expf::exp` on 8 lanes, as `x86::exp4` on 4: glibc's bits for `x <= 88.72` (0 below `UNDERFLOW`).
/// `TAB[k % 32]` comes from two 16-entry permutes (index bits 0-3), bit 4 choosing between them.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma")]
fn exp8(x: __m256) -> __m256 {
    // SAFETY: `TAB` has 32 entries of 8 bytes: four 64-byte loads at 0, 8, 16 and 24 entries.
    let tab = |i: usize| unsafe { _mm512_loadu_si512(TAB[8 * i..].as_ptr() as *const __m512i) };
    let (inv, shift) = (_mm512_set1_pd(INV_LN2_N), _mm512_set1_pd(SHIFT));
    let xd = _mm512_cvtps_pd(x);
    let kd = _mm512_fmadd_pd(inv, xd, shift);
    let ki = _mm512_castpd_si512(kd);
    let kd = _mm512_sub_pd(kd, shift);
    let r = _mm512_fmsub_pd(inv, xd, kd);
    let low = _mm512_permutex2var_epi64(tab(0), ki, tab(1));
    let high = _mm512_permutex2var_epi64(tab(2), ki, tab(3));
    let t = _mm512_mask_blend_epi64(_mm512_test_epi64_mask(ki, _mm512_set1_epi64(16)), low, high);
    let s = _mm512_castsi512_pd(_mm512_add_epi64(t, _mm512_slli_epi64::<47>(ki)));
    let z = _mm512_fmadd_pd(_mm512_set1_pd(C0), r, _mm512_set1_pd(C1));
    let y = _mm512_fmadd_pd(_mm512_set1_pd(C2), r, _mm512_set1_pd(1.0));
    let y = _mm512_mul_pd(_mm512_fmadd_pd(z, _mm512_mul_pd(r, r), y), s);
    let under = _mm256_cmp_ps::<_CMP_LT_OS>(x, _mm256_set1_ps(UNDERFLOW));
    _mm256_andnot_ps(under, _mm512_cvtpd_ps(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lane is the portable `exp`: all 32 table entries, both sides of the underflow, zero, and
    /// lengths with and without a remainder.
    #[test]
    fn exps_give_the_portable_bits() {
        let Some(avx512) = Avx512::detect() else {
            return;
        };
        for n in [1, 7, 8, 9, 64, 1003] {
            // steps of ln2/32 and a bit move k through every table index; the last reach underflow
            let mut a: Vec<f32> = (0..n)
                .map(|i| -(i as f32) * 0.021_7 - (i % 5) as f32 * 3.1e-4)
                .collect();
            a.extend([0.0, -103.9, -103.98, -104.5, -150.0, -0.0]);
            let mut b = a.clone();
            avx512.exps(&mut a, 0.25);
            Fused.exps(&mut b, 0.25);
            let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a), bits(&b), "exps over {n} values");
        }
    }
}
