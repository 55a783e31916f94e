//! A tiny random llama GGUF written inside the test: 2 layers, dim 32, a byte-level vocabulary.
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
fn random(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

fn qtensor(shape: (usize, usize), seed: u64, dtype: GgmlDType) -> QTensor {
    let t = Tensor::from_vec(random(shape.0 * shape.1, seed, 0.5), shape, &Device::Cpu).unwrap();
    QTensor::quantize(&t, dtype).unwrap()
}

fn norm(seed: u64) -> QTensor {
    let v: Vec<f32> = random(DIM, seed, 0.2)
        .into_iter()
        .map(|x| 1.0 + x)
        .collect();
    QTensor::quantize(
        &Tensor::from_vec(v, DIM, &Device::Cpu).unwrap(),
        GgmlDType::F32,
    )
    .unwrap()
}

/// Writes the model with these extra/overridden metadata entries; returns its path.
pub fn write_with(dir: &Path, arch: &str, pre: &str) -> PathBuf {
    let mut tokens: Vec<String> = (0..=255u8).map(|b| byte_char(b).to_string()).collect();
    tokens.push("Ġt".into());
    tokens.push("<|endoftext|>".into());
    let vocab = tokens.len();
    let mut types = vec![1i32; vocab];
    types[vocab - 1] = 3;
    let s = |x: &str| Value::String(x.to_string());
    let u = Value::U32;
    let metadata: Vec<(String, Value)> = vec![
        ("general.architecture".into(), s(arch)),
        ("general.name".into(), s("tiny-random-llama")),
        ("llama.block_count".into(), u(N_LAYER as u32)),
        ("llama.context_length".into(), u(CONTEXT as u32)),
        ("llama.embedding_length".into(), u(DIM as u32)),
        ("llama.feed_forward_length".into(), u(N_FF as u32)),
        ("llama.attention.head_count".into(), u(N_HEAD as u32)),
        ("llama.attention.head_count_kv".into(), u(N_KV_HEAD as u32)),
        (
            "llama.rope.dimension_count".into(),
            u((DIM / N_HEAD) as u32),
        ),
        ("llama.rope.freq_base".into(), Value::F32(10000.0)),
        (
            "llama.attention.layer_norm_rms_epsilon".into(),
            Value::F32(1e-5),
        ),
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
    let mut tensors: Vec<(String, QTensor)> = vec![
        (
            "token_embd.weight".into(),
            qtensor((vocab, DIM), 1, GgmlDType::Q8_0),
        ),
        ("output_norm.weight".into(), norm(2)),
    ];
    let kv = DIM / N_HEAD * N_KV_HEAD;
    for l in 0..N_LAYER {
        let seed = 100 * (l as u64 + 1);
        let p = |n: &str| format!("blk.{l}.{n}.weight");
        tensors.push((p("attn_norm"), norm(seed)));
        tensors.push((p("ffn_norm"), norm(seed + 1)));
        tensors.push((p("attn_q"), qtensor((DIM, DIM), seed + 2, GgmlDType::Q8_0)));
        tensors.push((p("attn_k"), qtensor((kv, DIM), seed + 3, GgmlDType::Q8_0)));
        tensors.push((p("attn_v"), qtensor((kv, DIM), seed + 4, GgmlDType::Q8_0)));
        tensors.push((
            p("attn_output"),
            qtensor((DIM, DIM), seed + 5, GgmlDType::Q8_0),
        ));
        tensors.push((
            p("ffn_gate"),
            qtensor((N_FF, DIM), seed + 6, GgmlDType::Q8_0),
        ));
        tensors.push((p("ffn_up"), qtensor((N_FF, DIM), seed + 7, GgmlDType::Q8_0)));
        tensors.push((
            p("ffn_down"),
            qtensor((DIM, N_FF), seed + 8, GgmlDType::Q4_1),
        ));
    }
    let path = dir.join(format!("tiny-{arch}-{pre}.gguf"));
    let mut f = std::fs::File::create(&path).unwrap();
    let md: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let ts: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    gguf_file::write(&mut f, &md, &ts).unwrap();
    path
}

/// The standard tiny llama.
pub fn write(dir: &Path) -> PathBuf {
    write_with(dir, "llama", "gpt2")
}
