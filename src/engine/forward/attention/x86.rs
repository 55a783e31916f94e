//! AVX2 + FMA versions of the attention kernel's two hottest loops, the scores and the exponentials, doing
//! exactly the portable code's operations (so the same bits; tested below against it).
//!
//! Left to the compiler, the 8-lane dot product came out as 2-lane pieces and `exp` as scalar f64: about
//! 120 cycles per (query, key) pair in prefill. Here four keys share each load of `q`, their four
//! 8-lane sums are folded together by one 4x4 transpose, and `exp` runs on 4 doubles per instruction.
//! A kv group's three queries (a row's heads that read one kv head) go together through the scores
//! (`scores3`, three queries by four keys) and the weighted sums (`chains`): twelve independent
//! multiply-add chains, where one query's eight only just covered the FMA latency (24% less time for
//! a 512-row layer, `quick 1 attention`, `ISA=avx2`).

use super::arith::{Arith, Fused};
use super::expf::{C0, C1, C2, INV_LN2_N, SHIFT, TAB, UNDERFLOW};
use crate::engine::forward::kv_cache::KvElem;
use std::arch::x86_64::*;

/// Proof that this CPU has AVX2, FMA and F16C (an `f16` cache's loads; every AVX2 CPU has it): only
/// `detect` makes one.
#[derive(Clone, Copy)]
pub(super) struct Avx2(());

impl Avx2 {
    pub(super) fn detect() -> Option<Avx2> {
        let ok = is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c");
        ok.then_some(Avx2(()))
    }
}

impl Arith for Avx2 {
    const FUSED: bool = true;
    /// Three queries' 32-element chains are 12 of the 16 registers: one query's 64 elements (8
    /// registers) kept the FMA units only as busy as their latency allowed.
    const SUMS_TOGETHER: usize = 3;
    const SUMS_WIDTH: usize = 32;
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        Fused::mul_add(a, b, c)
    }
    #[inline(always)]
    fn mul_add64(a: f64, b: f64, c: f64) -> f64 {
        Fused::mul_add64(a, b, c)
    }

    #[inline(always)]
    fn scores<E: KvElem>(self, q: &[f32], k: &[E], stride: usize, scale: f32, s: &mut [f32]) {
        // SAFETY: an `Avx2` exists only if the CPU has AVX2, FMA and F16C (`detect`).
        unsafe { scores(q, k, stride, scale, s) }
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
        // SAFETY: as above.
        unsafe { scores3(q, k, stride, scale, s) }
    }

    #[inline(always)]
    fn chains32<E: KvElem, const N: usize>(
        self,
        p: [&[f32]; N],
        v: &[E],
        stride: usize,
        out: [&mut [f32; 32]; N],
    ) {
        // SAFETY: as above.
        unsafe { chains(p, v, stride, out) }
    }

    #[inline(always)]
    fn exps(self, s: &mut [f32], max: f32) {
        // SAFETY: as above.
        unsafe { exps(s, max) }
    }
}

/// `Arith::chains32`: each output element `out[n][e] = fma(p[n][j], v_j[e], out[n][e])` for each key
/// `j` in order (`v_j = v[j * stride..][..32]`, widened 8 at a time), the `4N` 8-lane chains in
/// registers (left to the compiler, three queries' arrays went through the stack on every key).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn chains<E: KvElem, const N: usize>(
    p: [&[f32]; N],
    v: &[E],
    stride: usize,
    out: [&mut [f32; 32]; N],
) {
    let n = p[0].len();
    assert!(p.iter().all(|p| p.len() == n));
    assert!(n == 0 || v.len() >= (n - 1) * stride + 32);
    let mut acc = [[_mm256_setzero_ps(); 4]; N];
    for (acc, out) in acc.iter_mut().zip(&out) {
        for (c, a) in acc.iter_mut().enumerate() {
            // SAFETY: an 8-float load of floats `8c..8c + 8` of a 32-float array.
            *a = unsafe { _mm256_loadu_ps(out[8 * c..].as_ptr()) };
        }
    }
    for j in 0..n {
        // SAFETY: `j < n`, so `j * stride + 32 <= v.len()` (asserted above).
        let vj = unsafe { v.as_ptr().add(j * stride) };
        let mut pj = [_mm256_setzero_ps(); N];
        for (pj, p) in pj.iter_mut().zip(&p) {
            // SAFETY: `j < n`, each `p` is `n` long (asserted above).
            *pj = _mm256_set1_ps(unsafe { *p.get_unchecked(j) });
        }
        // One 8-float piece of the values at a time: 12 sums, 3 weights and the piece are the 16
        // registers (all four pieces loaded first spilled the sums).
        for c in 0..4 {
            // SAFETY: elements `8c..8c + 8` of key `j`'s 32 (as above).
            let x = unsafe { E::load8(vj.add(8 * c)) };
            for (acc, pj) in acc.iter_mut().zip(pj) {
                let a = &mut acc[c];
                *a = _mm256_fmadd_ps(pj, x, *a);
            }
        }
    }
    for (o, acc) in out.into_iter().zip(acc) {
        for (c, a) in acc.into_iter().enumerate() {
            // SAFETY: an 8-float store into floats `8c..8c + 8` of a 32-float array.
            unsafe { _mm256_storeu_ps(o[8 * c..].as_mut_ptr(), a) };
        }
    }
}

