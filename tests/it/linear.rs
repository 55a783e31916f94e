//! `Linear`'s fast path against the exact one (candle's `QMatMul`), on random and real weights.
//!
//! Expected agreement: both paths quantise activations identically (bit for bit, see `quant::act`),
//! compute the same exact integer block dots, and the fast kernels replay candle's float operations
//! in candle's order (see `quant::scalar`). So the outputs are bit-identical: for Q4_1 and Q5_0 always,
//! for Q8_0, Q4_K and Q6_K where candle uses its AVX2 kernels (x86 with AVX2+FMA). Elsewhere those
//! differ only in the order of partial sums, and we allow `1e-5 * max|y|` (about 80 ulps at the
//! output's scale).
//! Bit-identity matters beyond neatness: a model re-quantises activations at every layer, so a 1-ulp
//! difference can flip a rounding and grow through 30 layers into visibly different probabilities.

use crate::support;

use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use nexttoken::engine::forward::linear::{Linear, MatmulPath, Stack};
use nexttoken::engine::forward::quant::Isa;
use support::lcg::Lcg;

/// Deterministic values in roughly N(0, scale): a 64-bit LCG summed over 4 uniforms.
fn values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut g = Lcg::stepped(seed);
    (0..n)
        .map(|_| scale * 1.7 * (0..4).map(|_| g.unit() - 0.5).sum::<f32>())
        .collect()
}

fn quantized(n: usize, k: usize, dtype: GgmlDType, seed: u64) -> QTensor {
    let w = Tensor::from_vec(values(n * k, seed, 0.05), (n, k), &Device::Cpu).unwrap();
    QTensor::quantize(&w, dtype).unwrap()
}

fn copy(w: &QTensor) -> QTensor {
    let data = w.data().unwrap().into_owned();
    let storage = candle_core::quantized::QStorage::from_data(data.into(), &Device::Cpu, w.dtype());
    QTensor::new(storage.unwrap(), w.shape().clone()).unwrap()
}

fn input(rows: usize, k: usize, seed: u64) -> Tensor {
    Tensor::from_vec(values(rows * k, seed, 1.0), (rows, k), &Device::Cpu).unwrap()
}

fn max_abs(t: &Tensor) -> f32 {
    t.abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_scalar()
        .unwrap()
}

/// Runs both paths on `rows` input rows; asserts they agree and returns (max |diff|, max |y|).
fn check(w: &QTensor, rows: usize, seed: u64) -> (f32, f32) {
    let exact = Linear::new(copy(w), MatmulPath::Exact).unwrap();
    let fast = Linear::new(copy(w), MatmulPath::Fast).unwrap();
    let xs = input(rows, exact.in_dim(), seed);
    let want = exact.forward(&xs).unwrap();
    let got = fast.forward(&xs).unwrap();
    assert_eq!(got.dims(), want.dims());
    let (diff, scale) = (max_abs(&(&got - &want).unwrap()), max_abs(&want));
    if bit_identical(w.dtype()) {
        assert_eq!(
            bits(&got),
            bits(&want),
            "{:?} rows={rows}: max diff {diff}",
            w.dtype()
        );
    } else {
        assert!(
            diff <= 1e-5 * scale,
            "{:?} rows={rows}: {diff} at {scale}",
            w.dtype()
        );
    }
    (diff, scale)
}

fn bit_identical(dtype: GgmlDType) -> bool {
    #[cfg(target_arch = "x86_64")]
    let candle_is_avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
    #[cfg(not(target_arch = "x86_64"))]
    let candle_is_avx2 = false;
    matches!(dtype, GgmlDType::Q4_1 | GgmlDType::Q5_0) || candle_is_avx2
}

fn bits(t: &Tensor) -> Vec<u32> {
    let v = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    v.iter().map(|x| x.to_bits()).collect()
}

