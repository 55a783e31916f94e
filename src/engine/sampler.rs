//! The sampler chain, each stage recorded: penalties -> temperature -> top-k -> top-p -> min-p ->
//! renormalise -> a seeded draw.
//!
//! Every cut-off stage keeps a *prefix* of the tokens sorted by penalised logit (temperature does not
//! change the order), so the chain sorts one short prefix and each stage is just a length. Over the whole
//! vocabulary it only needs normalisers (log-sum-exp), one pass per stage that is switched on; a
//! probability vector the size of the vocabulary is never built. That keeps a step's own cost a few
//! percent of the forward pass (see `nexttoken bench`).

use crate::protocol::{Draw, SamplerSettings, StageReport};
use std::collections::HashMap;

/// The chain's result over one logits row.
#[derive(Debug, Clone)]
pub struct ChainOutput {
    /// The `shown` best ids by penalised logit, best first.
    pub shown: Vec<u32>,
    /// log-sum-exp of the raw logits: `logprob(i) = logits[i] - lse`.
    pub lse: f32,
    /// Shannon entropy of the raw distribution, in nats.
    pub entropy: f32,
    pub stages: Vec<StageReport>,
    /// Final (post-chain, renormalised) probability of each `shown` id; 0 where a stage cut it.
    pub final_probs: Vec<f32>,
    pub planned: u32,
    pub planned_prob: f32,
    pub draw: Option<Draw>,
}

impl ChainOutput {
    /// Raw probability (softmax of the unpenalised logits at temperature 1) of one token.
    pub fn raw_prob(&self, logits: &[f32], id: u32) -> f32 {
        (logits[id as usize] - self.lse).exp()
    }
}

/// `e^x` for `x <= 0`, vectorisable: `2^(x log2 e)` split into an integer power (exponent bits) and a
/// degree-6 polynomial for `2^f`, `f` in [-0.5, 0.5]. Relative error below 1e-7; 0 below -87.
#[inline(always)]
fn exp_nonpos(x: f32) -> f32 {
    let t = (x * std::f32::consts::LOG2_E).max(-126.0);
    // Round to nearest with the 1.5 * 2^23 trick: `f32::round` is a library call without SSE4.1.
    let n = (t + 12_582_912.0) - 12_582_912.0;
    let f = t - n;
    // Taylor coefficients of 2^f = e^(f ln 2).
    let p = 1.0
        + f * (0.693_147_2
            + f * (0.240_226_5
                + f * (0.055_504_11
                    + f * (0.009_618_129 + f * (0.001_333_355 + f * 0.000_154_035)))));
    p * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

const LANES: usize = 8;

/// Largest value, with 8 independent lanes so the loop vectorises.
fn max_of(xs: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for j in 0..LANES {
            acc[j] = acc[j].max(c[j]);
        }
    }
    tail.iter()
        .chain(&acc)
        .fold(f32::NEG_INFINITY, |a, &x| a.max(x))
}

/// `sum_i e^(l_i * scale - shift)` and `sum_i e^(..) * (l_i * scale - shift)`, in 8 lanes: float sums
/// are only vectorised when the program itself splits them.
fn exp_sums(xs: &[f32], scale: f32, shift: f32) -> (f32, f32) {
    let (mut s, mut sl) = ([0f32; LANES], [0f32; LANES]);
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for j in 0..LANES {
            let z = c[j] * scale - shift;
            let e = exp_nonpos(z);
            s[j] += e;
            sl[j] += e * z;
        }
    }
    let (mut s1, mut sl1) = (s.iter().sum::<f32>(), sl.iter().sum::<f32>());
    for &x in tail {
        let z = x * scale - shift;
        let e = exp_nonpos(z);
        s1 += e;
        sl1 += e * z;
    }
    (s1, sl1)
}

/// `ln sum_i e^(l_i / t)`: the log-normaliser of a logits row at temperature `t`.
fn lse_scaled(logits: &[f32], t: f32) -> f32 {
    let max = max_of(logits) / t;
    max + exp_sums(logits, 1.0 / t, max).0.ln()
}

/// Log-sum-exp and entropy (nats) of the softmax of `logits`, in one pass:
/// `H = lse - sum_i p_i l_i`, so no logarithm per token.
pub fn lse_entropy(logits: &[f32]) -> (f32, f32) {
    let max = max_of(logits);
    let (s, sl) = exp_sums(logits, 1.0, max);
    (max + s.ln(), (s.ln() - sl / s).max(0.0))
}

/// Softmax of a logits row (tests, bench).
pub fn softmax(logits: &[f32]) -> Vec<f32> {
    let lse = lse_scaled(logits, 1.0);
    logits.iter().map(|&l| (l - lse).exp()).collect()
}

/// Shannon entropy in nats of a probability vector.
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

