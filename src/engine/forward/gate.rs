//! The MLP's gated product `act(g) · u` in one pass over the two rows (no tensor in between), split
//! over the threads for a prefill.
//!
//! - SiLU (llama, Qwen): `(g / (1 + e^-g)) · u`, candle's `silu` then `mul`, to the bit, four lanes at
//!   a time: the exponential is glibc's `expf` written out (`attention/expf.rs`) over its whole range,
//!   checked once against `f32::exp`; on any difference (another libm) every lane calls libm.
//! - GELU, tanh form (Gemma): `0.5·g·(1 + tanh z) · u`, `z = √(2/π)·g·(1 + 0.044715·g²)`, candle's
//!   `gelu` then `mul` to the bit, eight lanes at a time: `tanhf` is glibc's written out
//!   (`tanhf.rs`), checked once against `f32::tanh`; on any difference every lane calls libm. (The
//!   same function written as `g / (1 + e^-2z)` is a few ulps off, and those ulps, rounded into 8-bit
//!   activations over 18 layers, flipped a near-tie on the llama.cpp golden path: docs/NUMERICS.md.)

use super::attention::expf::{exp_any, OVERFLOW, UNDERFLOW};
use super::block::Activation;
use super::quant::pool;
use std::sync::OnceLock;

/// `√(2/π)` as candle writes it.
const SQRT_TWO_OVER_PI: f32 = 0.797_884_6;
/// Elements per work item when a prefill's rows are split over the threads.
const CHUNK: usize = 1 << 14;

/// `out[i] = act(gate[i]) · up[i]`.
pub fn gate_into(gate: &[f32], up: &[f32], act: Activation, out: &mut [f32]) {
    assert!(gate.len() == up.len() && up.len() == out.len());
    let n = out.len();
    let parts = OutPtr(out.as_mut_ptr());
    let run = |i: usize| {
        let r = i * CHUNK..n.min((i + 1) * CHUNK);
        // SAFETY: each item owns the disjoint range `r` of `out`, which `gate_into` borrows mutably until
        // `parallel_for` has joined every item.
        let out = unsafe { std::slice::from_raw_parts_mut(parts.at(r.start), r.len()) };
        gate_part(&gate[r.clone()], &up[r], act, out);
    };
    pool::parallel_for(n.div_ceil(CHUNK), pool::threads(), run);
}

/// `gate_into` on the gate and up projections side by side, as one stacked matmul writes them: row
/// `r` of `joined` is its `w` gate values then its `w` up values, and `out` gets `m` rows of `w`.
/// Saves splitting the stacked output into two copies (8 MB a layer for Gemma 3 at 512 rows).
pub fn gate_joined_into(joined: &[f32], w: usize, act: Activation, out: &mut [f32]) {
    assert!(w > 0 && joined.len() == 2 * out.len() && out.len().is_multiple_of(w));
    let m = out.len() / w;
    let rows_per_item = (CHUNK / w).max(1);
    let parts = OutPtr(out.as_mut_ptr());
    let run = |i: usize| {
        for r in i * rows_per_item..m.min((i + 1) * rows_per_item) {
            let row = &joined[2 * w * r..][..2 * w];
            // SAFETY: each item owns rows `i * rows_per_item..` of `out`, disjoint from every other
            // item's, which `gate_joined_into` borrows mutably until `parallel_for` has joined them.
            let out = unsafe { std::slice::from_raw_parts_mut(parts.at(r * w), w) };
            gate_part(&row[..w], &row[w..], act, out);
        }
    };
    pool::parallel_for(m.div_ceil(rows_per_item), pool::threads(), run);
}

/// A pointer into an output buffer that parallel items write in disjoint ranges.
#[derive(Clone, Copy)]
pub(crate) struct OutPtr(pub(crate) *mut f32);
// SAFETY: see `gate_into`: items write disjoint ranges and are all joined before the borrow ends.
unsafe impl Send for OutPtr {}
// SAFETY: as for `Send`.
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// A method, so that closures capture the whole `OutPtr` (which is `Sync`), not its raw field.
    pub(crate) fn at(self, i: usize) -> *mut f32 {
        self.0.wrapping_add(i)
    }
}

