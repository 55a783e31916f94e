//! Our forward pass against candle-transformers' `quantized_llama` on the real model: same logits, on
//! both matmul paths (the fast path is bit-identical to candle's `QMatMul`). On these short shapes our
//! attention kernel does exactly candle's arithmetic (`engine::forward::attention`), so the match is bit for bit;
//! any reordering shows up here as a large difference, because 8-bit activations amplify it.

use crate::support;

use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use nexttoken::engine::forward::linear::MatmulPath;
use nexttoken::engine::forward::model::{ForwardOptions, Model};
use nexttoken::engine::gguf::GgufFile;

/// Feeds `tokens` at `pos` to both models and returns the largest logit difference.
fn compare(ours: &mut Model, theirs: &mut ModelWeights, tokens: &[u32], pos: usize) -> f32 {
    let a = ours
        .forward(tokens, pos, ForwardOptions::default())
        .unwrap()
        .logits;
    let input = Tensor::new(tokens, &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    let b = theirs
        .forward(&input, pos)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn logits_match_candle_quantized_llama() {
    let path = support::real_model();
    let prompt = support::ids(&support::reference("P1")["prompt_ids"]);
    for matmul in [MatmulPath::Exact, MatmulPath::Fast] {
        let mut g = GgufFile::open(&path).unwrap();
        let mut ours = Model::load(&mut g, matmul).unwrap();
        let mut file = std::fs::File::open(&path).unwrap();
        let content = candle_core::quantized::gguf_file::Content::read(&mut file).unwrap();
        let mut theirs = ModelWeights::from_gguf(content, &mut file, &Device::Cpu).unwrap();

        let d = compare(&mut ours, &mut theirs, &prompt, 0);
        assert!(d <= 1e-4, "{matmul:?}: prefill logits differ by {d}");
        // Two decode steps through the KV cache.
        for (i, tok) in [7042u32, 30].into_iter().enumerate() {
            let pos = prompt.len() + i;
            let d = compare(&mut ours, &mut theirs, &[tok], pos);
            assert!(
                d <= 1e-4,
                "{matmul:?}: decode logits at position {pos} differ by {d}"
            );
        }
    }
}
