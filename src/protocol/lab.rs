//! The lab's reports: two paths compared step by step (exposure bias, teacher forcing against free
//! running).

use super::TokenView;
use serde::{Deserialize, Serialize};

/// One path's token at one aligned step, scored under the model's raw distribution (temperature 1, no
/// sampler stage) at that point of that path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathToken {
    pub token: TokenView,
    /// Forced by hand (a real deviation from the sampler's plan).
    pub forced: bool,
    pub prob: f64,
    pub logprob: f64,
    /// 0-based rank of the token in its distribution.
    pub rank: usize,
    /// Entropy (nats) of the distribution the token was chosen from.
    pub entropy: f64,
    /// The model's most likely token there.
    pub top1: TokenView,
}

/// The two paths at one generated step, aligned by step from the start of generation (for teacher
/// forcing against free running, from the tip where the reference began).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlignedStep {
    pub step: usize,
    /// `None` once a path has ended.
    pub a: Option<PathToken>,
    pub b: Option<PathToken>,
    /// KL(a‖b), KL(b‖a) and Jensen–Shannon (nats) between the two next-token distributions over the
    /// whole vocabulary; 0 before the fork, `None` when a path has ended.
    pub kl_ab: Option<f64>,
    pub kl_ba: Option<f64>,
    pub js: Option<f64>,
    /// Both distributions have the same most likely token.
    pub same_top1: bool,
}

/// One path's totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathSummary {
    /// The branch's leaf node (as in `BranchInfo::id`).
    pub leaf: usize,
    /// The generated text (for teacher forcing, the text from where the reference began).
    pub text: String,
    pub tokens: usize,
    /// Sum of the generated tokens' log-probs: the sequence's log-likelihood under the model.
    pub logprob: f64,
    /// Sum over the tokens forced by hand only.
    pub forced_logprob: f64,
    /// Mean log-prob of the tokens the model chose itself (not forced) from the fork step on, or over
    /// the whole path when the paths do not differ: how confidently it carries on. `None` when there
    /// are none. The path's own tokens before the fork are not in it.
    pub free_mean_logprob: Option<f64>,
    /// How many tokens that mean is over.
    #[serde(default)]
    pub free_tokens: usize,
}

/// Two paths of one session, compared step by step from the start of generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The first generated step at which the paths hold different tokens (`None`: one path is a
    /// prefix of the other, or they are equal). For teacher forcing against free running, this is
    /// where free running first leaves the reference.
    pub fork_step: Option<usize>,
    pub a: PathSummary,
    pub b: PathSummary,
    pub steps: Vec<AlignedStep>,
    /// Mean Jensen–Shannon divergence over the steps from the fork on where both paths go on.
    pub mean_js: f64,
    /// The first step after the fork from which both paths hold the same tokens and agree on the top
    /// token to the end of the shorter path, for at least `REJOIN_MIN_STEPS` steps; `None` if they
    /// never rejoin.
    pub rejoined_at: Option<usize>,
}

/// Steps of agreement to the end before two paths count as rejoined: one shared "." is chance.
pub const REJOIN_MIN_STEPS: usize = 3;
