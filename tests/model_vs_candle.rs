//! Our forward pass against candle-transformers' `quantized_llama` on the real model: same logits.

mod support;

use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use nexttoken::engine::gguf::GgufFile;
use nexttoken::engine::linear::MatmulPath;
use nexttoken::engine::model::{ForwardOptions, Model};

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn logits_match_candle_quantized_llama() {
    let path = support::real_model();
    let prompt = support::ids(&support::reference("P1")["prompt_ids"]);

    let mut g = GgufFile::open(&path).unwrap();
    let mut ours = Model::load(&mut g, MatmulPath::Exact).unwrap();

    let mut file = std::fs::File::open(&path).unwrap();
    let content = candle_core::quantized::gguf_file::Content::read(&mut file).unwrap();
    let mut theirs = ModelWeights::from_gguf(content, &mut file, &Device::Cpu).unwrap();

    // Prefill.
    let a = ours
        .forward(&prompt, 0, ForwardOptions::default())
        .unwrap()
        .logits;
    let input = Tensor::new(prompt.as_slice(), &Device::Cpu)
        .unwrap()
        .unsqueeze(0)
        .unwrap();
    let b = theirs
        .forward(&input, 0)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    let d = max_abs_diff(&a, &b);
    assert!(d <= 1e-4, "prefill logits differ by {d}");

    // Two decode steps through the KV cache.
    let mut pos = prompt.len();
    for tok in [7042u32, 30] {
        let a = ours
            .forward(&[tok], pos, ForwardOptions::default())
            .unwrap()
            .logits;
        let input = Tensor::new(&[tok], &Device::Cpu)
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
        let d = max_abs_diff(&a, &b);
        assert!(d <= 1e-4, "decode logits at position {pos} differ by {d}");
        pos += 1;
    }
}
