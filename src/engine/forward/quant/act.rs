//! Activation rows quantised to 8 bits once per matmul, bit for bit as candle's `QMatMul` does it.
//!
//! Q8_1 block (paired with Q4_1 weights): f16 `d = amax/127`, 32 signed bytes `q = round(x/d)`, and
//! `s = d * sum(q)` (candle rounds `sum(q)` and the product to f16). Then for a Q4_1 weight block
//! `sum_j (dw*qw_j + mw) * (d*q_j) = dw*d * sum_j(qw_j*q_j) + mw*s`: one integer dot and two scalings.
//! Q8_0 is the same block without `s`; paired with Q8_0 weights, the dot is `dw*d * sum_j(qw_j*q_j)`.
//! Q8_K (paired with Q4_K and Q6_K weights, `act_k.rs`): 256-value blocks, an f32 `d`, and the sum of
//! each 16 quants (`bsums`).
//! Matching candle exactly means the fast path differs from the exact one only in float summation order.

use super::act_spare::{zeroed, Spare};
use super::layout::QK;
use half::f16;
use std::sync::OnceLock;

/// Which activation block a weight type pairs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActKind {
    Q8_1,
    Q8_0,
    /// 256-value blocks (K-quant weights).
    Q8K,
}

impl ActKind {
    /// Values per block.
    pub fn block_len(self) -> usize {
        match self {
            ActKind::Q8K => super::layout_k::QK_K,
            ActKind::Q8_1 | ActKind::Q8_0 => QK,
        }
    }
}

/// `m` rows of `k` activations, quantised in blocks of `qk` (32, or 256 for Q8_K); row `c`, block `b`
/// is index `c * nb + b`.
pub struct Act {
    pub m: usize,
    pub nb: usize,
    /// Values per block.
    pub qk: usize,
    /// `m * k` quants.
    pub qs: Vec<i8>,
    /// Block scales `d` (f16-rounded, as f32; Q8_K's are f32 as computed).
    pub d: Vec<f32>,
    /// Q8_1 only: `s = d * sum(q)` as candle rounds it (f16, as f32); zero for Q8_0.
    pub s: Vec<f32>,
    /// `sum(q)` per block.
    pub sum: Vec<i32>,
    /// Q8_0, for the AVX-512 Q8_0 kernel (`Extras`): `sum(q)` of each 4-value group (`m * k / 4`), so
    /// it can use unsigned weights (`q + 128`) and take `128 * gsum` off each group's dot.
    pub gsum: Vec<i32>,
    /// Q8_0 and Q8_K, for the AVX2 Q5_0 and Q6_K kernels (`Extras`): the two i16 lanes from which
    /// they take a row's `u a` pairs away (`u = q_w + 16` or `+ 32`, the unsigned weights), to end at
    /// `-sum(q_w a)`: for each Q8_0 block `16 * sum(a)`, for each 16 Q8_K quants `32 * sum(a)`, over
    /// the values `4g, 4g + 1` and over `4g + 2, 4g + 3` of its 4-value groups `g` (`lane_biases`).
    /// Each is in -32768..=32512 (`|a| <= 128`), as is the lane's end.
    pub lane_bias: Vec<[i16; 2]>,
    /// Q8_0, for the AVX2 Q8_0 kernel (`Extras`): `|q|` of each quant, its unsigned operand against a
    /// matrix without a weight of -128 (`avx2::q8_0`).
    pub abs: Vec<u8>,
    /// Q8_K only: `sum(q)` of each 16 quants (`m * k / 16`), as candle's `bsums`.
    pub bsums: Vec<i16>,
}

/// Sums beside the quants that only some kernels read (`Act::gsum`, `lane_bias`, `abs`): the matmul
/// asks for those its kernel reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras {
    pub gsum: bool,
    pub lane_bias: bool,
    pub abs: bool,
    /// Q8_1 against Q4_0 weights held as Q4_1 (`layout::q4_0_as_q4_1`): `s = d * sum(q)` exact in
    /// f32 (an f16 `d` times a sum of at most 12 bits), not rounded to f16 as candle's Q8_1 has it.
    pub exact_sums: bool,
}

