//! The sampler chain, each stage recorded: penalties -> DRY -> temperature -> top-k -> top-p -> min-p ->
//! renormalise -> a seeded draw.
//!
//! The order follows llama.cpp's default chain (penalties, dry, top-k, typical, top-p, min-p, xtc,
//! temperature) as far as these stages go: the logit penalties come first, DRY (`sampler/dry.rs`) right
//! after them. Temperature sits before the cut-offs here; it does not change the order, so top-k keeps
//! the same tokens either way.
//!
//! Every cut-off stage keeps a *prefix* of the tokens sorted by penalised logit (temperature does not
//! change the order), so the chain sorts one short prefix and each stage is just a length. Over the whole
//! vocabulary it only needs normalisers (log-sum-exp), one pass per stage that is switched on; a
//! probability vector the size of the vocabulary is never built. Those passes and the sort run side by
//! side on the decode threads (`sampler/passes.rs`). That keeps a step's own cost a few percent of
//! the forward pass (see `nexttoken bench`).

mod best;
mod dry;
mod fate;
mod passes;
mod penalties;
mod row;
pub mod sparse;

pub use best::{block_maxima, rank_of, ranks_of, top_n, BLOCK as MAXIMA_BLOCK};
pub use dry::{
    apply_dry, dry_on, dry_penalties, dry_penalty, dry_repeats, DryBreakers, MAX_BREAKER_BYTES,
    MAX_TAIL_TOKENS,
};
pub use fate::{fate, Fate};
pub use penalties::apply_penalties;
pub use row::{entropy, lse_entropy, softmax};

use crate::protocol::{Draw, SamplerSettings, StageReport};
use passes::{top_k_len, RowPasses};
use penalties::PenaltyRows;
use row::lse_scaled;

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
    /// Final (post-chain, renormalised) probability of each `shown` id; 0 where a stage cut it. Greedy
    /// draws nothing: 1 for the top token, 0 for every other.
    pub final_probs: Vec<f32>,
    pub planned: u32,
    pub planned_prob: f32,
    pub draw: Option<Draw>,
    /// The whole final distribution the draw is made from: every token the cut-offs keep with its
    /// renormalised probability, best first (greedy: the planned token with 1). Speculative decoding
    /// compares the target's and the draft's (`session/speculate.rs`).
    pub kept: Vec<(u32, f32)>,
    /// Whether `shown` is the raw row's best prefix (no penalty reordered it): their ranks are then
    /// read off the prefix, without another pass over the row.
    pub shown_is_raw: bool,
}

impl ChainOutput {
    /// Each `shown` id's rank in the raw `logits`: how many logits are larger (`ranks_of`).
    pub fn shown_ranks(&self, logits: &[f32]) -> Vec<usize> {
        self.shown_is_raw
            .then(|| passes::prefix_ranks(logits, &self.shown))
            .flatten()
            .unwrap_or_else(|| ranks_of(logits, &self.shown))
    }