/// Shapes: `k` keeps an even number of blocks, which candle's Q4_1 dot asserts in debug builds.
#[test]
fn fast_matches_exact_on_random_weights() {
    for dtype in [GgmlDType::Q4_1, GgmlDType::Q8_0, GgmlDType::Q5_0] {
        for (n, k) in [(48, 64), (40, 128), (576, 576)] {
            let w = quantized(n, k, dtype, n as u64 + k as u64);
            for rows in [1, 7, 64] {
                check(&w, rows, rows as u64);
            }
        }
    }
}

/// A Q4_0 matrix (what a re-quantised `q4_0` draft or model B holds) runs in Q4_1 tiles with
/// m = −8d: it had no kernel and ran through candle, a q4_0 draft pass costing 4x a plain step of the
/// Q4_1 model it was made from (`bench --draft q4_0`: 1.1x now). Its weights are the same values
/// (`tiled_rows_read_back_the_files_rows_bit_for_bit`); the products are candle's Q4_0 ones up to the
/// order of the float sums (candle: d_w·d_a·Σ(q−8)q_a; the Q4_1 kernel: d_w·d_a·Σq·q_a − 8d_w·s_a, with
/// the activations' s = d_a·Σq_a exact, where candle's Q8_1 rounds it to f16: 2.9e-4 of the output),
/// and every kernel set gives the bits of the others (`every_kernel_set_gives_identical_bits`).
#[test]
fn a_q4_0_matrix_runs_in_q4_1_tiles_with_candles_values() {
    use nexttoken::engine::forward::quant::QMatrix;
    let (n, k) = (80, 192);
    let w = quantized(n, k, GgmlDType::Q4_0, 21);
    assert!(QMatrix::from_qtensor(&w).unwrap().is_some(), "tiled");
    let fast = Linear::new(copy(&w), MatmulPath::Fast).unwrap();
    let exact = Linear::new(copy(&w), MatmulPath::Exact).unwrap();
    assert!(fast.fast_bytes() > 0 && exact.fast_bytes() == 0);
    for rows in [1, 3, 64] {
        let xs = input(rows, k, 40 + rows as u64);
        let got = fast.forward(&xs).unwrap();
        let want = exact.forward(&xs).unwrap();
        let (diff, scale) = (max_abs(&(&got - &want).unwrap()), max_abs(&want));
        assert!(scale > 0.1, "outputs too small to compare ({scale})");
        assert!(diff <= 1e-5 * scale, "{rows} rows: {diff} at {scale}");
    }
}

#[test]
fn batched_input_keeps_its_shape() {
    let w = quantized(64, 128, GgmlDType::Q4_1, 3);
    let fast = Linear::new(copy(&w), MatmulPath::Fast).unwrap();
    let exact = Linear::new(w, MatmulPath::Exact).unwrap();
    let xs = input(2 * 5, 128, 9).reshape((2, 5, 128)).unwrap();
    let (got, want) = (fast.forward(&xs).unwrap(), exact.forward(&xs).unwrap());
    assert_eq!(got.dims(), &[2, 5, 64]);
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn every_kernel_set_gives_identical_bits() {
    let cases = [
        (GgmlDType::Q4_0, 192),
        (GgmlDType::Q4_1, 192),
        (GgmlDType::Q8_0, 192),
        (GgmlDType::Q5_0, 192),
        (GgmlDType::Q4K, 512),
        (GgmlDType::Q6K, 512),
    ];
    for (dtype, k) in cases {
        let w = quantized(80, k, dtype, 11);
        for rows in [1, 3, 7, 64, 70] {
            let xs = input(rows, k, 5);
            let run = |isa| {
                let lin = Linear::new(copy(&w), MatmulPath::Fast)
                    .unwrap()
                    .with_isa(isa);
                lin.forward(&xs)
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap()
            };
            let reference = run(Isa::Scalar);
            assert!(Isa::all().contains(&Isa::best()));
            for isa in Isa::all() {
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&run(isa)),
                    bits(&reference),
                    "{isa:?} {dtype:?} rows={rows}"
                );
            }
        }
    }
}

