//! The checks `nexttoken bench` runs after its timed tests: a session step's cost over a bare
//! forward pass, and how far the fast matmul path's probabilities are from the exact path's.

use super::bench::{load_model, median_std};
use crate::cli::DEFAULT_PROMPT;
use crate::engine::forward::kv_cache::KvPrecision;
use crate::engine::forward::linear::MatmulPath;
use crate::engine::forward::model::ForwardOptions;
use crate::engine::gguf::GgufFile;
use crate::engine::load::{load_session, LoadOptions};
use crate::engine::sampler::softmax;
use crate::engine::session::{Choice, SessionOptions};
use crate::engine::tokenizer::Vocab;
use crate::protocol::SamplerSettings;
use anyhow::Result;
use std::path::Path;
use std::time::Instant;

/// A session step (chain, commit, forward with attention capture, report) against a bare forward of one
/// token on the *same* model, interleaved so both see the same weights in memory and the same machine
/// load. The bare pass writes the KV entry the step then overwrites (a step truncates the cache to its
/// position first). The session's cache stores `kv`'s elements, as the bench's tests did. Returns the
/// median step and the median bare pass (ms).
pub(super) fn step_overhead(path: &Path, reps: usize, kv: KvPrecision) -> Result<(f64, f64)> {
    let load = LoadOptions {
        tokenizer_json: None,
        matmul: MatmulPath::Fast,
    };
    let settings = SamplerSettings::default();
    let (mut s, _) = load_session(
        path,
        &load,
        settings,
        SessionOptions {
            kv_precision: kv,
            ..SessionOptions::default()
        },
        &mut |_| {},
    )?;
    let (mut bare_ms, mut step_ms) = (Vec::new(), Vec::new());
    s.prefill_text(DEFAULT_PROMPT, false)?;
    // No pair is timed while the model's decode plans are on trial (their steps take each plan in
    // runs, so a bare pass and its step could run on different plans): that is the first steps, and
    // again every few hundred (`quant/decode_plan.rs`).
    while bare_ms.len() < 40 * reps.max(1) {
        // The token the model itself would pick, so the walk stays ordinary text for any model.
        let token = s.distribution()?.planned.id;
        let timed = !s.decode_trial_running();
        let bare = s.time_bare_forward(token)?;
        let t = Instant::now();
        s.step(Choice::Force(token))?;
        if timed && !s.decode_trial_running() {
            bare_ms.push(bare);
            step_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    Ok((median_std(&step_ms).0, median_std(&bare_ms).0))
}

/// Largest probability difference between the fast and exact matmul paths along a greedy path.
pub(super) fn fast_vs_exact(path: &Path) -> Result<f32> {
    let mut fast = load_model(path, MatmulPath::Fast)?;
    let mut exact = load_model(path, MatmulPath::Exact)?;
    let mut toks = Vocab::from_gguf(&GgufFile::open(path)?)?.encode(DEFAULT_PROMPT)?;
    let mut worst = 0f32;
    let mut pos = 0;
    for _ in 0..8 {
        let a = softmax(
            &fast
                .forward(&toks[pos..], pos, ForwardOptions::default())?
                .logits,
        );
        let b = softmax(
            &exact
                .forward(&toks[pos..], pos, ForwardOptions::default())?
                .logits,
        );
        worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(worst, f32::max);
        pos = toks.len();
        let next = b
            .iter()
            .enumerate()
            .max_by(|x, y| x.1.total_cmp(y.1))
            .map(|(i, _)| i as u32)
            .unwrap();
        toks.push(next);
    }
    Ok(worst)
}
