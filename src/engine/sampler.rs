//! The sampler chain, each stage recorded: penalties -> temperature -> top-k -> top-p -> min-p ->
//! renormalise -> a seeded draw.
//!
//! Every cut-off stage keeps a *prefix* of the tokens sorted by penalised logit (temperature does not change
//! the order), so the chain is computed once over one sorted prefix and each stage is just a length.

use crate::protocol::{Draw, SamplerSettings, StageReport};
use std::collections::HashMap;

/// The chain's result over one logits row.
#[derive(Debug, Clone)]
pub struct ChainOutput {
    /// The `shown` best ids by penalised logit, best first.
    pub shown: Vec<u32>,
    /// Raw probabilities (softmax of the unpenalised logits) of the whole vocabulary.
    pub raw_probs: Vec<f32>,
    /// log-sum-exp of the raw logits: `logprob(i) = logits[i] - lse`.
    pub lse: f32,
    /// Shannon entropy of `raw_probs`, in nats.
    pub entropy: f32,
    pub stages: Vec<StageReport>,
    /// Final (post-chain, renormalised) probability of each `shown` id; 0 where a stage cut it.
    pub final_probs: Vec<f32>,
    pub planned: u32,
    pub planned_prob: f32,
    pub draw: Option<Draw>,
}

/// Softmax in f64 accumulation for stability.
pub fn softmax(logits: &[f32]) -> Vec<f32> {
    softmax_lse(logits).0
}

/// Softmax and the log-sum-exp of the logits, in one pass over the exponentials.
pub fn softmax_lse(logits: &[f32]) -> (Vec<f32>, f32) {
    let max = logits.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
    let mut exps: Vec<f32> = logits.iter().map(|&l| (l - max).exp()).collect();
    let sum: f64 = exps.iter().map(|&e| e as f64).sum();
    let inv = (1.0 / sum) as f32;
    exps.iter_mut().for_each(|e| *e *= inv);
    (exps, max + sum.ln() as f32)
}

/// Shannon entropy in nats.
pub fn entropy(probs: &[f32]) -> f32 {
    -probs
        .iter()
        .filter(|&&p| p > 0.0)
        .map(|&p| p as f64 * (p as f64).ln())
        .sum::<f64>() as f32
}

/// 0-based rank of `id`: how many tokens have a strictly larger value.
pub fn rank_of(values: &[f32], id: u32) -> usize {
    let v = values[id as usize];
    values.iter().filter(|&&x| x > v).count()
}

/// The `n` largest indices by value, sorted descending (ties by lower id first).
pub fn top_n(values: &[f32], n: usize) -> Vec<u32> {
    let n = n.min(values.len());
    let mut ids: Vec<u32> = (0..values.len() as u32).collect();
    let cmp = |a: &u32, b: &u32| {
        values[*b as usize]
            .total_cmp(&values[*a as usize])
            .then(a.cmp(b))
    };
    if n < ids.len() && n > 0 {
        ids.select_nth_unstable_by(n - 1, cmp);
        ids.truncate(n);
    }
    ids.sort_unstable_by(cmp);
    ids.truncate(n);
    ids
}

fn penalties_on(s: &SamplerSettings) -> bool {
    let off = s.repeat_penalty == 1.0 && s.frequency_penalty == 0.0 && s.presence_penalty == 0.0;
    !off && s.penalty_last_n > 0
}

/// Applies repetition (CTRL, Keskar et al. 2019), frequency and presence penalties over the last
/// `penalty_last_n` tokens of `history`.
pub fn apply_penalties(logits: &mut [f32], history: &[u32], s: &SamplerSettings) {
    if !penalties_on(s) {
        return;
    }
    let recent = &history[history.len().saturating_sub(s.penalty_last_n)..];
    let mut counts: HashMap<u32, usize> = HashMap::new();
    for &t in recent {
        *counts.entry(t).or_default() += 1;
    }
    for (&t, &n) in &counts {
        let Some(l) = logits.get_mut(t as usize) else {
            continue;
        };
        if s.repeat_penalty != 1.0 {
            *l = if *l > 0.0 {
                *l / s.repeat_penalty
            } else {
                *l * s.repeat_penalty
            };
        }
        *l -= n as f32 * s.frequency_penalty + s.presence_penalty;
    }
}

/// A reproducible uniform number in [0, 1) for the draw at `position` (SplitMix64 of seed and position), so
/// rewinding and stepping again draws the same number.
pub fn uniform(seed: u64, position: usize) -> f32 {
    let mut z = seed
        ^ (position as u64)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x632B_E59B_D9B4_E019);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 40) as f32 / (1u64 << 24) as f32
}