#[test]
fn f32_weights_pass_through() {
    let w = Tensor::from_vec(values(32 * 40, 1, 0.1), (32, 40), &Device::Cpu).unwrap();
    let q = || QTensor::quantize(&w, GgmlDType::F32).unwrap();
    let (fast, exact) = (
        Linear::new(q(), MatmulPath::Fast).unwrap(),
        Linear::new(q(), MatmulPath::Exact).unwrap(),
    );
    let xs = input(3, 40, 2);
    let (got, want) = (fast.forward(&xs).unwrap(), exact.forward(&xs).unwrap());
    assert_eq!(max_abs(&(&got - &want).unwrap()), 0.0);
    assert_eq!(fast.fast_bytes(), 0);
}

#[test]
fn fast_matches_exact_on_real_weights() {
    let mut file = std::fs::File::open(support::real_model()).unwrap();
    let content = gguf_file::Content::read(&mut file).unwrap();
    let names = [
        "blk.0.attn_q.weight",
        "blk.0.attn_k.weight",
        "blk.0.attn_v.weight",
        "blk.0.attn_output.weight",
        "blk.5.ffn_gate.weight",
        "blk.5.ffn_up.weight",
        "blk.29.ffn_down.weight",
        "token_embd.weight",
    ];
    for name in names {
        let w = content.tensor(&mut file, name, &Device::Cpu).unwrap();
        for rows in [1, 7, 64] {
            let (diff, scale) = check(&w, rows, 17);
            eprintln!(
                "{name} {:?} rows={rows}: max diff {diff:.3e}, max |y| {scale:.3}",
                w.dtype()
            );
        }
    }
}

/// Gemma 3's Q5_0 matrices (q, k, gate, up; 640 wide) and its Q8_0 embedding, fast against exact.
#[test]
fn fast_matches_exact_on_gemma_weights() {
    let mut file = std::fs::File::open(support::gemma_model()).unwrap();
    let content = gguf_file::Content::read(&mut file).unwrap();
    for name in [
        "blk.0.attn_q.weight",
        "blk.3.attn_k.weight",
        "blk.7.ffn_gate.weight",
        "blk.17.ffn_up.weight",
    ] {
        let w = content.tensor(&mut file, name, &Device::Cpu).unwrap();
        assert_eq!(w.dtype(), GgmlDType::Q5_0, "{name}");
        for rows in [1, 7, 64] {
            check(&w, rows, 23);
        }
    }
}

#[test]
fn strided_and_bf16_inputs_match_exact() {
    let w = quantized(48, 64, GgmlDType::Q4_1, 21);
    let fast = Linear::new(copy(&w), MatmulPath::Fast).unwrap();
    let exact = Linear::new(w, MatmulPath::Exact).unwrap();
    // A transposed view: not contiguous, so `forward` copies it first.
    let xs = input(64, 5, 4).t().unwrap();
    assert!(!xs.is_contiguous());
    let want = exact.forward(&xs.contiguous().unwrap()).unwrap();
    assert_eq!(bits(&fast.forward(&xs).unwrap()), bits(&want));
    let xs = input(3, 64, 8).to_dtype(candle_core::DType::BF16).unwrap();
    let (got, want) = (fast.forward(&xs).unwrap(), exact.forward(&xs).unwrap());
    assert_eq!(got.dtype(), candle_core::DType::BF16);
    let as_f32 = |t: &Tensor| t.to_dtype(candle_core::DType::F32).unwrap();
    assert_eq!(bits(&as_f32(&got)), bits(&as_f32(&want)));
}

