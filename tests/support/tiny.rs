//! A tiny random llama, qwen2 or qwen3 GGUF written inside the test: 2 layers, dim 32, a byte-level
//! vocabulary. The qwen2 file adds q/k/v biases and its own output matrix; the qwen3 file adds per-head
//! q/k norms and heads of `QWEN3_HEAD_DIM` (not `DIM / N_HEAD`); llama and qwen3 tie the output to the
//! embedding.
//!
//! Matrices whose rows are 32 wide are Q8_0 (candle's Q4_1 dot product wants an even number of 32-wide
//! blocks per row); `ffn_down` (64 wide) is Q4_1, so both quantised paths run.

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use std::path::{Path, PathBuf};

pub const DIM: usize = 32;
pub const N_FF: usize = 64;
pub const N_LAYER: usize = 2;
pub const N_HEAD: usize = 4;
pub const N_KV_HEAD: usize = 2;
pub const CONTEXT: usize = 64;
/// Qwen 3's head size, twice `DIM / N_HEAD`: q is 64 wide, k and v 32.
pub const QWEN3_HEAD_DIM: usize = 16;

/// GPT-2's printable stand-in for each byte.
fn byte_char(b: u8) -> char {
    let printable = |b: u8| {
        (b'!'..=b'~').contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b)
    };
    if printable(b) {
        b as char
    } else {
        let n = (0..b).filter(|&x| !printable(x)).count() as u32;
        char::from_u32(256 + n).unwrap()
    }
}

/// Deterministic pseudo-random values in about [-scale, scale].
pub fn random(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut g = super::lcg::Lcg::stepped(seed);
    (0..n).map(|_| (g.unit() * 2.0 - 1.0) * scale).collect()
}

pub fn qtensor(shape: (usize, usize), seed: u64, dtype: GgmlDType) -> QTensor {
    let t = Tensor::from_vec(random(shape.0 * shape.1, seed, 0.5), shape, &Device::Cpu).unwrap();
    QTensor::quantize(&t, dtype).unwrap()
}

pub fn vector(v: Vec<f32>) -> QTensor {
    let n = v.len();
    QTensor::quantize(
        &Tensor::from_vec(v, n, &Device::Cpu).unwrap(),
        GgmlDType::F32,
    )
    .unwrap()
}

pub fn norm_of(n: usize, seed: u64) -> QTensor {
    vector(random(n, seed, 0.2).into_iter().map(|x| 1.0 + x).collect())
}

fn norm(seed: u64) -> QTensor {
    norm_of(DIM, seed)
}

/// Writes the tiny model of architecture `arch` (metadata keys prefixed with it; `qwen2` and `qwen3`
/// get their own tensors, any other name the llama layout) with pre-tokenizer `pre`; returns its path.
pub fn write_with(dir: &Path, arch: &str, pre: &str) -> PathBuf {
    let mut tokens: Vec<String> = (0..=255u8).map(|b| byte_char(b).to_string()).collect();
    tokens.push("Ġt".into());
    tokens.push("<|endoftext|>".into());
    let vocab = tokens.len();
    let mut types = vec![1i32; vocab];
    types[vocab - 1] = 3;
    let s = |x: &str| Value::String(x.to_string());
    let u = Value::U32;
    let hd = if arch == "qwen3" {
        QWEN3_HEAD_DIM
    } else {
        DIM / N_HEAD
    };
    let (rope_base, eps) = if arch.starts_with("qwen") {
        (1_000_000.0, 1e-6)
    } else {
        (10_000.0, 1e-5)
    };
    let k = |key: &str| format!("{arch}.{key}");
    let mut metadata: Vec<(String, Value)> = vec![
        ("general.architecture".into(), s(arch)),
        ("general.name".into(), s(&format!("tiny-random-{arch}"))),
        (k("block_count"), u(N_LAYER as u32)),
        (k("context_length"), u(CONTEXT as u32)),
        (k("embedding_length"), u(DIM as u32)),
        (k("feed_forward_length"), u(N_FF as u32)),
        (k("attention.head_count"), u(N_HEAD as u32)),
        (k("attention.head_count_kv"), u(N_KV_HEAD as u32)),
        (k("rope.dimension_count"), u(hd as u32)),
        (k("rope.freq_base"), Value::F32(rope_base)),
        (k("attention.layer_norm_rms_epsilon"), Value::F32(eps)),
        ("tokenizer.ggml.model".into(), s("gpt2")),
        ("tokenizer.ggml.pre".into(), s(pre)),
        (
            "tokenizer.ggml.tokens".into(),
            Value::Array(tokens.iter().map(|t| s(t)).collect()),
        ),
        (
            "tokenizer.ggml.token_type".into(),
            Value::Array(types.into_iter().map(Value::I32).collect()),
        ),
        ("tokenizer.ggml.merges".into(), Value::Array(vec![s("Ġ t")])),
        ("tokenizer.ggml.bos_token_id".into(), u(vocab as u32 - 1)),
        ("tokenizer.ggml.eos_token_id".into(), u(vocab as u32 - 1)),
        ("tokenizer.ggml.add_bos_token".into(), Value::Bool(false)),
    ];
    if arch == "qwen3" {
        metadata.push((k("attention.key_length"), u(hd as u32)));
        metadata.push((k("attention.value_length"), u(hd as u32)));
        // candle-transformers' qwen3 builds its RoPE tables in f16 unless told the weights are f32.
        metadata.push(("general.dtype".into(), u(0)));
    }
    let mut tensors: Vec<(String, QTensor)> = vec![
        (
            "token_embd.weight".into(),
            qtensor((vocab, DIM), 1, GgmlDType::Q8_0),
        ),
        ("output_norm.weight".into(), norm(2)),
    ];
    if arch == "qwen2" {
        tensors.push((
            "output.weight".into(),
            qtensor((vocab, DIM), 3, GgmlDType::Q8_0),
        ));
    }
    for l in 0..N_LAYER {
        tensors.extend(layer_tensors(arch, l, hd));
    }
    write_gguf(
        &dir.join(format!("tiny-{arch}-{pre}.gguf")),
        &metadata,
        &tensors,
    )
}