impl Act {
    pub fn quantize(xs: &[f32], m: usize, k: usize, kind: ActKind) -> Act {
        Self::quantize_with(xs, m, k, kind, true)
    }

    /// `simd: false` forces the portable code (tests compare both with candle).
    pub fn quantize_with(xs: &[f32], m: usize, k: usize, kind: ActKind, simd: bool) -> Act {
        let qk = kind.block_len();
        assert!(k.is_multiple_of(qk) && xs.len() == m * k);
        let nb = k / qk;
        let Spare { qs, d, s, sum } = Spare::take();
        let mut act = Act {
            m,
            nb,
            qk,
            qs: zeroed(qs, m * k),
            d: zeroed(d, m * nb),
            s: zeroed(s, m * nb),
            sum: zeroed(sum, m * nb),
            gsum: Vec::new(),
            lane_bias: Vec::new(),
            abs: Vec::new(),
            bsums: Vec::new(),
        };
        if kind == ActKind::Q8K {
            super::act_k::quantize_rows(xs, &mut act, simd);
            return act;
        }
        #[cfg(target_arch = "x86_64")]
        let simd = simd && is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c");
        #[cfg(not(target_arch = "x86_64"))]
        let simd = false;
        if simd {
            // SAFETY: the CPU supports AVX2 and F16C (checked just above).
            #[cfg(target_arch = "x86_64")]
            unsafe {
                super::act_x86::quantize_rows_avx2(xs, &mut act, kind)
            };
        } else {
            quantize_rows(xs, &mut act, kind);
        }
        act
    }

    /// Adds the sums beside the quants that `extras` asks for (each a pass over them).
    pub(super) fn add(&mut self, extras: Extras) {
        #[cfg(target_arch = "x86_64")]
        let simd = is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        let simd = false;
        if extras.gsum {
            self.gsum = group_sums(&self.qs, simd);
        }
        if extras.lane_bias {
            self.lane_bias = match self.qk {
                QK => lane_biases(&self.qs, QK, 16, simd),
                _ => lane_biases(&self.qs, super::act_k::BSUM_LEN, 32, simd),
            };
        }
        if extras.abs {
            self.abs = self.qs.iter().map(|q| q.unsigned_abs()).collect();
        }
        if extras.exact_sums {
            for ((s, d), sum) in self.s.iter_mut().zip(&self.d).zip(&self.sum) {
                *s = d * *sum as f32;
            }
        }
    }

    /// Quantises each chunk of rows on its own, with `extras`, the chunks spread over the threads.
    pub(super) fn quantize_chunks(
        xs: &[f32],
        (k, kind, extras): (usize, ActKind, Extras),
        (chunks, threads): (usize, usize),
        rows_of: impl Fn(usize) -> std::ops::Range<usize> + Sync,
    ) -> Vec<Act> {
        let chunk = |c: usize| {
            let rows = rows_of(c);
            let mut act = Self::quantize(&xs[rows.start * k..rows.end * k], rows.len(), k, kind);
            act.add(extras);
            act
        };
        if chunks == 1 {
            return vec![chunk(0)];
        }
        let slots: Vec<OnceLock<Act>> = (0..chunks).map(|_| OnceLock::new()).collect();
        super::pool::parallel_for(chunks, threads, |c| {
            let _ = slots[c].set(chunk(c));
        });
        slots
            .into_iter()
            .map(|s| s.into_inner().expect("every chunk quantised"))
            .collect()
    }

    /// The `qk` quants of row `c`, block `b`.
    #[inline(always)]
    pub fn block(&self, c: usize, b: usize) -> &[i8] {
        &self.qs[(c * self.nb + b) * self.qk..][..self.qk]
    }
}