/// `Arith::scores`: per key, lane `l` takes `q[e] * k[e]` for `e % 8 == l` by FMA in order (the tail
/// zero-padded), then `((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7))`, times `scale`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn scores<E: KvElem>(q: &[f32], k: &[E], stride: usize, scale: f32, s: &mut [f32]) {
    let scale4 = _mm_set1_ps(scale);
    let done = s.len() / 8 * 8;
    // Eight keys at a time (eight FMA chains in flight), then four.
    let mut eights = s.chunks_exact_mut(8);
    for (n, out) in (&mut eights).enumerate() {
        let acc = dots::<E, 8>(q, k, 8 * n, stride);
        let (lo, hi) = out.split_at_mut(4);
        store4(lo, fold4([acc[0], acc[1], acc[2], acc[3]]), scale4);
        store4(hi, fold4([acc[4], acc[5], acc[6], acc[7]]), scale4);
    }
    let rest = eights.into_remainder();
    let quad = rest.len() / 4 * 4;
    if quad == 4 {
        store4(
            &mut rest[..4],
            fold4(dots::<E, 4>(q, k, done, stride)),
            scale4,
        );
    }
    for (i, out) in rest[quad..].iter_mut().enumerate() {
        let a = dots::<E, 1>(q, k, done + quad + i, stride)[0];
        let b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
        let b = _mm_add_ps(b, _mm_movehl_ps(b, b)); // b0 + b2, b1 + b3
        let r = _mm_add_ss(b, _mm_movehdup_ps(b));
        *out = _mm_cvtss_f32(r) * scale;
    }
}

/// `Arith::scores3`: `scores` for three queries, four keys at a time, so each load of a key serves
/// the three (twelve chains in flight, where one query's eight keys had eight); each key's dot is
/// still its own chain in element order, folded as `scores` folds it. Head sizes that are not whole
/// 8-lane chunks, and the last keys short of four, go through `scores`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn scores3<E: KvElem>(q: [&[f32]; 3], k: &[E], stride: usize, scale: f32, s: [&mut [f32]; 3]) {
    let n = s[0].len();
    let hd = q[0].len();
    if !hd.is_multiple_of(8) || q.iter().any(|q| q.len() != hd) || s.iter().any(|s| s.len() != n) {
        for (q, s) in q.into_iter().zip(s) {
            scores(q, k, stride, scale, s);
        }
        return;
    }
    let scale4 = _mm_set1_ps(scale);
    let quads = n / 4 * 4;
    let [s0, s1, s2] = s;
    let mut outs = [s0, s1, s2];
    for j in (0..quads).step_by(4) {
        let acc = dots3x4(q, k, j, stride);
        for (out, acc) in outs.iter_mut().zip(acc) {
            store4(&mut out[j..j + 4], fold4(acc), scale4);
        }
    }
    if quads < n {
        for (q, out) in q.into_iter().zip(outs) {
            scores(q, &k[quads * stride..], stride, scale, &mut out[quads..]);
        }
    }
}

