//! Qwen 2.5 and Qwen 3 in our forward, on tiny random GGUFs written by the test: the same logits as
//! candle-transformers' `quantized_qwen2` / `quantized_qwen3` over a prefill and single-token steps (both
//! matmul paths), the KV cache and rewind against recomputing, the attention capture, the tokenizer's
//! `qwen2` pre-tokenizer, and a clear error for an architecture we do not run.

use crate::support;

use candle_core::quantized::gguf_file::Content;
use candle_core::{Device, Tensor};
use candle_transformers::models::{quantized_qwen2, quantized_qwen3};
use nexttoken::engine::forward::linear::MatmulPath;
use nexttoken::engine::forward::model::{ForwardOptions, Model};
use nexttoken::engine::gguf::{Arch, GgufFile, LoadError};
use nexttoken::engine::tokenizer::Vocab;
use std::path::Path;
use support::tiny::{self, logits, max_diff, ours};

const PROMPT: [u32; 7] = [5, 17, 200, 33, 90, 256, 12];
const STEPS: [u32; 3] = [1, 44, 3];

/// candle-transformers' model of either architecture, behind one call.
enum Theirs {
    Qwen2(quantized_qwen2::ModelWeights),
    Qwen3(quantized_qwen3::ModelWeights),
}

impl Theirs {
    fn load(path: &Path, arch: &str) -> Self {
        let mut file = std::fs::File::open(path).unwrap();
        let content = Content::read(&mut file).unwrap();
        let cpu = &Device::Cpu;
        match arch {
            "qwen2" => Self::Qwen2(
                quantized_qwen2::ModelWeights::from_gguf(content, &mut file, cpu).unwrap(),
            ),
            _ => Self::Qwen3(
                quantized_qwen3::ModelWeights::from_gguf(content, &mut file, cpu).unwrap(),
            ),
        }
    }

    fn logits(&mut self, tokens: &[u32], pos: usize) -> Vec<f32> {
        let input = Tensor::new(tokens, &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        let out = match self {
            Self::Qwen2(m) => m.forward(&input, pos),
            Self::Qwen3(m) => m.forward(&input, pos),
        };
        out.unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    }
}

/// Our logits against candle-transformers' over a prefill and three single-token steps.
fn matches_candle(arch: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny::write_qwen(dir.path(), arch);
    for matmul in [MatmulPath::Exact, MatmulPath::Fast] {
        let mut a = ours(&path, matmul);
        let mut b = Theirs::load(&path, arch);
        let d = max_diff(&logits(&mut a, &PROMPT, 0), &b.logits(&PROMPT, 0));
        assert!(d <= 1e-4, "{arch} {matmul:?}: prefill logits differ by {d}");
        for (i, &t) in STEPS.iter().enumerate() {
            let pos = PROMPT.len() + i;
            let d = max_diff(&logits(&mut a, &[t], pos), &b.logits(&[t], pos));
            assert!(
                d <= 1e-4,
                "{arch} {matmul:?}: step logits at position {pos} differ by {d}"
            );
        }
    }
}

#[test]
fn qwen2_logits_match_candle_quantized_qwen2() {
    matches_candle("qwen2");
}

#[test]
fn qwen3_logits_match_candle_quantized_qwen3() {
    matches_candle("qwen3");
}

#[test]
fn the_architecture_and_head_size_come_from_the_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let q2 = ours(&tiny::write_qwen(dir.path(), "qwen2"), MatmulPath::Fast);
    assert_eq!(q2.config.arch, Arch::Qwen2);
    assert_eq!(q2.config.head_dim, tiny::DIM / tiny::N_HEAD);
    let q3 = ours(&tiny::write_qwen(dir.path(), "qwen3"), MatmulPath::Fast);
    assert_eq!(q3.config.arch, Arch::Qwen3);
    assert_eq!(q3.config.head_dim, tiny::QWEN3_HEAD_DIM);
    assert_ne!(q3.config.head_dim * q3.config.n_head, q3.config.n_embd);
}

