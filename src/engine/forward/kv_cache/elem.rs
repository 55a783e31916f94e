//! What the KV cache holds per key or value element: `f32` (the default: each exactly as the
//! projections computed it) or `f16` (half the bytes, each rounded to the nearest `f16`, ties to even,
//! as it is stored: llama.cpp's default cache). A stored element widens to `f32` exactly, so the
//! attention's arithmetic after the read is the same on every kernel and both caches: the two differ
//! only by the rounding on the way in, and an `f16` cache gives the bits of an `f32` cache holding
//! the rounded values (tested in `attention/tests.rs`).

use half::f16;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The cache's element type, chosen when the model is loaded (`Model::set_kv_precision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvPrecision {
    /// 4 bytes an element: the default, the bits of candle-transformers' models.
    #[default]
    F32,
    /// 2 bytes an element: half the memory and half the bytes a deep decode step reads, for one more
    /// rounding of every key and value.
    F16,
}

impl KvPrecision {
    /// Bytes an element takes.
    pub fn bytes(self) -> usize {
        match self {
            KvPrecision::F32 => 4,
            KvPrecision::F16 => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            KvPrecision::F32 => "f32",
            KvPrecision::F16 => "f16",
        }
    }
}

/// An element type the cache stores and the attention kernels read.
pub trait KvElem: bytemuck::Pod + Send + Sync + 'static {
    /// `widen` costs nothing (no instruction), so loops left to the compiler may read elements.
    const WIDEN_IS_FREE: bool;
    /// The value as `f32`, exactly.
    fn widen(self) -> f32;
    /// `x` rounded to this type (to nearest, ties to even).
    fn narrow(x: f32) -> Self;
    /// Eight elements from `p`, widened.
    ///
    /// # Safety
    /// `p` is valid for eight reads, and the CPU has AVX2 and F16C (the caller's target features).
    #[cfg(target_arch = "x86_64")]
    unsafe fn load8(p: *const Self) -> __m256;
    /// The first `n < 8` elements from `p`, widened, the other lanes zero.
    ///
    /// # Safety
    /// As `load8`, for `n` reads.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load_part(p: *const Self, n: usize) -> __m256 {
        let mut x = [0f32; 8];
        for (i, x) in x.iter_mut().enumerate().take(n) {
            // SAFETY: `i < n`, and `p` is valid for `n` reads.
            *x = unsafe { *p.add(i) }.widen();
        }
        // SAFETY: an 8-float load from an 8-float array.
        unsafe { _mm256_loadu_ps(x.as_ptr()) }
    }
}

impl KvElem for f32 {
    const WIDEN_IS_FREE: bool = true;
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
    #[inline(always)]
    fn narrow(x: f32) -> Self {
        x
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(p: *const Self) -> __m256 {
        // SAFETY: the caller's.
        unsafe { _mm256_loadu_ps(p) }
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load_part(p: *const Self, n: usize) -> __m256 {
        // SAFETY: the CPU has AVX2 (the caller's); the mask enables lanes `< n`, the others are
        // not read.
        unsafe {
            let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), lane);
            _mm256_maskload_ps(p, mask)
        }
    }
}

impl KvElem for f16 {
    const WIDEN_IS_FREE: bool = false;
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn narrow(x: f32) -> Self {
        f16::from_f32(x)
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(p: *const Self) -> __m256 {
        // SAFETY: the caller's: 16 bytes readable, F16C present.
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Narrowing rounds to nearest with ties to even, as F16C's `vcvtps2ph` and llama.cpp's
    /// `GGML_FP32_TO_FP16` do, and widening is exact.
    #[test]
    fn f16_rounds_to_nearest_even_and_widens_exactly() {
        let one = 1.0f32;
        let ulp = 2f32.powi(-10); // f16's spacing at 1
        assert_eq!(
            f16::narrow(one + ulp / 2.0).widen(),
            one,
            "a tie goes to even"
        );
        assert_eq!(
            f16::narrow(one + 1.5 * ulp).widen(),
            one + 2.0 * ulp,
            "a tie goes to even"
        );
        assert_eq!(f16::narrow(one + 0.6 * ulp).widen(), one + ulp);
        assert_eq!(f16::narrow(65504.0).widen(), 65504.0, "f16's largest");
        assert_eq!(f32::narrow(0.1).to_bits(), 0.1f32.to_bits());
    }

    /// The x86 loads widen as `widen` does: eight at a time, and a part with the other lanes zero.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_x86_loads_widen_as_widen_does() {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c")) {
            return;
        }
        let xs: Vec<f32> = (0..8).map(|i| (i as f32 - 3.3) * 0.37).collect();
        let halves: Vec<f16> = xs.iter().map(|&x| f16::narrow(x)).collect();
        let lanes = |v: __m256| {
            let mut out = [0f32; 8];
            // SAFETY: an 8-float store into an 8-float array.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), v) };
            out.to_vec()
        };
        let want: Vec<f32> = halves.iter().map(|h| h.widen()).collect();
        assert_ne!(want, xs, "the values are rounded");
        // SAFETY: eight elements each; AVX2 and F16C detected above.
        let (a, b) = unsafe { (f16::load8(halves.as_ptr()), f32::load8(xs.as_ptr())) };
        assert_eq!(lanes(a), want);
        assert_eq!(lanes(b), xs);
        for n in 0..8 {
            let pad = |v: &[f32]| [&v[..n], &vec![0.0; 8 - n][..]].concat();
            // SAFETY: `n < 8` elements each, as above.
            let a = unsafe { f16::load_part(halves.as_ptr(), n) };
            // SAFETY: as above.
            let b = unsafe { f32::load_part(xs.as_ptr(), n) };
            assert_eq!(lanes(a), pad(&want), "{n} halves");
            assert_eq!(lanes(b), pad(&xs), "{n} floats");
        }
    }
}