/// Runs the whole chain. `u` is the uniform number for the draw (ignored when greedy).
pub fn run_chain(
    logits: &[f32],
    history: &[u32],
    s: &SamplerSettings,
    shown_n: usize,
    u: f32,
) -> ChainOutput {
    let vocab = logits.len();
    let (raw_probs, lse) = softmax_lse(logits);
    // Stages that are off reuse the previous stage's probabilities instead of another pass.
    let pen = (penalties_on(s) && !history.is_empty()).then(|| {
        let mut pen = logits.to_vec();
        apply_penalties(&mut pen, history, s);
        pen
    });
    let pen_owned = pen.as_ref().map(|p| softmax(p));
    let pen_probs: &[f32] = pen_owned.as_deref().unwrap_or(&raw_probs);
    let t = if s.temperature > 0.0 {
        s.temperature
    } else {
        1.0
    };
    let temp_owned = (t != 1.0).then(|| {
        let base = pen.as_deref().unwrap_or(logits);
        softmax(&base.iter().map(|l| l / t).collect::<Vec<_>>())
    });
    let temp_probs: &[f32] = temp_owned.as_deref().unwrap_or(pen_probs);

    // How much of the sorted order the cut-offs need.
    let k = if s.top_k > 0 {
        s.top_k.min(vocab)
    } else {
        vocab
    };
    let need = if k < vocab {
        k
    } else if s.top_p < 1.0 {
        512.min(vocab)
    } else if s.min_p > 0.0 {
        let max = temp_probs.iter().cloned().fold(0.0, f32::max);
        temp_probs.iter().filter(|&&p| p >= s.min_p * max).count()
    } else {
        vocab
    };
    let mut sorted = top_n(temp_probs, need.max(shown_n));
    let mass = |n: usize, sorted: &[u32]| -> f32 {
        if n >= vocab {
            1.0
        } else {
            sorted[..n]
                .iter()
                .map(|&i| temp_probs[i as usize] as f64)
                .sum::<f64>() as f32
        }
    };
    // top-p: the smallest prefix of the top-k survivors whose renormalised mass reaches p (Holtzman 2019).
    let mass_k = mass(k, &sorted);
    let n_p = if s.top_p < 1.0 {
        let find = |sorted: &[u32]| {
            let mut cum = 0.0f64;
            sorted.iter().take(k).position(|&i| {
                cum += temp_probs[i as usize] as f64 / mass_k as f64;
                cum >= s.top_p as f64
            })
        };
        match find(&sorted) {
            Some(i) => i + 1,
            None if sorted.len() < k => {
                sorted = top_n(temp_probs, k);
                find(&sorted).map_or(k, |i| i + 1)
            }
            None => k,
        }
    } else {
        k
    };
    let mass_p = mass(n_p, &sorted);
    // min-p: keep tokens with p >= min_p * p_max (renormalising does not change the ratio).
    let n_m = if s.min_p > 0.0 {
        let thr = s.min_p * temp_probs[sorted[0] as usize];
        sorted
            .iter()
            .take(n_p)
            .take_while(|&&i| temp_probs[i as usize] >= thr)
            .count()
            .max(1)
    } else {
        n_p
    };
    let mass_m = mass(n_m, &sorted);
    if n_m >= vocab && sorted.len() < vocab {
        sorted = top_n(temp_probs, vocab);
    }

    let shown: Vec<u32> = sorted.iter().take(shown_n).cloned().collect();
    let cut = |n: usize, m: f32| -> Vec<f32> {
        shown
            .iter()
            .enumerate()
            .map(|(r, &i)| {
                if r < n {
                    temp_probs[i as usize] / m
                } else {
                    0.0
                }
            })
            .collect()
    };
    let pick = |p: &[f32]| shown.iter().map(|&i| p[i as usize]).collect::<Vec<f32>>();
    let stage = |name: &str, kept: usize, probs: Vec<f32>, kept_mass: f32| StageReport {
        name: name.into(),
        kept,
        probs,
        kept_mass,
    };
    let stages = vec![
        stage("raw", vocab, pick(&raw_probs), 1.0),
        stage("penalties", vocab, pick(pen_probs), 1.0),
        stage("temperature", vocab, pick(temp_probs), 1.0),
        stage("top-k", k, cut(k, mass_k), mass_k),
        stage("top-p", n_p, cut(n_p, mass_p), mass_p / mass_k),
        stage("min-p", n_m, cut(n_m, mass_m), mass_m / mass_p),
    ];
    let final_probs = cut(n_m, mass_m);

    let (planned_rank, draw) = if s.greedy {
        (0, None)
    } else {
        // Inverse-CDF draw over the survivors, best first.
        let target = u as f64 * mass_m as f64;
        let mut cum = 0.0f64;
        let r = sorted[..n_m]
            .iter()
            .position(|&i| {
                cum += temp_probs[i as usize] as f64;
                cum > target
            })
            .unwrap_or(n_m - 1);
        (
            r,
            Some(Draw {
                u,
                token_id: sorted[r],
                rank: r,
            }),
        )
    };
    let planned = sorted[planned_rank];
    let entropy = entropy(&raw_probs);
    let planned_prob = temp_probs[planned as usize] / mass_m;
    ChainOutput {
        shown,
        lse,
        entropy,
        raw_probs,
        stages,
        final_probs,
        planned,
        planned_prob,
        draw,
    }
}