/// `sum(q)` of each 4 quants; `simd` (AVX2 detected) runs the same loop compiled for AVX2.
fn group_sums(qs: &[i8], simd: bool) -> Vec<i32> {
    #[inline(always)]
    fn sums(qs: &[i8]) -> Vec<i32> {
        qs.chunks_exact(4)
            .map(|g| g.iter().map(|&q| q as i32).sum())
            .collect()
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn sums_avx2(qs: &[i8]) -> Vec<i32> {
        sums(qs)
    }
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is true only where AVX2 was detected (`quantize_with`).
        return unsafe { sums_avx2(qs) };
    }
    let _ = simd;
    sums(qs)
}

/// `Act::lane_bias`: for each `len` quants of `qs` (16 or 32), `times` the sum of its values `4g, 4g + 1`
/// and of its values `4g + 2, 4g + 3`; `simd` (AVX2 detected) in vector steps
/// (`act_x86::lane_biases`, the same values).
pub(super) fn lane_biases(qs: &[i8], len: usize, times: i16, simd: bool) -> Vec<[i16; 2]> {
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: `simd` is true only where AVX2 was detected (`Act::add`; the test checks first).
        return unsafe { super::act_x86::lane_biases(qs, len, times) };
    }
    let _ = simd;
    let lane = |q: &[i8], p: usize| -> i16 {
        let sum: i32 = q
            .chunks_exact(4)
            .map(|g| g[2 * p] as i32 + g[2 * p + 1] as i32)
            .sum();
        (times as i32 * sum)
            .try_into()
            .expect("a lane's bias fits i16")
    };
    qs.chunks_exact(len)
        .map(|q| [lane(q, 0), lane(q, 1)])
        .collect()
}

#[inline(always)]
fn quantize_rows(xs: &[f32], act: &mut Act, kind: ActKind) {
    quantize_blocks(xs, act);
    round_scales(act, kind, 0);
}

/// Quants, `sum(q)` and the unrounded `d` of every block (`d` is rounded to f16 afterwards: the
/// quants use the unrounded `1/d`, as candle's do).
#[inline(always)]
fn quantize_blocks(xs: &[f32], act: &mut Act) {
    let blocks = xs.chunks_exact(QK).zip(act.qs.chunks_exact_mut(QK));
    for (i, (x, q)) in blocks.enumerate() {
        (act.d[i], act.sum[i]) = quantize_block(x.try_into().unwrap(), q.try_into().unwrap());
    }
}

/// Rounds `d` to f16 and sets candle's `s = f16(f16(sum) * d)` for blocks `from..`.
pub(super) fn round_scales(act: &mut Act, kind: ActKind, from: usize) {
    for i in from..act.d.len() {
        let d = f16::from_f32(act.d[i]);
        act.d[i] = d.to_f32();
        if kind == ActKind::Q8_1 {
            act.s[i] = (f16::from_f32(act.sum[i] as f32) * d).to_f32();
        }
    }
}