    /// Raw probability (softmax of the unpenalised logits at temperature 1) of one token.
    pub fn raw_prob(&self, logits: &[f32], id: u32) -> f32 {
        (logits[id as usize] - self.lse).exp()
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

/// Runs the whole chain with no DRY sequence breakers (see [`run_chain_with`]).
pub fn run_chain(
    logits: &[f32],
    history: &[u32],
    s: &SamplerSettings,
    shown_n: usize,
    u: f32,
) -> ChainOutput {
    run_chain_with(logits, history, s, &DryBreakers::none(), shown_n, u)
}

/// Runs the whole chain. `u` is the uniform number for the draw (ignored when greedy). `breakers` are
/// the DRY sequence breakers mapped onto the vocabulary ([`DryBreakers::from_vocab`], once per session).
///
/// Greedy means `s.greedy`, or a temperature of 0 or below (as in llama.cpp: dividing by 0 leaves no
/// distribution to draw from, only the argmax). Greedy plans the best penalised logit and draws nothing;
/// the stages are then shown at temperature 1.
pub fn run_chain_with(
    logits: &[f32],
    history: &[u32],
    s: &SamplerSettings,
    breakers: &DryBreakers,
    shown_n: usize,
    u: f32,
) -> ChainOutput {
    run_chain_beside((logits, None), (history, s, breakers), shown_n, u, &|| {})
}

/// `run_chain_with`, and `beside` once, beside the whole-row passes ([`RowPasses::run_beside`]): a
/// step's bookkeeping takes the time the passes' second thread would wait. The row comes with its
/// [`block_maxima`] when they are known (the output head finds them as it writes the row).
pub fn run_chain_beside(
    (logits, maxima): (&[f32], Option<&[f32]>),
    (history, s, breakers): (&[u32], &SamplerSettings, &DryBreakers),
    shown_n: usize,
    u: f32,
    beside: &(dyn Fn() + Sync),
) -> ChainOutput {
    let rows = PenaltyRows::new(logits, history, s, breakers);
    let t = Tempered::t_of(s.temperature);
    let passes = RowPasses::run_beside((logits, maxima), rows.base(), t, s, shown_n, beside);
    let (lse, entropy) = (passes.lse, passes.entropy);
    let tempered = Tempered::new(logits, &passes, rows.base(), t);
    let cuts = Cutoffs::find(&tempered, s, passes.sorted);
    let shown: Vec<u32> = cuts.sorted.iter().take(shown_n).cloned().collect();
    // With DRY on, the penalties stage shows the row before DRY (one more normaliser when both apply).
    let before_dry = dry_on(s).then(|| match (&rows.pen, &rows.dried) {
        (_, None) => (tempered.base, tempered.lse_pen),
        (Some(p), Some(_)) => (p.as_slice(), lse_scaled(p, 1.0)),
        (None, Some(_)) => (logits, lse),
    });
    let stages = stage_reports(logits, lse, before_dry, &tempered, &cuts, &shown);
    let greedy = s.is_greedy();
    // Every stage keeps a prefix of `sorted`, so its first token is the argmax of the penalised logits.
    let draw = (!greedy).then(|| draw_from(&tempered, &cuts, u));
    let planned = draw.as_ref().map_or(cuts.sorted[0], |d| d.token_id);
    // What the last step takes from: the kept distribution for a draw; greedy takes the top for certain.
    let kept = if greedy {
        vec![(planned, 1.0)]
    } else {
        let survivors = &cuts.sorted[..cuts.n_m];
        survivors
            .iter()
            .map(|&i| (i, tempered.prob(i) / cuts.mass_m))
            .collect()
    };
    let (final_probs, planned_prob) = if greedy {
        let certain = shown.iter().map(|&t| f32::from(u8::from(t == planned)));
        (certain.collect(), 1.0)
    } else {
        (
            cuts.kept_probs(&tempered, &shown, cuts.n_m, cuts.mass_m),
            tempered.prob(planned) / cuts.mass_m,
        )
    };
    ChainOutput {
        shown,
        lse,
        entropy,
        stages,
        final_probs,
        planned,
        planned_prob,
        draw,
        kept,
        shown_is_raw: rows.base().is_none(),
    }
}

/// Step 2: the penalised row at temperature `t`, the distribution every cut-off works on. It keeps only
/// normalisers: `p_t(i) = e^(base_i / t - lse_t)`.
struct Tempered<'a> {
    /// The penalised logits, after DRY (the raw row when no penalty applies).
    base: &'a [f32],
    /// log-sum-exp of `base`.
    lse_pen: f32,
    /// The temperature; 1 when the setting is 0 or below (greedy, see [`run_chain`]).
    t: f32,
    /// log-sum-exp of `base / t`.
    lse_t: f32,
}

impl<'a> Tempered<'a> {
    /// The temperature the chain divides by: 1 where the setting is 0 or below (greedy).
    fn t_of(temperature: f32) -> f32 {
        if temperature > 0.0 {
            temperature
        } else {
            1.0
        }
    }

    /// The distribution from the normalisers the whole-row passes found (`t` from [`Self::t_of`]).
    fn new(logits: &'a [f32], passes: &RowPasses, penalised: Option<&'a [f32]>, t: f32) -> Self {
        let lse_pen = passes.lse_pen.unwrap_or(passes.lse);
        Tempered {
            base: penalised.unwrap_or(logits),
            lse_pen,
            t,
            lse_t: passes.lse_t.unwrap_or(lse_pen),
        }
    }

    fn vocab(&self) -> usize {
        self.base.len()
    }

    /// Probability of `i` after penalties and temperature.
    fn prob(&self, i: u32) -> f32 {
        (self.base[i as usize] / self.t - self.lse_t).exp()
    }

    /// Total probability of the first `n` of `sorted` (1 for the whole vocabulary, with no sum).
    fn mass(&self, n: usize, sorted: &[u32]) -> f32 {
        if n >= self.vocab() {
            1.0
        } else {
            sorted[..n]
                .iter()
                .map(|&i| self.prob(i) as f64)
                .sum::<f64>() as f32
        }
    }
}

/// Step 3: the cut-off stages. Each keeps a prefix of `sorted` (ids by penalised logit, best first), so
/// each is a length and the mass it keeps.
struct Cutoffs {
    /// The best ids, at least as many as any stage keeps or the screen shows.
    sorted: Vec<u32>,
    /// Kept by top-k, top-p and min-p, in chain order (each at most the one before).
    k: usize,
    n_p: usize,
    n_m: usize,
    /// Probability mass (after temperature) of each kept prefix.
    mass_k: f32,
    mass_p: f32,
    mass_m: f32,
}

impl Cutoffs {
    /// `sorted`: the best ids by penalised logit, as many as [`RowPasses`] found the cut-offs need.
    fn find(d: &Tempered, s: &SamplerSettings, mut sorted: Vec<u32>) -> Cutoffs {
        let k = top_k_len(d.vocab(), s);
        let mass_k = d.mass(k, &sorted);
        let n_p = top_p_len(d, s.top_p, k, mass_k, &mut sorted);
        let mass_p = d.mass(n_p, &sorted);
        let n_m = min_p_len(d, s.min_p, n_p, &sorted);
        let mass_m = d.mass(n_m, &sorted);
        if n_m > sorted.len() {
            sorted = top_n(d.base, n_m);
        }
        Cutoffs {
            sorted,
            k,
            n_p,
            n_m,
            mass_k,
            mass_p,
            mass_m,
        }
    }

