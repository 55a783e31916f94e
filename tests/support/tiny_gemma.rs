//! A tiny random Gemma 3 GGUF written inside the test: 3 layers (two sliding-window layers, then a
//! global one: `sliding_window_type` 3), width 32, 4 query heads and 2 KV heads of 16 (so q is 64 wide),
//! q/k norms and the sandwich norms, a tied Q8_0 embedding, and a SentencePiece-style vocabulary with
//! scores, byte pieces, a user-defined run of spaces and control tokens.
//!
//! The vocabulary is built so that the merge order matters: in `▁the`, `he` (score -1) merges before
//! `▁t` (-2) and `th` (-5), then `▁the` (-0.5). Merging the lowest score first, or the leftmost pair,
//! would give other pieces.

use super::tiny::{mlp_tensors, norm_of, qtensor, write_gguf};
use candle_core::quantized::gguf_file::Value;
use candle_core::quantized::{GgmlDType, QTensor};
use std::path::{Path, PathBuf};

pub const DIM: usize = 32;
pub const N_FF: usize = 64;
pub const N_LAYER: usize = 3;
pub const N_HEAD: usize = 4;
pub const N_KV_HEAD: usize = 2;
pub const HEAD_DIM: usize = 16;
pub const CONTEXT: usize = 64;
/// Every third layer is global: layers 0 and 1 slide, layer 2 sees everything.
pub const SWA_PATTERN: u32 = 3;

/// GGUF token types (llama.cpp's `llama_token_type`).
const NORMAL: i32 = 1;
const UNKNOWN: i32 = 2;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;
const BYTE: i32 = 6;

/// Id of the first byte piece `<0x00>`; byte `b` is `BYTES + b`.
pub const BYTES: u32 = 4;

/// The pieces after the bytes: text, score, type.
const PIECES: &[(&str, f32, i32)] = &[
    ("▁", -10.0, NORMAL),
    ("t", -11.0, NORMAL),
    ("h", -12.0, NORMAL),
    ("e", -13.0, NORMAL),
    ("a", -14.0, NORMAL),
    ("c", -15.0, NORMAL),
    ("▁t", -2.0, NORMAL),
    ("he", -1.0, NORMAL),
    ("▁the", -0.5, NORMAL),
    ("th", -5.0, NORMAL),
    ("  ", 0.0, USER_DEFINED),
    ("<start_of_turn>", 0.0, CONTROL),
    ("at", -4.0, NORMAL),
    ("▁c", -3.0, NORMAL),
    ("▁cat", -6.0, NORMAL),
];

/// The id of piece `text` in the tiny vocabulary.
pub fn id(text: &str) -> u32 {
    let i = PIECES.iter().position(|p| p.0 == text).unwrap();
    BYTES + 256 + i as u32
}

/// Writes the tiny Gemma 3 with sliding window `window`; returns its path.
pub fn write(dir: &Path, window: u32) -> PathBuf {
    let mut tokens: Vec<String> = ["<pad>", "<eos>", "<bos>", "<unk>"]
        .map(String::from)
        .into();
    let mut scores = vec![-1000.0f32; 4];
    let mut types = vec![CONTROL, CONTROL, CONTROL, UNKNOWN];
    for b in 0..=255u8 {
        tokens.push(format!("<0x{b:02X}>"));
        scores.push(0.0);
        types.push(BYTE);
    }
    for (t, s, ty) in PIECES {
        tokens.push(t.to_string());
        scores.push(*s);
        types.push(*ty);
    }
    let vocab = tokens.len();
    let s = |x: &str| Value::String(x.to_string());
    let u = Value::U32;
    let k = |key: &str| format!("gemma3.{key}");
    let metadata: Vec<(String, Value)> = vec![
        ("general.architecture".into(), s("gemma3")),
        ("general.name".into(), s("tiny-random-gemma3")),
        (k("block_count"), u(N_LAYER as u32)),
        (k("context_length"), u(CONTEXT as u32)),
        (k("embedding_length"), u(DIM as u32)),
        (k("feed_forward_length"), u(N_FF as u32)),
        (k("attention.head_count"), u(N_HEAD as u32)),
        (k("attention.head_count_kv"), u(N_KV_HEAD as u32)),
        (k("attention.key_length"), u(HEAD_DIM as u32)),
        (k("attention.value_length"), u(HEAD_DIM as u32)),
        (k("attention.sliding_window"), u(window)),
        (k("attention.sliding_window_type"), u(SWA_PATTERN)),
        (k("rope.freq_base"), Value::F32(1_000_000.0)),
        (k("attention.layer_norm_rms_epsilon"), Value::F32(1e-6)),
        ("tokenizer.ggml.model".into(), s("llama")),
        ("tokenizer.ggml.pre".into(), s("default")),
        (
            "tokenizer.ggml.tokens".into(),
            Value::Array(tokens.iter().map(|t| s(t)).collect()),
        ),
        (
            "tokenizer.ggml.scores".into(),
            Value::Array(scores.into_iter().map(Value::F32).collect()),
        ),
        (
            "tokenizer.ggml.token_type".into(),
            Value::Array(types.into_iter().map(Value::I32).collect()),
        ),
        ("tokenizer.ggml.bos_token_id".into(), u(2)),
        ("tokenizer.ggml.eos_token_id".into(), u(1)),
        ("tokenizer.ggml.unknown_token_id".into(), u(3)),
        ("tokenizer.ggml.add_bos_token".into(), Value::Bool(true)),
        ("tokenizer.ggml.add_space_prefix".into(), Value::Bool(false)),
    ];
    let mut tensors: Vec<(String, QTensor)> = vec![
        (
            "token_embd.weight".into(),
            qtensor((vocab, DIM), 1, GgmlDType::Q8_0),
        ),
        ("output_norm.weight".into(), norm_of(DIM, 2)),
    ];
    for l in 0..N_LAYER {
        tensors.extend(layer_tensors(l));
    }
    write_gguf(
        &dir.join(format!("tiny-gemma3-w{window}.gguf")),
        &metadata,
        &tensors,
    )
}

/// Layer `l`'s tensors: llama's, with Gemma 3's sandwich norms and q/k norms.
fn layer_tensors(l: usize) -> Vec<(String, QTensor)> {
    let (q, kv) = (HEAD_DIM * N_HEAD, HEAD_DIM * N_KV_HEAD);
    let mut tensors = vec![];
    let seed = 100 * (l as u64 + 1);
    let p = |n: &str| format!("blk.{l}.{n}.weight");
    tensors.push((p("attn_norm"), norm_of(DIM, seed)));
    tensors.push((p("post_attention_norm"), norm_of(DIM, seed + 20)));
    tensors.push((p("ffn_norm"), norm_of(DIM, seed + 1)));
    tensors.push((p("post_ffw_norm"), norm_of(DIM, seed + 21)));
    tensors.push((p("attn_q_norm"), norm_of(HEAD_DIM, seed + 12)));
    tensors.push((p("attn_k_norm"), norm_of(HEAD_DIM, seed + 13)));
    tensors.push((p("attn_q"), qtensor((q, DIM), seed + 2, GgmlDType::Q8_0)));
    tensors.push((p("attn_k"), qtensor((kv, DIM), seed + 3, GgmlDType::Q8_0)));
    tensors.push((p("attn_v"), qtensor((kv, DIM), seed + 4, GgmlDType::Q8_0)));
    tensors.push((
        p("attn_output"),
        qtensor((DIM, q), seed + 5, GgmlDType::Q4_1),
    ));
    tensors.extend(mlp_tensors(l, seed, DIM, N_FF));
    tensors
}