/// Row independence: a row's output is the same bits whether it is multiplied alone (decode) or among
/// others (prefill), on every kernel set and on the exact path (for Q6_K the exact path hands candle
/// a lone row twice: see `Linear::forward`). The activation rows are quantised one by
/// one and each output is a per-block sum in block order, so the rows taken 1, 2, 4 or 8 at a time by a
/// kernel, or split over threads (64 and 70 rows of the 576-wide matrix cross the threading threshold),
/// cannot change it. This is what lets the KV cache leave the numbers alone.
#[test]
fn each_row_is_independent_of_the_others() {
    let cases = [
        (GgmlDType::Q4_1, [(80, 192), (576, 576)]),
        (GgmlDType::Q8_0, [(80, 192), (576, 576)]),
        (GgmlDType::Q5_0, [(80, 192), (576, 576)]),
        (GgmlDType::Q4K, [(80, 512), (640, 1024)]),
        (GgmlDType::Q6K, [(80, 512), (640, 1024)]),
    ];
    for (dtype, shapes) in cases {
        for (n, k) in shapes {
            let w = quantized(n, k, dtype, 5);
            let mut paths: Vec<(String, Linear)> = Isa::all()
                .into_iter()
                .map(|isa| {
                    let lin = Linear::new(copy(&w), MatmulPath::Fast).unwrap();
                    (format!("{isa:?}"), lin.with_isa(isa))
                })
                .collect();
            paths.push((
                "Exact".into(),
                Linear::new(copy(&w), MatmulPath::Exact).unwrap(),
            ));
            for m in [1, 2, 3, 5, 8, 13, 64, 70] {
                let xs = input(m, k, m as u64 + 40);
                for (name, lin) in &paths {
                    let all = bits(&lin.forward(&xs).unwrap());
                    for r in 0..m {
                        let alone = lin.forward(&xs.narrow(0, r, 1).unwrap()).unwrap();
                        assert_eq!(
                            bits(&alone),
                            all[r * n..(r + 1) * n],
                            "{name} {dtype:?} [{n}, {k}]: row {r} of {m}"
                        );
                    }
                }
            }
        }
    }
}

/// Q8_0 weights of -128 (which llama.cpp's quantiser never writes, but a file may hold): the AVX2
/// kernel's faster form would overflow flipping their sign, so such a matrix keeps the other form;
/// on every kernel set the bits are still candle's where candle runs its AVX2 kernels.
#[test]
fn q8_0_weights_of_minus_128_keep_their_sign() {
    let (n, k) = (32, 64);
    let mut g = Lcg::stepped(7);
    let mut raw = Vec::new();
    for i in 0..n * k / 32 {
        raw.extend_from_slice(
            &half::f16::from_f32(0.01 + 0.001 * i as f32)
                .to_bits()
                .to_le_bytes(),
        );
        for j in 0..32 {
            let q = match (i + j) % 5 {
                0 => -128,
                _ => (g.unit() * 255.0 - 127.5) as i8,
            };
            raw.push(q as u8);
        }
    }
    let storage = candle_core::quantized::QStorage::from_data(
        std::borrow::Cow::Owned(raw),
        &Device::Cpu,
        GgmlDType::Q8_0,
    )
    .unwrap();
    let q = QTensor::new(storage, (n, k)).unwrap();
    for rows in [1, 3, 8] {
        every_kernel_set_matches_exact(&q, &input(rows, k, 40 + rows as u64));
    }
}

/// `q` times `xs` on every kernel set against the exact path: candle's bits where candle runs its
/// AVX2 kernels (`bit_identical`), else within `1e-5 * max|y|`.
fn every_kernel_set_matches_exact(q: &QTensor, xs: &Tensor) {
    let want = Linear::new(copy(q), MatmulPath::Exact)
        .unwrap()
        .forward(xs)
        .unwrap();
    for isa in Isa::all() {
        let fast = Linear::new(copy(q), MatmulPath::Fast)
            .unwrap()
            .with_isa(isa);
        let got = fast.forward(xs).unwrap();
        let (dtype, rows) = (q.dtype(), xs.dims()[0]);
        match bit_identical(dtype) {
            true => assert_eq!(bits(&got), bits(&want), "{dtype:?} {isa:?} rows={rows}"),
            false => assert!(
                max_abs(&(&got - &want).unwrap()) <= 1e-5 * max_abs(&want),
                "{dtype:?} {isa:?} rows={rows}"
            ),
        }
    }
}

