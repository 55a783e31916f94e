//! The output head finds the sampler's block maxima as it writes a decode step's row: each of its
//! work items reads back its own run of logits while that run is still in its core's cache. The
//! maxima must be `block_maxima` of the whole row, bit for bit, whatever the thread count, the model's
//! vocabulary size (a short last block included) or the matmul path.

use crate::support;
use nexttoken::engine::forward::linear::MatmulPath;
use nexttoken::engine::forward::model::{ForwardOptions, Model};
use nexttoken::engine::forward::quant::decode_plan::with_small_rows_threads;
use nexttoken::engine::gguf::GgufFile;
use nexttoken::engine::sampler::{block_maxima, MAXIMA_BLOCK};
use std::path::Path;

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|f| f.to_bits()).collect()
}

/// Decodes `tokens` one at a time on 1 and 2 threads, checking each step's maxima against its row.
fn check(path: &Path, matmul: MatmulPath, tokens: &[u32]) {
    let mut m = Model::load(&mut GgufFile::open(path).unwrap(), matmul).unwrap();
    for threads in [1, 2] {
        m.cache.clear();
        for (pos, &t) in tokens.iter().enumerate() {
            let out = with_small_rows_threads(threads, || {
                m.forward(&[t], pos, ForwardOptions::default()).unwrap()
            });
            assert_eq!(out.block_maxima.len(), m.vocab_size.div_ceil(MAXIMA_BLOCK));
            assert_eq!(
                bits(&out.block_maxima),
                bits(&block_maxima(&out.logits)),
                "{path:?}, {matmul:?}, {threads} thread(s), position {pos}"
            );
        }
    }
    // A pass asked for every row's logits gives none: they would be the last row's only.
    let all = ForwardOptions {
        all_logits: true,
        ..Default::default()
    };
    m.cache.clear();
    assert!(m.forward(tokens, 0, all).unwrap().block_maxima.is_empty());
}

#[test]
fn the_tiny_models_head_finds_its_rows_block_maxima() {
    let dir = tempfile::tempdir().unwrap();
    let path = support::tiny::write(dir.path());
    let vocab = Model::load(&mut GgufFile::open(&path).unwrap(), MatmulPath::Fast)
        .unwrap()
        .vocab_size;
    assert_ne!(vocab % MAXIMA_BLOCK, 0, "the last block is short");
    for matmul in [MatmulPath::Fast, MatmulPath::Exact] {
        check(&path, matmul, &[5, 17, 200, 33, 1]);
    }
}

#[test]
fn the_real_models_heads_find_their_rows_block_maxima() {
    check(
        &support::real_model(),
        MatmulPath::Fast,
        &[1, 504, 3458, 282, 4649],
    );
    check(
        &support::gemma_model(),
        MatmulPath::Fast,
        &[2, 818, 5279, 529, 7001],
    );
}
