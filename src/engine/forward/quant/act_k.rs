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

/// Fills `act` (sized for Q8_K: `act.qk == QK_K`) from `xs`, block by block: with AVX2 intrinsics where
/// the CPU has it and `simd` (`act_x86::quantize_block_k`, the same bits), else the portable block.
pub(super) fn quantize_rows(xs: &[f32], act: &mut Act, simd: bool) {
    assert_eq!(act.qk, QK_K);
    #[cfg(target_arch = "x86_64")]
    let simd = simd && is_x86_feature_detected!("avx2");
    act.bsums = vec![0; xs.len() / BSUM_LEN];
    let blocks = xs
        .chunks_exact(QK_K)
        .zip(act.qs.chunks_exact_mut(QK_K))
        .zip(act.bsums.chunks_exact_mut(QK_K / BSUM_LEN));
    for (i, ((x, q), bsums)) in blocks.enumerate() {
        let (x, q, bsums) = (
            x.try_into().unwrap(),
            q.try_into().unwrap(),
            bsums.try_into().unwrap(),
        );
        act.d[i] = match simd {
            // SAFETY: `simd` holds only where AVX2 was detected just above.
            #[cfg(target_arch = "x86_64")]
            true => unsafe { super::act_x86::quantize_block_k(x, q, bsums) },
            _ => quantize_block(x, q, bsums),
        };
    }
}

/// One block; returns `d`.
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

    /// Our Q8_K blocks, portable and AVX2, must be byte-identical to candle's (`d`, quants, `bsums`),
    /// special values included.
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
        for simd in [false, true] {
            let ours = Act::quantize_with(&xs, m, k, ActKind::Q8K, simd);
            assert_eq!(ours.nb, m * k / QK_K / m);
            same_blocks(&ours, &theirs, simd);
        }
    }

    /// Many blocks of varied scale, each with its largest magnitude at both signs (the first is kept): the
    /// AVX2 blocks equal the portable ones byte for byte.
    #[test]
    fn avx2_blocks_equal_the_portable_ones() {
        let (m, k) = (7, 2048);
        let xs: Vec<f32> = (0..m * k)
            .map(|i| {
                let h = (i as u32).wrapping_mul(2_654_435_761).rotate_left(7);
                let scale = [1e-3, 0.5, 3.0, 40.0][i / 256 % 4];
                let x = (h % 2001) as f32 - 1000.0;
                match i % 97 {
                    0 => 1000.0 * scale, // magnitudes repeat: the first one is kept
                    1 => -1000.0 * scale,
                    _ => x * scale * 0.001,
                }
            })
            .collect();
        let (a, b) = (
            Act::quantize_with(&xs, m, k, ActKind::Q8K, false),
            Act::quantize_with(&xs, m, k, ActKind::Q8K, true),
        );
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a.d), bits(&b.d));
        assert_eq!(a.qs, b.qs);
        assert_eq!(a.bsums, b.bsums);
    }

    fn same_blocks(ours: &Act, theirs: &[u8], simd: bool) {
        for (i, block) in theirs.chunks_exact(4 + QK_K + 32).enumerate() {
            let d = f32::from_le_bytes(block[..4].try_into().unwrap());
            assert_eq!(
                ours.d[i].to_bits(),
                d.to_bits(),
                "d of block {i}, simd {simd}"
            );
            let qs: Vec<i8> = block[4..4 + QK_K].iter().map(|&b| b as i8).collect();
            assert_eq!(
                &ours.qs[i * QK_K..][..QK_K],
                &qs[..],
                "quants of block {i}, simd {simd}"
            );
            let bsums: Vec<i16> = block[4 + QK_K..]
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]))
                .collect();
            assert_eq!(
                &ours.bsums[i * 16..][..16],
                &bsums[..],
                "bsums of block {i}, simd {simd}"
            );
        }
    }
}