/// The largest dots a sub-block can have: rows of one value (either sign) and of alternating signs,
/// the weights at the ends of their ranges, times activations all at -127, all at +127 and
/// alternating, where the AVX2 Q6_K kernel's i16 lanes end at +-32512 (`Act::lane_bias`); on every
/// kernel set, candle's bits where candle runs its AVX2 kernels.
#[test]
fn k_quants_at_their_largest_dots_match_candle() {
    let (n, k) = (32, 512);
    let sign = |i: usize| [1.0, -1.0][i % 2];
    let w: Vec<f32> = (0..n * k)
        .map(|i| match i / k {
            0 => 0.5,
            1 => -0.5,
            2 => 0.5 * sign(i),
            r => 0.01 * r as f32 * sign(i % 3),
        })
        .collect();
    let w = Tensor::from_vec(w, (n, k), &Device::Cpu).unwrap();
    for dtype in [GgmlDType::Q4K, GgmlDType::Q6K] {
        let q = QTensor::quantize(&w, dtype).unwrap();
        for rows in [1, 4, 9] {
            let xs: Vec<f32> = (0..rows * k)
                .map(|i| [-1.0, 1.0, sign(i)][i / k % 3])
                .collect();
            every_kernel_set_matches_exact(
                &q,
                &Tensor::from_vec(xs, (rows, k), &Device::Cpu).unwrap(),
            );
        }
    }
}

/// Q4_K and Q6_K through the tiled kernels: every shape with whole 16-row tiles (as in every model we
/// load) is tiled and gives candle's bits for 1, a few and many rows (70 rows of the 640-wide matrices
/// go over two threads); with a partial last tile the matrix stays with candle, so the bits are still
/// its own.
#[test]
fn fast_matches_exact_on_random_k_quants() {
    for dtype in [GgmlDType::Q4K, GgmlDType::Q6K] {
        for (n, k) in [
            (16, 256),
            (48, 512),
            (640, 1024),
            (640, 2048),
            (40, 256),
            (7, 512),
        ] {
            let w = quantized(n, k, dtype, n as u64 * 3 + k as u64);
            let tiled = Linear::new(copy(&w), MatmulPath::Fast)
                .unwrap()
                .fast_bytes()
                > 0;
            assert_eq!(tiled, n % 16 == 0, "{dtype:?} [{n}, {k}]");
            for rows in [1, 2, 7, 64, 70] {
                check(&w, rows, rows as u64 + 100);
            }
        }
    }
}

/// Gemma 3's Q4_K matrices (attention output, most FFN down) and Q6_K ones (the other FFN down), fast
/// against exact: tiled, and the same bits.
#[test]
fn fast_matches_exact_on_gemma_k_quants() {
    let mut file = std::fs::File::open(support::gemma_model()).unwrap();
    let content = gguf_file::Content::read(&mut file).unwrap();
    for (name, dtype) in [
        ("blk.0.attn_output.weight", GgmlDType::Q4K),
        ("blk.2.ffn_down.weight", GgmlDType::Q4K),
        ("blk.0.ffn_down.weight", GgmlDType::Q6K),
        ("blk.17.ffn_down.weight", GgmlDType::Q6K),
    ] {
        let w = content.tensor(&mut file, name, &Device::Cpu).unwrap();
        assert_eq!(w.dtype(), dtype, "{name}");
        assert!(
            Linear::new(copy(&w), MatmulPath::Fast)
                .unwrap()
                .fast_bytes()
                > 0
        );
        for rows in [1, 7, 64] {
            check(&w, rows, 29);
        }
    }
}