    /// Probability of each `shown` id after a stage that kept `n` tokens of mass `mass`, renormalised;
    /// 0 where the stage cut it.
    fn kept_probs(&self, d: &Tempered, shown: &[u32], n: usize, mass: f32) -> Vec<f32> {
        shown
            .iter()
            .enumerate()
            .map(|(r, &i)| if r < n { d.prob(i) / mass } else { 0.0 })
            .collect()
    }
}

/// top-p (Holtzman et al. 2019): the smallest prefix of the `k` top-k survivors whose renormalised mass
/// reaches `top_p`. Sorts up to `k` when the first guess of `sorted` is too short to reach it.
fn top_p_len(d: &Tempered, top_p: f32, k: usize, mass_k: f32, sorted: &mut Vec<u32>) -> usize {
    if top_p >= 1.0 {
        return k;
    }
    let find = |sorted: &[u32]| {
        let mut cum = 0.0f64;
        sorted.iter().take(k).position(|&i| {
            cum += d.prob(i) as f64 / mass_k as f64;
            cum >= top_p as f64
        })
    };
    match find(sorted) {
        Some(i) => i + 1,
        None if sorted.len() < k => {
            *sorted = top_n(d.base, k);
            find(sorted).map_or(k, |i| i + 1)
        }
        None => k,
    }
}

/// min-p: of the `n_p` top-p survivors, keep those with `p >= min_p * p_max` (renormalising does not
/// change the ratio, so the tempered probabilities serve). The best token always stays.
fn min_p_len(d: &Tempered, min_p: f32, n_p: usize, sorted: &[u32]) -> usize {
    if min_p <= 0.0 {
        return n_p;
    }
    let thr = min_p * d.prob(sorted[0]);
    sorted
        .iter()
        .take(n_p)
        .take_while(|&&i| d.prob(i) >= thr)
        .count()
        .max(1)
}

/// Step 4: what the screen shows of each stage: its name, how many tokens it keeps, the `shown` ids'
/// probabilities after it, and the share of the previous stage's mass it keeps. `before_dry` is the row
/// after the penalties and its log-sum-exp when DRY is on (the `dry` stage is shown only then).
fn stage_reports(
    logits: &[f32],
    lse: f32,
    before_dry: Option<(&[f32], f32)>,
    d: &Tempered,
    c: &Cutoffs,
    shown: &[u32],
) -> Vec<StageReport> {
    let vocab = d.vocab();
    let softmax_of = |row: &[f32], scale: f32, lse: f32| -> Vec<f32> {
        shown
            .iter()
            .map(|&i| (row[i as usize] / scale - lse).exp())
            .collect()
    };
    let kept = |n: usize, mass: f32| c.kept_probs(d, shown, n, mass);
    let stage = |name: &str, kept: usize, probs: Vec<f32>, kept_mass: f32| StageReport {
        name: name.into(),
        kept,
        probs,
        kept_mass,
    };
    let mut stages = vec![stage("raw", vocab, softmax_of(logits, 1.0, lse), 1.0)];
    match before_dry {
        Some((row, row_lse)) => {
            stages.push(stage(
                "penalties",
                vocab,
                softmax_of(row, 1.0, row_lse),
                1.0,
            ));
            stages.push(stage("dry", vocab, softmax_of(d.base, 1.0, d.lse_pen), 1.0));
        }
        None => stages.push(stage(
            "penalties",
            vocab,
            softmax_of(d.base, 1.0, d.lse_pen),
            1.0,
        )),
    }
    stages.extend([
        stage("temperature", vocab, softmax_of(d.base, d.t, d.lse_t), 1.0),
        stage("top-k", c.k, kept(c.k, c.mass_k), c.mass_k),
        stage("top-p", c.n_p, kept(c.n_p, c.mass_p), c.mass_p / c.mass_k),
        stage("min-p", c.n_m, kept(c.n_m, c.mass_m), c.mass_m / c.mass_p),
    ]);
    stages
}

/// Step 5: the inverse-CDF draw over the min-p survivors, best first: the first token whose cumulative
/// mass passes `u` of the kept mass.
fn draw_from(d: &Tempered, cuts: &Cutoffs, u: f32) -> Draw {
    let survivors = &cuts.sorted[..cuts.n_m];
    let target = u as f64 * cuts.mass_m as f64;
    let mut cum = 0.0f64;
    let rank = survivors
        .iter()
        .position(|&i| {
            cum += d.prob(i) as f64;
            cum > target
        })
        .unwrap_or(cuts.n_m - 1);
    Draw {
        u,
        token_id: survivors[rank],
        rank,
    }
}
