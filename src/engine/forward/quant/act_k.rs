//! Activation rows quantised to Q8_K (the partner of Q4_K and Q6_K weights), bit for bit as candle's
//! `BlockQ8K::from_float` does it.
//!
//! A Q8_K block is 256 values: `max` is the first value of largest magnitude (NaN skipped),
//! `iscale = -127 / max`, `q = round(iscale * x)` (ties away from zero), `d = 1 / iscale` kept as f32 (it
//! is negative when `max` is positive), and `bsums` holds the sum of each 16 quants. An all-zero block
//! has `d = 0` and zero quants.

use super::act::Act;
use super::layout_k::QK_K;

/// Quants per `bsums` entry.
pub const BSUM_LEN: usize = 16;

/// Fills `act` (sized for Q8_K: `act.qk == QK_K`) from `xs`, block by block: the same code compiled
/// for AVX2 where the CPU has it (its loops vectorise 8 lanes wide; the bits cannot change).
pub(super) fn quantize_rows(xs: &[f32], act: &mut Act) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 was detected just above.
        return unsafe { quantize_rows_avx2(xs, act) };
    }
    quantize_rows_any(xs, act)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn quantize_rows_avx2(xs: &[f32], act: &mut Act) {
    quantize_rows_any(xs, act)
}

#[inline(always)]
fn quantize_rows_any(xs: &[f32], act: &mut Act) {
    assert_eq!(act.qk, QK_K);
    act.bsums = vec![0; xs.len() / BSUM_LEN];
    let blocks = xs
        .chunks_exact(QK_K)
        .zip(act.qs.chunks_exact_mut(QK_K))
        .zip(act.bsums.chunks_exact_mut(QK_K / BSUM_LEN));
    for (i, ((x, q), bsums)) in blocks.enumerate() {
        let (x, q) = (x.try_into().unwrap(), q.try_into().unwrap());
        act.d[i] = quantize_block(x, q, bsums.try_into().unwrap());
    }
}

/// One block; returns `d`.
#[inline(always)]
fn quantize_block(x: &[f32; QK_K], q: &mut [i8; QK_K], bsums: &mut [i16; 16]) -> f32 {
    // The largest magnitude as integer bits (monotonic for non-NaN floats, so this vectorises; NaN bits
    // are skipped as candle's `amax < x.abs()` skips them), then the first value that has it: candle
    // keeps the first of equal magnitudes.
    let amax_bits = x.iter().fold(0u32, |a, &v| {
        let b = v.to_bits() & 0x7FFF_FFFF;
        if b > 0x7F80_0000 {
            a
        } else {
            a.max(b)
        }
    });
    if amax_bits == 0 {
        q.fill(0);
        bsums.fill(0);
        return 0.0;
    }
    let max = *x
        .iter()
        .find(|v| v.to_bits() & 0x7FFF_FFFF == amax_bits)
        .expect("amax is one of the values");
    let iscale = -127f32 / max;
    for (q, &v) in q.iter_mut().zip(x) {
        // `f32::round(iscale * v)` clamped to i8, without the libm call: truncate, then step away from
        // zero when the (exact) fraction is at least one half. NaN gives 0, as `NaN as i8` does.
        let v = iscale * v;
        let t = v as i32;
        let frac = v - t as f32;
        *q = (t + (frac >= 0.5) as i32 - (frac <= -0.5) as i32).clamp(-128, 127) as i8;
    }
    for (s, q) in bsums.iter_mut().zip(q.chunks_exact(BSUM_LEN)) {
        *s = q.iter().map(|&q| q as i32).sum::<i32>() as i16;
    }
    1.0 / iscale
}

#[cfg(test)]
mod tests {
    use super::super::act::{Act, ActKind};
    use super::*;
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    /// Our Q8_K blocks must be byte-identical to candle's (`d`, quants, `bsums`), special values included.
    #[test]
    fn matches_candle_bit_for_bit() {
        let (m, k) = (3, 512);
        let mut xs: Vec<f32> = (0..m * k)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.013)
            .collect();
        xs[..256].fill(0.0); // an all-zero block
        xs[300] = f32::NAN; // skipped by the maximum, quantised to 0
        xs[600] = -0.9; // the block's largest magnitude, negative: d > 0
        xs[700] = 0.9; // the same magnitude later: not the one kept
        xs[1100] = 1.27; // iscale * x hits exact halves for multiples of 0.005
        for (j, x) in xs[1101..1150].iter_mut().enumerate() {
            *x = 0.005 * j as f32 - 0.1;
        }
        let t = Tensor::from_vec(xs.clone(), (m, k), &Device::Cpu).unwrap();
        let theirs = QTensor::quantize(&t, GgmlDType::Q8K).unwrap();
        let theirs = theirs.data().unwrap();
        let ours = Act::quantize(&xs, m, k, ActKind::Q8K);
        assert_eq!(ours.nb, m * k / QK_K / m);
        for (i, block) in theirs.chunks_exact(4 + QK_K + 32).enumerate() {
            let d = f32::from_le_bytes(block[..4].try_into().unwrap());
            assert_eq!(ours.d[i].to_bits(), d.to_bits(), "d of block {i}");
            let qs: Vec<i8> = block[4..4 + QK_K].iter().map(|&b| b as i8).collect();
            assert_eq!(&ours.qs[i * QK_K..][..QK_K], &qs[..], "quants of block {i}");
            let bsums: Vec<i16> = block[4 + QK_K..]
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]))
                .collect();
            assert_eq!(
                &ours.bsums[i * 16..][..16],
                &bsums[..],
                "bsums of block {i}"
            );
        }
    }
}