/// Types without a tiled kernel (Q5_K, F16) run through candle on both paths, and every K-quant we
/// tile or not is still the matrix it stands for: the product is close to the one with the weights
/// dequantised to f32 (the gap is the 8-bit rounding of the activations and, for F16, f16 products).
#[test]
fn untiled_types_pass_through_and_every_type_is_near_the_f32_product() {
    let (n, k) = (48, 512);
    let xs = input(5, k, 77);
    for dtype in [
        GgmlDType::Q5K,
        GgmlDType::F16,
        GgmlDType::Q4K,
        GgmlDType::Q6K,
    ] {
        let w = quantized(n, k, dtype, 31);
        let fast = Linear::new(copy(&w), MatmulPath::Fast).unwrap();
        let exact = Linear::new(copy(&w), MatmulPath::Exact).unwrap();
        let got = fast.forward(&xs).unwrap();
        assert_eq!(bits(&got), bits(&exact.forward(&xs).unwrap()), "{dtype:?}");
        let tiled = matches!(dtype, GgmlDType::Q4K | GgmlDType::Q6K);
        assert_eq!(fast.fast_bytes() > 0, tiled, "{dtype:?}");
        let dense = w.dequantize(&Device::Cpu).unwrap();
        let want = xs.matmul(&dense.t().unwrap()).unwrap();
        let (diff, scale) = (max_abs(&(&got - &want).unwrap()), max_abs(&want));
        assert!(
            scale > 0.1,
            "{dtype:?}: outputs too small to compare ({scale})"
        );
        assert!(diff <= 0.02 * scale, "{dtype:?}: {diff} at {scale}");
        eprintln!("{dtype:?}: max diff {diff:.3e} from the f32 product, max |y| {scale:.3}");
    }
}