fn gate_part(gate: &[f32], up: &[f32], act: Activation, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if act == Activation::Silu && vector_exp_ok() {
        // SAFETY: `vector_exp_ok` is true only if the CPU has AVX2 and FMA.
        return unsafe { x86::silu(gate, up, out) };
    }
    #[cfg(target_arch = "x86_64")]
    if act == Activation::GeluTanh && vector_tanh_ok() {
        // SAFETY: `vector_tanh_ok` is true only if the CPU has AVX2.
        return unsafe { x86::gelu(gate, up, out) };
    }
    for ((o, &g), &u) in out.iter_mut().zip(gate).zip(up) {
        *o = one(g, u, act, f32::exp);
    }
}

/// One element; `exp` is libm's or its vector copy's bits.
#[inline(always)]
fn one(g: f32, u: f32, act: Activation, exp: impl Fn(f32) -> f32) -> f32 {
    match act {
        Activation::Silu => (g / (1.0 + exp(-g))) * u,
        Activation::GeluTanh => gelu(g) * u,
    }
}

/// candle's tanh GELU, in its order of operations.
#[inline(always)]
fn gelu(g: f32) -> f32 {
    0.5 * g * (1.0 + f32::tanh(SQRT_TWO_OVER_PI * g * (1.0 + 0.044715 * g * g)))
}

/// Whether the vector exponential runs here and gives libm's bits (checked once, on 8192 points from
/// underflow to overflow, the special values included).
fn vector_exp_ok() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && probe_points().all(|x| {
                    let mut e = [0f32];
                    // SAFETY: AVX2 and FMA were detected just above.
                    unsafe { x86::exps(&[x], &mut e) };
                    e[0].to_bits() == x.exp().to_bits() || (x.is_nan() && e[0].is_nan())
                })
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// Whether the vector `tanhf` runs here and gives libm's bits (checked once, on `tanh_probe_points`).
fn vector_tanh_ok() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            is_x86_feature_detected!("avx2") && {
                let x: Vec<f32> = tanh_probe_points().collect();
                let mut t = vec![0f32; x.len()];
                // SAFETY: AVX2 was detected just above.
                unsafe { crate::engine::forward::tanhf::x86::tanhs(&x, &mut t) };
                x.iter().zip(&t).all(|(x, t)| same(*t, x.tanh()))
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// Equal bits, or both NaN.
fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan()
}

/// Every branch of `tanhf` and `expm1f`: 8 special values, then magnitudes from 2⁻⁶⁰ to 2⁵ (both
/// signs) through every exponent, so every `k` of `expm1f`'s reduction; 8200 points, whole groups of 8.
fn tanh_probe_points() -> impl Iterator<Item = f32> {
    let special = [
        f32::NEG_INFINITY,
        f32::INFINITY,
        f32::NAN,
        0.0,
        -0.0,
        22.0,
        1.0,
        f32::MIN_POSITIVE,
    ];
    let swept = (0..8192u32).map(|i| {
        let m = f32::from_bits(((67 + i / 128) << 23) | (i * 104_729 % (1 << 23)));
        if i % 2 == 0 {
            m
        } else {
            -m
        }
    });
    special.into_iter().chain(swept)
}