/// Layer `l`'s tensors for architecture `arch` (head size `hd`): qwen2's q/k/v biases and qwen3's q/k
/// norms besides the llama layout.
fn layer_tensors(arch: &str, l: usize, hd: usize) -> Vec<(String, QTensor)> {
    let (q, kv) = (hd * N_HEAD, hd * N_KV_HEAD);
    let mut tensors = vec![];
    let seed = 100 * (l as u64 + 1);
    let p = |n: &str| format!("blk.{l}.{n}.weight");
    tensors.push((p("attn_norm"), norm(seed)));
    tensors.push((p("ffn_norm"), norm(seed + 1)));
    tensors.push((p("attn_q"), qtensor((q, DIM), seed + 2, GgmlDType::Q8_0)));
    tensors.push((p("attn_k"), qtensor((kv, DIM), seed + 3, GgmlDType::Q8_0)));
    tensors.push((p("attn_v"), qtensor((kv, DIM), seed + 4, GgmlDType::Q8_0)));
    tensors.push((
        p("attn_output"),
        qtensor((DIM, q), seed + 5, GgmlDType::Q8_0),
    ));
    if arch == "qwen2" {
        let b = |n: &str| format!("blk.{l}.{n}.bias");
        tensors.push((b("attn_q"), vector(random(q, seed + 9, 0.5))));
        tensors.push((b("attn_k"), vector(random(kv, seed + 10, 0.5))));
        tensors.push((b("attn_v"), vector(random(kv, seed + 11, 0.5))));
    }
    if arch == "qwen3" {
        tensors.push((p("attn_q_norm"), norm_of(hd, seed + 12)));
        tensors.push((p("attn_k_norm"), norm_of(hd, seed + 13)));
    }
    tensors.extend(mlp_tensors(l, seed, DIM, N_FF));
    tensors
}

/// Layer `l`'s gated MLP (`dim` wide, `n_ff` inner): gate and up in Q8_0, down in Q4_1, from `seed`.
pub fn mlp_tensors(l: usize, seed: u64, dim: usize, n_ff: usize) -> Vec<(String, QTensor)> {
    let p = |n: &str| format!("blk.{l}.{n}.weight");
    vec![
        (
            p("ffn_gate"),
            qtensor((n_ff, dim), seed + 6, GgmlDType::Q8_0),
        ),
        (p("ffn_up"), qtensor((n_ff, dim), seed + 7, GgmlDType::Q8_0)),
        (
            p("ffn_down"),
            qtensor((dim, n_ff), seed + 8, GgmlDType::Q4_1),
        ),
    ]
}

/// Writes a GGUF of these metadata and tensors at `path`; returns the path.
pub fn write_gguf(
    path: &Path,
    metadata: &[(String, Value)],
    tensors: &[(String, QTensor)],
) -> PathBuf {
    let mut f = std::fs::File::create(path).unwrap();
    let md: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let ts: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    gguf_file::write(&mut f, &md, &ts).unwrap();
    path.to_path_buf()
}

/// Our model from the file at `path`, on the matmul path `matmul`.
pub fn ours(
    path: &Path,
    matmul: nexttoken::engine::forward::linear::MatmulPath,
) -> nexttoken::engine::forward::model::Model {
    let mut g = nexttoken::engine::gguf::GgufFile::open(path).unwrap();
    nexttoken::engine::forward::model::Model::load(&mut g, matmul).unwrap()
}

/// The last position's logits after feeding `tokens` at positions `pos..`.
pub fn logits(
    m: &mut nexttoken::engine::forward::model::Model,
    tokens: &[u32],
    pos: usize,
) -> Vec<f32> {
    let opts = nexttoken::engine::forward::model::ForwardOptions::default();
    m.forward(tokens, pos, opts).unwrap().logits
}

/// The largest absolute difference between two logits rows of the same length.
pub fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// The standard tiny llama.
pub fn write(dir: &Path) -> PathBuf {
    write_with(dir, "llama", "gpt2")
}

/// The tiny Qwen 2.5 (q/k/v biases) or Qwen 3 (q/k norms, wider heads): `arch` is `qwen2` or `qwen3`.
pub fn write_qwen(dir: &Path, arch: &str) -> PathBuf {
    write_with(dir, arch, "qwen2")
}