/// candle's `quantize_row_q8_0/q8_1`: `d = amax/127`, `q = round(x * (1/d))` (ties away from zero).
#[inline(always)]
fn quantize_block(x: &[f32; QK], q: &mut [i8; QK]) -> (f32, i32) {
    // amax over |x| as integer bits (monotonic for non-NaN floats), so it vectorises; NaN bits are
    // skipped, as `f32::max` skips NaN in candle's fold.
    let amax_bits = x.iter().fold(0u32, |a, &v| {
        let b = v.to_bits() & 0x7FFF_FFFF;
        if b > 0x7F80_0000 {
            a
        } else {
            a.max(b)
        }
    });
    let d = f32::from_bits(amax_bits) / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut sum = 0;
    for (q, &v) in q.iter_mut().zip(x) {
        // `f32::round(v * id) as i8` without the libm call, so the loop vectorises: truncate, then
        // step away from zero when the (exact) fraction is at least one half. NaN gives 0 either way.
        let v = v * id;
        let t = v as i32;
        let frac = v - t as f32;
        let r = (t + (frac >= 0.5) as i32 - (frac <= -0.5) as i32).clamp(-128, 127);
        *q = r as i8;
        sum += r;
    }
    (d, sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    /// A dropped `Act`'s buffers serve the next one on the thread, and what they held before never
    /// shows: the quants equal those of a thread with no spare.
    #[test]
    fn a_spare_is_reused_and_leaves_nothing_behind() {
        let big: Vec<f32> = (0..4 * 96).map(|i| (i % 13) as f32 - 6.0).collect();
        let small: Vec<f32> = (0..96).map(|i| ((i * 7) % 11) as f32 * 0.1).collect();
        let parts = |a: &Act| (a.qs.clone(), a.d.clone(), a.s.clone(), a.sum.clone());
        let first = Act::quantize(&big, 4, 96, ActKind::Q8_1);
        let at = first.qs.as_ptr();
        drop(first);
        let again = Act::quantize(&small, 1, 96, ActKind::Q8_1);
        assert_eq!(again.qs.as_ptr(), at, "the spare's buffer");
        let fresh = std::thread::spawn(move || parts(&Act::quantize(&small, 1, 96, ActKind::Q8_1)));
        assert_eq!(fresh.join().unwrap(), parts(&again));
    }

    /// Our quants must be byte-identical to candle's `quantize_row_q8_1` / `q8_0`, on both code paths.
    #[test]
    fn matches_candle_bit_for_bit() {
        let xs: Vec<f32> = (0..5 * 96)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.013)
            .collect();
        let mut with_specials = xs.clone();
        with_specials[..32].fill(0.0); // d = 0
        with_specials[40] = 0.5 * with_specials[41]; // likely ties
        with_specials[70] = f32::NAN; // skipped by amax, quantised to 0
                                      // amax 127 makes d = 1: exact ties at +-0.5, +-2.5, ... (round half away from zero)
        for (j, x) in with_specials[96..128].iter_mut().enumerate() {
            *x = if j == 0 {
                127.0
            } else {
                (j as f32 - 16.0) * 1.5 + 0.5
            };
        }
        for xs in [xs, with_specials] {
            let t = Tensor::from_vec(xs.clone(), (5, 96), &Device::Cpu).unwrap();
            let cases = [
                (ActKind::Q8_1, GgmlDType::Q8_1, 36),
                (ActKind::Q8_0, GgmlDType::Q8_0, 34),
            ];
            for (kind, dtype, bytes) in cases {
                let theirs = QTensor::quantize(&t, dtype)
                    .unwrap()
                    .data()
                    .unwrap()
                    .into_owned();
                for simd in [false, true] {
                    let ours = Act::quantize_with(&xs, 5, 96, kind, simd);
                    check(&ours, &theirs, bytes, kind);
                }
            }
        }
    }

    fn check(ours: &Act, theirs: &[u8], bytes: usize, kind: ActKind) {
        for (i, block) in theirs.chunks_exact(bytes).enumerate() {
            let f16_at = |at: usize| f16::from_le_bytes([block[at], block[at + 1]]).to_f32();
            assert_eq!(ours.d[i], f16_at(0), "d of block {i}");
            if kind == ActKind::Q8_1 {
                assert_eq!(ours.s[i], f16_at(2), "s of block {i}");
            }
            let qs: Vec<i8> = block[bytes - 32..].iter().map(|&b| b as i8).collect();
            assert_eq!(&ours.qs[i * 32..][..32], &qs[..], "quants of block {i}");
            assert_eq!(ours.sum[i], qs.iter().map(|&q| q as i32).sum::<i32>());
        }
    }

    /// The AVX2 lane biases are the portable ones, for both block lengths, at the quants' extremes.
    #[test]
    fn lane_biases_are_the_same_on_both_paths() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        let mut qs: Vec<i8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8 as i8)
            .collect();
        qs[..32].fill(127);
        qs[32..64].fill(-127);
        qs[64..96].fill(-128);
        for (len, times) in [(32, 16), (16, 32)] {
            let portable = lane_biases(&qs, len, times, false);
            assert_eq!(portable.len(), qs.len() / len);
            assert_eq!(portable[0][0], times * 127 * (len as i16 / 2));
            assert_eq!(lane_biases(&qs, len, times, true), portable, "{len}");
        }
    }
}