/// The whole Gemma 3 270M on both paths (its Q4_K and Q6_K matrices tiled on the fast one): one prefill
/// gives the same logits bits on both, and on each path one-token steps through the KV cache give the
/// bits of the same positions in that prefill (with Q6_K in the model: see `Linear::forward`).
#[test]
fn gemma_is_the_same_bits_on_both_paths_and_through_the_cache() {
    use nexttoken::engine::forward::model::ForwardOptions;
    let path = support::gemma_model();
    let seq: [u32; 9] = [2, 651, 6037, 529, 8698, 563, 9079, 236761, 107];
    let all = ForwardOptions {
        all_logits: true,
        ..ForwardOptions::default()
    };
    let mut prefills = vec![];
    for matmul in [MatmulPath::Fast, MatmulPath::Exact] {
        let mut m = support::tiny::ours(&path, matmul);
        let full = m.forward(&seq, 0, all).unwrap().logits;
        let vocab = m.vocab_size;
        m.cache.clear();
        support::tiny::logits(&mut m, &seq[..5], 0);
        for (pos, &t) in seq.iter().enumerate().skip(5) {
            let one = support::tiny::logits(&mut m, &[t], pos);
            let want = &full[pos * vocab..][..vocab];
            let same = one
                .iter()
                .zip(want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{matmul:?}: step at {pos} differs from the prefill");
        }
        prefills.push(full);
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(
        bits(&prefills[0]) == bits(&prefills[1]),
        "fast and exact differ"
    );
}

/// q, k and v of one kind stack into one matmul whose outputs are each part's own bits, row by row;
/// parts of mixed kinds (Q4_0 beside Q4_1 among them), or on the exact path, stay separate and give
/// the same outputs.
#[test]
fn a_stack_is_one_matmul_with_each_parts_bits() {
    let k = 256;
    let parts = |dtypes: [GgmlDType; 3], path: MatmulPath| -> (Vec<QTensor>, Stack) {
        let ws: Vec<QTensor> = [(96, 1), (32, 2), (48, 3)]
            .iter()
            .zip(dtypes)
            .map(|(&(n, seed), dt)| quantized(n, k, dt, seed))
            .collect();
        let linears = ws
            .iter()
            .map(|w| Linear::new(copy(w), path).unwrap())
            .collect();
        (ws, Stack::new(linears))
    };
    let rows = 3;
    let xs = input(rows, k, 9)
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    let one = [GgmlDType::Q4_1; 3];
    let mixed = [GgmlDType::Q4_1, GgmlDType::Q8_0, GgmlDType::Q4_1];
    // Q4_0 sits in Q4_1 tiles too, but its activations' sums are taken exact: never one matmul with
    // Q4_1's.
    let q4 = [GgmlDType::Q4_1, GgmlDType::Q4_0, GgmlDType::Q4_1];
    for (dtypes, path, fused) in [
        (one, MatmulPath::Fast, true),
        (mixed, MatmulPath::Fast, false),
        (q4, MatmulPath::Fast, false),
        ([GgmlDType::Q4_0; 3], MatmulPath::Fast, true),
        (one, MatmulPath::Exact, false),
    ] {
        let (ws, stack) = parts(dtypes, path);
        assert_eq!(stack.is_fused(), fused, "{dtypes:?} {path:?}");
        let outs = stack.forward_rows(&xs, rows).unwrap();
        for (w, out) in ws.iter().zip(&outs) {
            let alone = Linear::new(copy(w), path)
                .unwrap()
                .forward_rows(&xs, rows)
                .unwrap();
            let b = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(b(out), b(&alone), "{dtypes:?} {path:?}");
        }
    }
}

/// A row read back from the tiles has the bits of the file's row dequantised by candle: a tied output
/// head's tiles can serve the embedding lookup. The K-quants' tiles have no row reader, and say so.
#[test]
fn tiled_rows_read_back_the_files_rows_bit_for_bit() {
    use nexttoken::engine::forward::quant::QMatrix;
    for dtype in [
        GgmlDType::Q4_0,
        GgmlDType::Q4_1,
        GgmlDType::Q8_0,
        GgmlDType::Q5_0,
    ] {
        // 40 rows: two whole tiles and a part, so the padded last tile is read too.
        let w = quantized(40, 96, dtype, 11);
        let m = QMatrix::from_qtensor(&w).unwrap().unwrap();
        assert!(m.has_rows(), "{dtype:?}");
        let dense = w
            .dequantize(&Device::Cpu)
            .unwrap()
            .to_vec2::<f32>()
            .unwrap();
        for (r, want) in dense.iter().enumerate() {
            let got = m.row(r).unwrap();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            match dtype {
                // Held as Q4_1 with m = −8d: the same values, a zero's sign aside (+0 for −0).
                GgmlDType::Q4_0 => assert_eq!(&got, want, "{dtype:?} row {r}"),
                _ => assert_eq!(bits(&got), bits(want), "{dtype:?} row {r}"),
            }
        }
        assert!(m.row(40).is_none(), "past the last row");
        if dtype == GgmlDType::Q5_0 && Isa::best() != Isa::Avx512Vnni {
            // Kept at 5 bits: 3 row tiles x 3 block columns of 352 bytes, the file's 22 a block.
            assert_eq!(m.size_in_bytes(), 3 * 3 * 16 * 22);
        }
    }
    let k_quant = quantized(32, 256, GgmlDType::Q4K, 12);
    let m = QMatrix::from_qtensor(&k_quant).unwrap().unwrap();
    assert!(!m.has_rows() && m.row(0).is_none());
}

/// A matrix larger than a band (about 4 MB) is read from its source a band of rows at a time, never
/// whole, and multiplies with the bits of the same matrix handed over at once.
#[test]
fn a_large_matrix_is_read_a_band_at_a_time_with_the_same_bits() {
    use nexttoken::engine::forward::quant::QMatrix;
    let (n, k) = (3300, 4096);
    let w = quantized(n, k, GgmlDType::Q4_1, 13);
    let data = w.data().unwrap();
    let row_bytes = data.len() / n;
    let mut bands = Vec::new();
    let banded = QMatrix::from_rows(GgmlDType::Q4_1, n, k, &mut |rows, buf| {
        bands.push(rows.clone());
        buf.clear();
        buf.extend_from_slice(&data[rows.start * row_bytes..rows.end * row_bytes]);
        Ok::<(), ()>(())
    })
    .unwrap()
    .unwrap();
    assert!(bands.len() >= 3, "{bands:?}");
    assert!(
        bands.iter().all(|b| b.len() * row_bytes <= 4 << 20),
        "{bands:?}"
    );
    assert_eq!(bands.first().unwrap().start, 0);
    assert_eq!(bands.last().unwrap().end, n);
    assert!(bands
        .windows(2)
        .all(|p| p[0].end == p[1].start && p[0].len() % 16 == 0));
    let exact = Linear::new(copy(&w), MatmulPath::Exact).unwrap();
    let xs = input(3, k, 14);
    let want = exact
        .forward(&xs)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    let got = Linear::tiled(banded)
        .forward_rows(&xs.flatten_all().unwrap().to_vec1::<f32>().unwrap(), 3)
        .unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want));
}