fn probe_points() -> impl Iterator<Item = f32> {
    let special = [
        f32::NEG_INFINITY,
        f32::INFINITY,
        f32::NAN,
        0.0,
        -0.0,
        OVERFLOW,
        UNDERFLOW,
    ];
    let swept = (0..8192u32).map(|i| -110.0 + i as f32 * 0.024_414_1 + (i % 5) as f32 * 1.3e-4);
    special.into_iter().chain(swept)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;
    use std::arch::x86_64::*;

    /// `exp_any` on 4 lanes: attention's `exp4` with overflow and NaN blended in.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn exp4(x: __m128) -> __m128 {
        let e = crate::engine::forward::attention::x86::exp4(x);
        let over = _mm_cmpgt_ps(x, _mm_set1_ps(OVERFLOW));
        let e = _mm_blendv_ps(e, _mm_set1_ps(f32::INFINITY), over);
        _mm_blendv_ps(e, _mm_add_ps(x, x), _mm_cmpunord_ps(x, x))
    }

    /// `e[i] = exp(x[i])` (the probe of `vector_exp_ok`).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn exps(x: &[f32], e: &mut [f32]) {
        for (x, e) in x.iter().zip(e) {
            let v = exp4(_mm_set1_ps(*x));
            *e = _mm_cvtss_f32(v);
        }
    }

    /// `gate_part` for GELU, 8 lanes at a time in candle's order of operations; the tail through libm.
    #[target_feature(enable = "avx2")]
    pub(super) fn gelu(gate: &[f32], up: &[f32], out: &mut [f32]) {
        let n8 = out.len() / 8 * 8;
        let c = |v: f32| _mm256_set1_ps(v);
        for i in (0..n8).step_by(8) {
            // SAFETY: `i + 8 <= n8 <= len` of all three slices (asserted equal by `gate_into`).
            unsafe {
                let g = _mm256_loadu_ps(gate.as_ptr().add(i));
                let u = _mm256_loadu_ps(up.as_ptr().add(i));
                let g2 = _mm256_mul_ps(_mm256_mul_ps(c(0.044715), g), g);
                let z = _mm256_mul_ps(
                    _mm256_mul_ps(c(SQRT_TWO_OVER_PI), g),
                    _mm256_add_ps(c(1.0), g2),
                );
                let t = crate::engine::forward::tanhf::x86::tanh8(z);
                let y = _mm256_mul_ps(_mm256_mul_ps(c(0.5), g), _mm256_add_ps(c(1.0), t));
                _mm256_storeu_ps(out.as_mut_ptr().add(i), _mm256_mul_ps(y, u));
            }
        }
        for i in n8..out.len() {
            out[i] = super::one(gate[i], up[i], Activation::GeluTanh, f32::exp);
        }
    }

    /// `gate_part` for SiLU, 4 lanes at a time; the tail through `exp_any` (the same bits).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn silu(gate: &[f32], up: &[f32], out: &mut [f32]) {
        let one = _mm_set1_ps(1.0);
        let n4 = out.len() / 4 * 4;
        for i in (0..n4).step_by(4) {
            // SAFETY: `i + 4 <= n4 <= len` of all three slices (asserted equal by `gate_into`).
            unsafe {
                let g = _mm_loadu_ps(gate.as_ptr().add(i));
                let u = _mm_loadu_ps(up.as_ptr().add(i));
                let e = exp4(_mm_sub_ps(_mm_setzero_ps(), g));
                let y = _mm_mul_ps(_mm_div_ps(g, _mm_add_ps(one, e)), u);
                _mm_storeu_ps(out.as_mut_ptr().add(i), y);
            }
        }
        for i in n4..out.len() {
            out[i] = super::one(gate[i], up[i], Activation::Silu, exp_any);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Tensor;

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
        let g = (0..n).map(|i| ((i * 37 % 1001) as f32 - 500.0) * 0.027 + (i % 3) as f32 * 1e-3);
        let u = (0..n).map(|i| ((i * 53 % 997) as f32 - 498.0) * 0.01);
        (g.collect(), u.collect())
    }

    /// candle's `act(g) * u`.
    fn candles(
        g: &[f32],
        u: &[f32],
        act: impl Fn(&Tensor) -> candle_core::Result<Tensor>,
    ) -> Vec<f32> {
        let dev = candle_core::Device::Cpu;
        let (gt, ut) = (Tensor::new(g, &dev).unwrap(), Tensor::new(u, &dev).unwrap());
        (act(&gt).unwrap() * &ut).unwrap().to_vec1::<f32>().unwrap()
    }

    /// The stacked form gives the split form's bits, for both activations, one row and many.
    #[test]
    fn joined_rows_give_the_split_rows_bits() {
        for act in [Activation::Silu, Activation::GeluTanh] {
            for (m, w) in [(1, 40), (3, 1536), (9, 2048)] {
                let (g, u) = inputs(m * w);
                let joined: Vec<f32> = (0..m)
                    .flat_map(|r| g[r * w..][..w].iter().chain(&u[r * w..][..w]).copied())
                    .collect();
                let (mut split, mut stacked) = (vec![0f32; m * w], vec![0f32; m * w]);
                gate_into(&g, &u, act, &mut split);
                gate_joined_into(&joined, w, act, &mut stacked);
                assert_eq!(bits(&stacked), bits(&split), "{act:?} m={m} w={w}");
            }
        }
    }

    /// The scalar copy of glibc's `expf` is libm's bits from underflow to overflow (where libm is
    /// glibc's FMA build, as here), and the vector code is the scalar copy's on every lane.
    #[test]
    fn the_exponential_is_libms() {
        for x in probe_points() {
            let s = exp_any(x);
            #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
            if is_x86_feature_detected!("fma") {
                assert!(
                    s.to_bits() == x.exp().to_bits() || x.is_nan() && s.is_nan(),
                    "exp({x})"
                );
            }
            #[cfg(target_arch = "x86_64")]
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                let mut e = [0f32];
                // SAFETY: AVX2 and FMA detected.
                unsafe { x86::exps(&[x], &mut e) };
                assert!(
                    e[0].to_bits() == s.to_bits() || x.is_nan() && e[0].is_nan(),
                    "exp4({x})"
                );
            }
        }
    }

    /// The vector `tanhf` is libm's bits on every 251st of all 2³² inputs (where libm is glibc's, as
    /// here), and the start-up probe agrees.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_tanh_is_libms() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        assert_eq!(tanh_probe_points().count() % 8, 0);
        let glibc = cfg!(all(target_os = "linux", target_env = "gnu"));
        assert!(
            vector_tanh_ok() || !glibc,
            "the start-up probe found a difference from glibc"
        );
        let x: Vec<f32> = (0..(1u64 << 32) / 251 / 8 * 8)
            .map(|i| f32::from_bits((i * 251) as u32))
            .collect();
        let mut t = vec![0f32; x.len()];
        // SAFETY: AVX2 detected.
        unsafe { crate::engine::forward::tanhf::x86::tanhs(&x, &mut t) };
        let differ = x
            .iter()
            .zip(&t)
            .filter(|(x, t)| !same(**t, x.tanh()))
            .count();
        assert!(
            differ == 0 || !glibc,
            "{differ} of {} inputs differ",
            x.len()
        );
    }

    /// SiLU times `up` is candle's `silu(g) * u` to the bit, over many elements (split over threads, and
    /// a tail that is not a multiple of 4).
    #[test]
    fn silu_is_candles_bits() {
        let n = 3 * CHUNK + 7;
        let (g, u) = inputs(n);
        let mut ours = vec![0f32; n];
        gate_into(&g, &u, Activation::Silu, &mut ours);
        let theirs = candles(&g, &u, |t| t.silu());
        assert_eq!(bits(&ours), bits(&theirs));
    }

    /// The GELU gate is candle's `gelu(g) * u` to the bit, split over threads or alone.
    #[test]
    fn gelu_is_candles_bits() {
        let n = 2 * CHUNK + 5;
        let (g, u) = inputs(n);
        let mut ours = vec![0f32; n];
        gate_into(&g, &u, Activation::GeluTanh, &mut ours);
        let theirs = candles(&g, &u, |t| t.gelu());
        assert_eq!(bits(&ours), bits(&theirs));
        let mut alone = [0f32];
        gate_into(&g[7..8], &u[7..8], Activation::GeluTanh, &mut alone);
        assert_eq!(alone[0].to_bits(), ours[7].to_bits());
    }
}