/// The 8-lane accumulators of three queries against the four keys from `j` (key `i` at
/// `k[i * stride..][..hd]`, `hd` a multiple of 8): each key's chain in element order, as `dots`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn dots3x4<E: KvElem>(q: [&[f32]; 3], k: &[E], j: usize, stride: usize) -> [[__m256; 4]; 3] {
    // Written out, not by `array::from_fn`, whose closures were not inlined here.
    let hd = q[0].len();
    let key = |i: usize| k[(j + i) * stride..][..hd].as_chunks::<8>().0;
    let keys = [key(0), key(1), key(2), key(3)];
    let qs = [
        q[0].as_chunks::<8>().0,
        q[1].as_chunks::<8>().0,
        q[2].as_chunks::<8>().0,
    ];
    let mut acc = [[_mm256_setzero_ps(); 4]; 3];
    for c in 0..hd / 8 {
        // SAFETY (all loads): 8-float loads from 8-float arrays (each slice has `hd / 8` chunks).
        let x = unsafe {
            [
                _mm256_loadu_ps(qs[0][c].as_ptr()),
                _mm256_loadu_ps(qs[1][c].as_ptr()),
                _mm256_loadu_ps(qs[2][c].as_ptr()),
            ]
        };
        for i in 0..4 {
            let y = unsafe { E::load8(keys[i][c].as_ptr()) };
            for n in 0..3 {
                acc[n][i] = _mm256_fmadd_ps(x[n], y, acc[n][i]);
            }
        }
    }
    acc
}

/// Four keys' 8-lane accumulators folded to their four dot products: `b_l = a_l + a_{l+4}`, then a
/// 4x4 transpose so lane i of row r is key i's `b_r`, then `(b0 + b2) + (b1 + b3)` for all four.
#[inline(always)]
fn fold4(acc: [__m256; 4]) -> __m128 {
    // SAFETY (all below): register-only intrinsics, AVX2 enabled by the callers.
    unsafe {
        let half = |a: __m256| _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
        let [a, b, c, d] = acc.map(half);
        let (t0, t1) = (_mm_unpacklo_ps(a, b), _mm_unpackhi_ps(a, b));
        let (t2, t3) = (_mm_unpacklo_ps(c, d), _mm_unpackhi_ps(c, d));
        let (r0, r1) = (_mm_movelh_ps(t0, t2), _mm_movehl_ps(t2, t0));
        let (r2, r3) = (_mm_movelh_ps(t1, t3), _mm_movehl_ps(t3, t1));
        _mm_add_ps(_mm_add_ps(r0, r2), _mm_add_ps(r1, r3))
    }
}

#[inline(always)]
fn store4(out: &mut [f32], sum: __m128, scale4: __m128) {
    let out: &mut [f32; 4] = out.try_into().unwrap();
    // SAFETY: a 4-float store into a 4-float array (AVX2 enabled by the callers).
    unsafe { _mm_storeu_ps(out.as_mut_ptr(), _mm_mul_ps(sum, scale4)) };
}

/// The 8-lane accumulators of the `N` keys from `j` (key `i` at `k[i * stride..][..q.len()]`), advanced
/// together so each load of `q` serves them all and their FMA chains overlap; each chain is still its
/// own key's, in element order, the tail zero-padded as gemm's masked load does.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn dots<E: KvElem, const N: usize>(q: &[f32], k: &[E], j: usize, stride: usize) -> [__m256; N] {
    let hd = q.len();
    let keys: [(&[[E; 8]], &[E]); N] =
        std::array::from_fn(|i| k[(j + i) * stride..][..hd].as_chunks::<8>());
    let (qc, qt) = q.as_chunks::<8>();
    let mut acc = [_mm256_setzero_ps(); N];
    for (c, x) in qc.iter().enumerate() {
        // SAFETY: 8-float loads from 8-float arrays.
        let x = unsafe { _mm256_loadu_ps(x.as_ptr()) };
        for (a, (kc, _)) in acc.iter_mut().zip(&keys) {
            // SAFETY: as above (`kc` has as many chunks as `qc`).
            *a = _mm256_fmadd_ps(x, unsafe { E::load8(kc[c].as_ptr()) }, *a);
        }
    }
    if !qt.is_empty() {
        let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(qt.len() as i32), lane);
        // SAFETY: the mask enables lanes < hd % 8, the length of every tail; others are not read.
        let x = unsafe { _mm256_maskload_ps(qt.as_ptr(), mask) };
        for (a, (_, kt)) in acc.iter_mut().zip(&keys) {
            // SAFETY: as above.
            *a = _mm256_fmadd_ps(x, unsafe { E::load_part(kt.as_ptr(), kt.len()) }, *a);
        }
    }
    acc
}