/// The `n` largest indices by value, sorted descending (ties by lower id first). One pass with a
/// rising threshold: candidates collect in a buffer, which is cut back to the best `n` whenever it holds
/// `2n`, so most of the vocabulary costs a single comparison.
pub fn top_n(values: &[f32], n: usize) -> Vec<u32> {
    let n = n.min(values.len());
    if n == 0 {
        return vec![];
    }
    let better = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    let mut buf: Vec<(f32, u32)> = Vec::with_capacity(2 * n + 1);
    let mut thr = f32::NEG_INFINITY;
    for (i, &v) in values.iter().enumerate() {
        if v >= thr {
            buf.push((v, i as u32));
            if buf.len() == 2 * n {
                buf.select_nth_unstable_by(n - 1, better);
                buf.truncate(n);
                thr = buf.iter().fold(f32::INFINITY, |a, x| a.min(x.0));
            }
        }
    }
    buf.sort_unstable_by(better);
    buf.truncate(n);
    buf.into_iter().map(|(_, i)| i).collect()
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
    let (lse, entropy) = lse_entropy(logits);
    // Penalised logits, only when a penalty is on; otherwise the raw row stands in.
    let pen = (penalties_on(s) && !history.is_empty()).then(|| {
        let mut pen = logits.to_vec();
        apply_penalties(&mut pen, history, s);
        pen
    });
    let base: &[f32] = pen.as_deref().unwrap_or(logits);
    let lse_pen = if pen.is_some() {
        lse_scaled(base, 1.0)
    } else {
        lse
    };
    let t = if s.temperature > 0.0 {
        s.temperature
    } else {
        1.0
    };
    let lse_t = if t != 1.0 {
        lse_scaled(base, t)
    } else {
        lse_pen
    };
    // Probability after temperature: the distribution the cut-offs work on.
    let p_t = |i: u32| (base[i as usize] / t - lse_t).exp();

    // How much of the sorted order the cut-offs need.
    let k = if s.top_k > 0 {
        s.top_k.min(vocab)
    } else {
        vocab
    };
    let max_base = max_of(base);
    let need = if k < vocab {
        k
    } else if s.top_p < 1.0 {
        512.min(vocab)
    } else if s.min_p > 0.0 {
        // p_i >= min_p * p_max  <=>  base_i >= base_max + t ln(min_p)
        let floor = max_base + t * s.min_p.ln();
        base.iter().filter(|&&l| l >= floor).count()
    } else {
        vocab
    };
    let mut sorted = top_n(base, need.max(shown_n));
    let mass = |n: usize, sorted: &[u32]| -> f32 {
        if n >= vocab {
            1.0
        } else {
            sorted[..n].iter().map(|&i| p_t(i) as f64).sum::<f64>() as f32
        }
    };
    // top-p: the smallest prefix of the top-k survivors whose renormalised mass reaches p (Holtzman 2019).
    let mass_k = mass(k, &sorted);
    let n_p = if s.top_p < 1.0 {
        let find = |sorted: &[u32]| {
            let mut cum = 0.0f64;
            sorted.iter().take(k).position(|&i| {
                cum += p_t(i) as f64 / mass_k as f64;
                cum >= s.top_p as f64
            })
        };
        match find(&sorted) {
            Some(i) => i + 1,
            None if sorted.len() < k => {
                sorted = top_n(base, k);
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
        let thr = s.min_p * p_t(sorted[0]);
        sorted
            .iter()
            .take(n_p)
            .take_while(|&&i| p_t(i) >= thr)
            .count()
            .max(1)
    } else {
        n_p
    };
    let mass_m = mass(n_m, &sorted);
    if n_m > sorted.len() {
        sorted = top_n(base, n_m);
    }

    let shown: Vec<u32> = sorted.iter().take(shown_n).cloned().collect();
    let of = |lse: f32, scale: f32, row: &[f32]| -> Vec<f32> {
        shown
            .iter()
            .map(|&i| (row[i as usize] / scale - lse).exp())
            .collect()
    };
    let cut = |n: usize, m: f32| -> Vec<f32> {
        shown
            .iter()
            .enumerate()
            .map(|(r, &i)| if r < n { p_t(i) / m } else { 0.0 })
            .collect()
    };
    let stage = |name: &str, kept: usize, probs: Vec<f32>, kept_mass: f32| StageReport {
        name: name.into(),
        kept,
        probs,
        kept_mass,
    };
    let stages = vec![
        stage("raw", vocab, of(lse, 1.0, logits), 1.0),
        stage("penalties", vocab, of(lse_pen, 1.0, base), 1.0),
        stage("temperature", vocab, of(lse_t, t, base), 1.0),
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
                cum += p_t(i) as f64;
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
    ChainOutput {
        shown,
        lse,
        entropy,
        stages,
        final_probs,
        planned,
        planned_prob: p_t(planned) / mass_m,
        draw,
    }
}
