//! Activation rows quantised to 8 bits once per matmul, bit for bit as candle's `QMatMul` does it.
//!
//! Q8_1 block (paired with Q4_1 weights): f16 `d = amax/127`, 32 signed bytes `q = round(x/d)`, and
//! `s = d * sum(q)` (candle rounds `sum(q)` and the product to f16). Then for a Q4_1 weight block
//! `sum_j (dw*qw_j + mw) * (d*q_j) = dw*d * sum_j(qw_j*q_j) + mw*s`: one integer dot and two scalings.
//! Q8_0 is the same block without `s`; paired with Q8_0 weights, the dot is `dw*d * sum_j(qw_j*q_j)`.
//! Matching candle exactly means the fast path differs from the exact one only in float summation order.

use super::layout::QK;
use half::f16;

/// Which activation block a weight type pairs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActKind {
    Q8_1,
    Q8_0,
}

/// `m` rows of `k` activations, quantised in blocks of 32; row `c`, block `b` is index `c * nb + b`.
pub struct Act {
    pub m: usize,
    pub nb: usize,
    /// `m * k` quants.
    pub qs: Vec<i8>,
    /// Block scales `d` (f16-rounded, as f32).
    pub d: Vec<f32>,
    /// Q8_1 only: `s = d * sum(q)` as candle rounds it (f16, as f32); zero for Q8_0.
    pub s: Vec<f32>,
    /// `sum(q)` per block: lets a kernel use unsigned weights (`q + 128`) and subtract `128 * sum`.
    pub sum: Vec<i32>,
}

impl Act {
    pub fn quantize(xs: &[f32], m: usize, k: usize, kind: ActKind) -> Act {
        assert!(k % QK == 0 && xs.len() == m * k);
        let nb = k / QK;
        let mut act = Act {
            m,
            nb,
            qs: vec![0; m * k],
            d: vec![0.0; m * nb],
            s: vec![0.0; m * nb],
            sum: vec![0; m * nb],
        };
        let blocks = xs.chunks_exact(QK).zip(act.qs.chunks_exact_mut(QK));
        for (i, (x, q)) in blocks.enumerate() {
            let (d, sum) = quantize_block(x, q.try_into().unwrap());
            act.d[i] = d.to_f32();
            act.sum[i] = sum;
            if kind == ActKind::Q8_1 {
                // candle: `f16::from_f32(sum as f32) * d`, an f16 product.
                act.s[i] = (f16::from_f32(sum as f32) * d).to_f32();
            }
        }
        act
    }

    /// The 32 quants of row `c`, block `b`.
    #[inline(always)]
    pub fn block(&self, c: usize, b: usize) -> &[i8] {
        &self.qs[(c * self.nb + b) * QK..][..QK]
    }
}

/// candle's `quantize_row_q8_0/q8_1`: `d = amax/127`, `q = round(x * (1/d))` (ties away from zero).
fn quantize_block(x: &[f32], q: &mut [i8; QK]) -> (f16, i32) {
    let amax = x.iter().fold(0f32, |a, &v| a.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut sum = 0;
    for (q, &v) in q.iter_mut().zip(x) {
        *q = f32::round(v * id) as i8;
        sum += *q as i32;
    }
    (f16::from_f32(d), sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    /// Our quants must be byte-identical to candle's `quantize_row_q8_1` / `q8_0`.
    #[test]
    fn matches_candle_bit_for_bit() {
        let xs: Vec<f32> = (0..4 * 96)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.013)
            .collect();
        let mut xs_with_zero_block = xs.clone();
        xs_with_zero_block[..32].fill(0.0);
        for xs in [xs, xs_with_zero_block] {
            let t = Tensor::from_vec(xs.clone(), (4, 96), &Device::Cpu).unwrap();
            for (kind, dtype, bytes) in [
                (ActKind::Q8_1, GgmlDType::Q8_1, 36),
                (ActKind::Q8_0, GgmlDType::Q8_0, 34),
            ] {
                let ours = Act::quantize(&xs, 4, 96, kind);
                let theirs = QTensor::quantize(&t, dtype)
                    .unwrap()
                    .data()
                    .unwrap()
                    .into_owned();
                for (i, block) in theirs.chunks_exact(bytes).enumerate() {
                    let f16_at =
                        |at: usize| f16::from_le_bytes([block[at], block[at + 1]]).to_f32();
                    assert_eq!(ours.d[i], f16_at(0), "d of block {i}");
                    if kind == ActKind::Q8_1 {
                        assert_eq!(ours.s[i], f16_at(2), "s of block {i}");
                    }
                    let qs: Vec<i8> = block[bytes - 32..].iter().map(|&b| b as i8).collect();
                    assert_eq!(&ours.qs[i * 32..][..32], &qs[..], "quants of block {i}");
                    assert_eq!(ours.sum[i], qs.iter().map(|&q| q as i32).sum::<i32>());
                }
            }
        }
    }
}
