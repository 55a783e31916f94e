//! `e^x` for softmax that vectorises and still returns libm's bits: glibc's `expf` (from Arm's optimized
//! routines) written out, so it can run four lanes at a time (`x86.rs`) instead of one libm call each.
//!
//! Why libm's bits: candle's softmax calls `f32::exp`, and keeping those bits keeps the model equal to
//! candle-transformers on the shapes where the rest of the arithmetic matches too (see `mod.rs`).
//! Algorithm (glibc `e_expf.c`): `x·32/ln2 = k + r` (k rounded to nearest by adding 1.5·2^52),
//! `e^x = 2^(k/32) · 2^(r/32)`, the first factor from a 32-entry table plus `k/32` in the exponent bits,
//! the second a cubic in `r`, all in f64, rounded to f32 once at the end. glibc's x86-64 FMA build
//! contracts `z·(1/ln2) + shift`, `z - kd` and the polynomial into fused multiply-adds; with the same
//! contractions this matched `f32::exp` on every one of the 2.24e9 floats in [-105, 88] here
//! (glibc 2.36). Another libm may round differently, so the first use checks a sample against
//! `f32::exp` and softmax falls back to it on any difference.

use super::Arith;
use std::sync::OnceLock;

/// `tab[i] = bits(2^(i/32)) - (i << 47)`: adding `k << 47` then puts `k/32`'s integer part in the exponent.
pub(super) const TAB: [u64; 32] = [
    0x3ff0000000000000,
    0x3fefd9b0d3158574,
    0x3fefb5586cf9890f,
    0x3fef9301d0125b51,
    0x3fef72b83c7d517b,
    0x3fef54873168b9aa,
    0x3fef387a6e756238,
    0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715,
    0x3feef1a7373aa9cb,
    0x3feedea64c123422,
    0x3feece086061892d,
    0x3feebfdad5362a27,
    0x3feeb42b569d4f82,
    0x3feeab07dd485429,
    0x3feea47eb03a5585,
    0x3feea09e667f3bcd,
    0x3fee9f75e8ec5f74,
    0x3feea11473eb0187,
    0x3feea589994cce13,
    0x3feeace5422aa0db,
    0x3feeb737b0cdc5e5,
    0x3feec49182a3f090,
    0x3feed503b23e255d,
    0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47,
    0x3fef199bdd85529c,
    0x3fef3720dcef9069,
    0x3fef5818dcfba487,
    0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da,
    0x3fefd0765b6e4540,
];
const N: f64 = 32.0;
/// 1.5 · 2^52: adding it rounds to an integer, left in the low mantissa bits.
pub(super) const SHIFT: f64 = 6755399441055744.0;
pub(super) const INV_LN2_N: f64 = f64::from_bits(0x3ff71547652b82fe) * N;
pub(super) const C0: f64 = f64::from_bits(0x3fac6af84b912394) / N / N / N;
pub(super) const C1: f64 = f64::from_bits(0x3fcebfce50fac4f3) / N / N;
pub(super) const C2: f64 = f64::from_bits(0x3fe62e42ff0c52d6) / N;
/// Below `ln(2^-150)` the result rounds to 0 (glibc returns its underflow value, 0).
pub(crate) const UNDERFLOW: f32 = -103.972_08;

/// glibc's `expf(x)` for `x <= 0` (softmax's range), with `M`'s multiply-adds: fused as in glibc's FMA
/// build, or plain as in its baseline build.
#[inline(always)]
pub(super) fn exp<M: Arith>(x: f32) -> f32 {
    let xd = x as f64;
    let kd = M::mul_add64(INV_LN2_N, xd, SHIFT);
    let ki = kd.to_bits();
    let kd = kd - SHIFT;
    let r = M::mul_add64(INV_LN2_N, xd, -kd);
    let s = f64::from_bits(TAB[(ki % 32) as usize].wrapping_add(ki << 47));
    let z = M::mul_add64(C0, r, C1);
    let y = M::mul_add64(C2, r, 1.0);
    let y = M::mul_add64(z, r * r, y) * s;
    if x < UNDERFLOW {
        0.0
    } else {
        y as f32
    }
}

/// Above this glibc's `expf` overflows to infinity (`0x1.62e42ep6`).
pub(crate) const OVERFLOW: f32 = 88.722_83;

/// glibc's `expf(x)` on the whole line (NaN, overflow and underflow as glibc returns them), with fused
/// multiply-adds: what `x86::exp4` and the blends in `gate.rs` give on each lane.
pub(crate) fn exp_any(x: f32) -> f32 {
    if x.is_nan() {
        x + x
    } else if x > OVERFLOW {
        f32::INFINITY
    } else {
        exp::<super::Fused>(x)
    }
}

/// Whether `exp::<M>` returns `f32::exp`'s bits here, checked once on 4096 points over softmax's range.
pub(super) fn matches_libm<M: Arith>() -> bool {
    static FUSED: OnceLock<bool> = OnceLock::new();
    static PLAIN: OnceLock<bool> = OnceLock::new();
    let cell = if M::FUSED { &FUSED } else { &PLAIN };
    *cell.get_or_init(|| {
        (0..4096u32).all(|i| {
            // -110..0 in uneven steps, so the low mantissa bits vary too
            let x = -(i as f32) * 0.026_862_3 - (i % 7) as f32 * 1.1e-3;
            exp::<M>(x).to_bits() == x.exp().to_bits()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::forward::attention::Fused;

    /// Within one ulp of libm everywhere; libm's exact bits where libm is glibc's FMA build (checked
    /// on every float in [-105, 88] when written; here on a million of them).
    #[test]
    fn follows_libm() {
        let mut same = true;
        for i in 0..1_000_000u32 {
            let x = -105.0 * (i as f32 / 1e6) - (i % 3) as f32 * 1e-7;
            let (a, b) = (exp::<Fused>(x), x.exp());
            assert!(
                a.to_bits().abs_diff(b.to_bits()) <= 1,
                "exp({x}) = {a}, libm {b}"
            );
            same &= a.to_bits() == b.to_bits();
        }
        #[cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]
        if is_x86_feature_detected!("fma") {
            assert!(
                same && matches_libm::<Fused>(),
                "glibc's FMA expf, copied exactly"
            );
        }
        let _ = same;
    }
}