/// On the real file, the tied output head's tiles serve the embedding lookup (the token table held
/// once), and the rows they give are the file's table rows, as candle's lookup reads them.
#[test]
fn the_real_models_tied_head_serves_the_lookup_with_the_tables_bits() {
    use nexttoken::engine::forward::weights::head_and_embeddings;
    use nexttoken::engine::gguf::{GgufFile, LlamaConfig};
    let mut g = GgufFile::open(&support::real_model()).unwrap();
    let config = LlamaConfig::from_gguf(&g).unwrap();
    let (head, table) = head_and_embeddings(&mut g, &config, MatmulPath::Fast, None).unwrap();
    assert!(table.shares_head() && head.tiles().is_some());
    let file = g.tensor("token_embd.weight").unwrap();
    let vocab = table.vocab_size();
    let ids: Vec<u32> = (0..vocab as u32)
        .step_by(997)
        .chain([vocab as u32 - 1])
        .collect();
    let want = file
        .embedding(&Tensor::new(ids.as_slice(), &Device::Cpu).unwrap())
        .unwrap();
    let want = want.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    let got = table.rows(&ids).unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want));
    assert!(
        table.rows(&[vocab as u32]).is_err(),
        "an id past the table is refused"
    );
    // The exact path leaves the table with candle, shared with its head.
    let (_, exact) = head_and_embeddings(&mut g, &config, MatmulPath::Exact, None).unwrap();
    assert!(!exact.shares_head());
}

/// A one-row matmul hands each run of its output to `then` as the item that wrote it finishes, every
/// run starting at a multiple of the alignment asked for (here 32 columns: two 16-column tiles, where
/// the items' share would otherwise be an odd number of tiles), the runs covering the row once, each
/// run the row's own values.
#[test]
fn a_one_row_matmul_hands_on_aligned_runs_of_its_output() {
    use nexttoken::engine::forward::quant::{QMatrix, RunThen};
    use std::sync::Mutex;
    for n in [96, 100, 6 * 16 * 5] {
        let q = QMatrix::from_qtensor(&quantized(n, 64, GgmlDType::Q8_0, 7))
            .unwrap()
            .expect("Q8_0 is tiled");
        let x = values(64, 8, 1.0);
        let runs = Mutex::new(Vec::new());
        let each = |at: usize, run: &[f32]| runs.lock().unwrap().push((at, run.to_vec()));
        let then = RunThen {
            align: 32,
            each: &each,
        };
        let row = q.matmul_into_then(&x, 1, Isa::best(), Vec::new(), Some(&then));
        let mut runs = runs.into_inner().unwrap();
        runs.sort_by_key(|r| r.0);
        assert!(runs.len() > 1, "{n} columns: several items");
        let mut next = 0;
        for (at, run) in &runs {
            assert_eq!(
                (*at, at % 32),
                (next, 0),
                "{n} columns: runs in place, aligned"
            );
            assert_eq!(
                run[..],
                row[*at..at + run.len()],
                "{n} columns: the row's values"
            );
            next = at + run.len();
        }
        assert_eq!(next, n, "the runs cover the row");
    }
}