#[test]
fn kv_cache_steps_and_rewind_match_one_prefill() {
    let dir = tempfile::tempdir().unwrap();
    let seq: Vec<u32> = PROMPT.iter().chain(&STEPS).copied().collect();
    for arch in ["qwen2", "qwen3"] {
        let path = tiny::write_qwen(dir.path(), arch);
        let mut stepped = ours(&path, MatmulPath::Fast);
        let mut fresh = ours(&path, MatmulPath::Fast);
        // Every position's logits from one prefill of the whole sequence.
        let opts = ForwardOptions {
            all_logits: true,
            ..Default::default()
        };
        let all = fresh.forward(&seq, 0, opts).unwrap().logits;
        let vocab = stepped.vocab_size;
        let row = |p: usize| &all[p * vocab..(p + 1) * vocab];
        // One token at a time through the cache.
        for (p, &t) in seq.iter().enumerate() {
            let d = max_diff(&logits(&mut stepped, &[t], p), row(p));
            assert!(d < 1e-4, "{arch}: position {p} stepped vs prefill: {d}");
        }
        // Rewind to position 4 and feed another token there, then the rest again.
        let d = max_diff(&logits(&mut stepped, &[99], 4), &{
            fresh.cache.clear();
            logits(&mut fresh, &[seq[0], seq[1], seq[2], seq[3], 99], 0)
        });
        assert!(d < 1e-4, "{arch}: rewound step vs prefill: {d}");
        let d = max_diff(&logits(&mut stepped, &seq[4..], 4), row(seq.len() - 1));
        assert!(d < 1e-4, "{arch}: re-fed after rewind vs prefill: {d}");
    }
}

#[test]
fn attention_is_captured_for_every_layer_and_head() {
    let dir = tempfile::tempdir().unwrap();
    for arch in ["qwen2", "qwen3"] {
        let mut m = ours(&tiny::write_qwen(dir.path(), arch), MatmulPath::Fast);
        let opts = ForwardOptions {
            capture_rows: PROMPT.len(),
            ..Default::default()
        };
        let att = m.forward(&PROMPT, 0, opts).unwrap().attention;
        let n = PROMPT.len();
        assert_eq!((att.first_row, att.rows, att.kv_len), (0, n, n));
        assert_eq!(att.data.len(), tiny::N_LAYER * tiny::N_HEAD * n * n);
        for (i, r) in att.data.chunks_exact(n).enumerate() {
            let q = i % n;
            let sum: f32 = r.iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "{arch}: row {i} sums to {sum}");
            assert!(r[q + 1..].iter().all(|&p| p == 0.0), "{arch}: row {i}");
            assert!(r[..=q].iter().all(|&p| p > 0.0), "{arch}: row {i}");
        }
    }
}

#[test]
fn the_qwen2_pre_tokenizer_builds_from_the_gguf() {
    let dir = tempfile::tempdir().unwrap();
    let g = GgufFile::open(&tiny::write_qwen(dir.path(), "qwen3")).unwrap();
    let v = Vocab::from_gguf(&g).unwrap();
    // Digits one at a time; `Ġt` (id 256) is the one merge.
    assert_eq!(v.encode("12 t").unwrap(), [b'1' as u32, b'2' as u32, 256]);
}

#[test]
fn an_unsupported_architecture_names_itself_and_the_supported_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny::write_with(dir.path(), "phi3", "gpt2");
    let e = match Model::load(&mut GgufFile::open(&path).unwrap(), MatmulPath::Fast) {
        Ok(_) => panic!("a phi3 file must not load"),
        Err(e) => e,
    };
    assert!(
        matches!(&e, LoadError::UnsupportedArchitecture(a) if a == "phi3"),
        "{e:?}"
    );
    let msg = e.to_string();
    for name in ["`phi3`", "llama", "qwen2", "qwen3", "gemma3", "--model"] {
        assert!(msg.contains(name), "{name} missing from: {msg}");
    }
}
