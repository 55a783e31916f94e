//! Q5_0's two tile forms (unpacked to signed bytes, kept at 5 bits) give candle's bits on every kernel
//! set, on any machine: `QMatrix::from_rows` picks one form by the best ISA, so a test through it
//! would cover only that machine's form. From 8 rows the 5-bit form is unpacked to its unsigned bytes
//! (`TileQ5_0U`) for the chunk: the third form, covered here by the larger row counts.

use super::layout::{pack_q5_0, pack_q5_0_packed, Tiles};
use super::{Isa, QMatrix};
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Tensor};

fn values(n: usize, seed: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.5 - 1.0) * scale)
        .collect()
}

#[test]
fn both_forms_give_candles_bits_on_every_kernel_set() {
    // 48 outputs (three tiles) by 8 blocks (candle wants an even count); weights at their extremes
    // too (q = 0 and 31).
    let (n, k) = (48, 256);
    let mut w = values(n * k, 3, 0.05);
    w[5] = 1.0;
    w[k + 9] = -1.0;
    // 1..=9 rows cover every kernel width and remainder; 8 and up the 5-bit form's unsigned unpacking;
    // 64 and 70 the prefill chunks.
    assert_every_form_matches_candle(w, n, k, &[1, 2, 3, 4, 5, 7, 8, 9, 64, 70], |rows| {
        let mut xs = values(rows * k, rows, 2.0);
        xs[1] = 50.0; // a block whose largest quant is +127, and one at -127
        let last = xs.len() - 1;
        xs[k.min(last)] = -50.0;
        xs
    });
}

/// The largest dots a block can have: weights all at `q = -16` (a row of one value, either sign)
/// or at +15 against -16, times activations all at -127 or +127, where the AVX2 kernel's i16 lanes
/// end at +-32512 (`Act::lane_bias`).
#[test]
fn both_forms_give_candles_bits_at_the_largest_dots() {
    let (n, k) = (16, 64);
    let w: Vec<f32> = (0..n * k)
        .map(|i| match i / k {
            0 => 0.5,
            1 => -0.5,
            2 => [0.5, -0.5][i % 2],
            r => r as f32 * 0.01 * [1.0, -1.0][i % 3 % 2],
        })
        .collect();
    assert_every_form_matches_candle(w, n, k, &[1, 2, 4, 8, 9], |rows| {
        (0..rows * k)
            .map(|i| match i / k % 3 {
                0 => -1.0,
                1 => 1.0,
                _ => [1.0, -1.0][i % 2],
            })
            .collect()
    });
}

/// `w` (`n x k`) quantised to Q5_0, in each tile form and on every kernel set, times `xs(rows)` for
/// each row count, gives candle's `QMatMul` bits.
fn assert_every_form_matches_candle(
    w: Vec<f32>,
    n: usize,
    k: usize,
    row_counts: &[usize],
    xs: impl Fn(usize) -> Vec<f32>,
) {
    let w = Tensor::from_vec(w, (n, k), &Device::Cpu).unwrap();
    let q = QTensor::quantize(&w, GgmlDType::Q5_0).unwrap();
    let raw = q.data().unwrap().into_owned();
    let forms = [
        (
            "unpacked",
            QMatrix::from_tiles(n, k, Tiles::Q5_0(pack_q5_0(&raw, n, k))),
        ),
        (
            "5-bit",
            QMatrix::from_tiles(n, k, Tiles::Q5_0P(pack_q5_0_packed(&raw, n, k))),
        ),
    ];
    let candle = QMatMul::from_qtensor(q).unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for &rows in row_counts {
        let xs = xs(rows);
        let x = Tensor::from_vec(xs.clone(), (rows, k), &Device::Cpu).unwrap();
        let want = candle.forward(&x).unwrap().flatten_all().unwrap();
        let want = bits(&want.to_vec1::<f32>().unwrap());
        for (name, m) in &forms {
            for isa in Isa::all() {
                let got = m.matmul(&xs, rows, isa);
                assert_eq!(bits(&got), want, "{name} form, {isa:?}, {rows} rows");
            }
        }
    }
}