/// `Arith::exps`: `expf::exp` four lanes at a time (f64 inside, as there).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn exps(s: &mut [f32], max: f32) {
    let max4 = _mm_set1_ps(max);
    let mut quads = s.chunks_exact_mut(4);
    for out in &mut quads {
        let out: &mut [f32; 4] = out.try_into().unwrap();
        // SAFETY: 4-float load from a 4-float array.
        let x = _mm_sub_ps(unsafe { _mm_loadu_ps(out.as_ptr()) }, max4);
        // SAFETY: a 4-float store into a 4-float array.
        unsafe { _mm_storeu_ps(out.as_mut_ptr(), exp4(x)) };
    }
    for x in quads.into_remainder() {
        *x = super::expf::exp::<Fused>(*x - max);
    }
}

/// `expf::exp` on 4 lanes (f64 inside, as there): glibc's bits for `x <= 88.72` (0 below
/// `UNDERFLOW`); overflow and NaN are the caller's (`gate.rs` blends them in, softmax never has them).
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(crate) fn exp4(x: __m128) -> __m128 {
    let (inv, shift) = (_mm256_set1_pd(INV_LN2_N), _mm256_set1_pd(SHIFT));
    let xd = _mm256_cvtps_pd(x);
    let kd = _mm256_fmadd_pd(inv, xd, shift);
    let ki = _mm256_castpd_si256(kd);
    let kd = _mm256_sub_pd(kd, shift);
    let r = _mm256_fmsub_pd(inv, xd, kd);
    let idx = _mm256_and_si256(ki, _mm256_set1_epi64x(31));
    // SAFETY: indices are masked to 0..32, and `TAB` has 32 entries of 8 bytes.
    let t = unsafe { _mm256_i64gather_epi64::<8>(TAB.as_ptr() as *const i64, idx) };
    let s = _mm256_castsi256_pd(_mm256_add_epi64(t, _mm256_slli_epi64::<47>(ki)));
    let z = _mm256_fmadd_pd(_mm256_set1_pd(C0), r, _mm256_set1_pd(C1));
    let y = _mm256_fmadd_pd(_mm256_set1_pd(C2), r, _mm256_set1_pd(1.0));
    let y = _mm256_mul_pd(_mm256_fmadd_pd(z, _mm256_mul_pd(r, r), y), s);
    _mm_andnot_ps(_mm_cmplt_ps(x, _mm_set1_ps(UNDERFLOW)), _mm256_cvtpd_ps(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The intrinsics give the portable loops' bits, for head sizes with and without a tail and for key
    /// counts with and without a remainder.
    #[test]
    fn same_bits_as_the_portable_code() {
        let Some(avx2) = Avx2::detect() else { return };
        let vals = |n: usize, seed: u32| -> Vec<f32> {
            (0..n)
                .map(|i| {
                    ((i as u32).wrapping_mul(2654435761) ^ seed) as f32 / u32::MAX as f32 - 0.5
                })
                .collect()
        };
        for hd in [64, 8, 13, 3] {
            for n in [1, 4, 7, 12, 33] {
                let (q, k) = (vals(hd, 1), vals(n * 2 * hd, 2));
                let (mut a, mut b) = (vec![0f32; n], vec![0f32; n]);
                avx2.scores(&q, &k[hd..], 2 * hd, 0.125, &mut a);
                Fused.scores(&q, &k[hd..], 2 * hd, 0.125, &mut b);
                assert_eq!(bits(&a), bits(&b), "scores hd={hd} n={n}");
            }
        }
        let mut a: Vec<f32> = (0..1003).map(|i| -0.11 * i as f32).collect();
        let mut b = a.clone();
        avx2.exps(&mut a, 0.5);
        Fused.exps(&mut b, 0.5);
        assert_eq!(bits(&a), bits(&b), "exps");
    }

    fn bits(x: &[f32]) -> Vec<u32> {
        x.iter().map(|f| f.to_bits()).collect()
    }
}
