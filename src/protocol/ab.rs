//! The A/B view's reports: model B beside the session's model A, at every position of A's path.

use super::TokenView;
use serde::{Deserialize, Serialize};

/// One of B's candidates at the tip, with what A makes of the same token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbCandidate {
    pub token: TokenView,
    /// B's raw probability (softmax of B's logits, no sampler stage).
    pub prob: f32,
    /// A's raw probability of the same token.
    pub a_prob: f32,
    /// 0-based rank of the token in A's distribution.
    pub a_rank: usize,
}

/// Both models' next-token distributions at one position of A's path, compared over the whole
/// vocabulary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbStep {
    /// Absolute position of the token the two distributions predict.
    pub position: usize,
    pub a_top: TokenView,
    pub a_top_prob: f32,
    pub b_top: TokenView,
    pub b_top_prob: f32,
    /// Both have the same most likely token (aligned by text: tokens of the same text).
    pub same_top1: bool,
    /// KL(A‖B), KL(B‖A) and Jensen–Shannon, in nats.
    pub kl_ab: f64,
    pub kl_ba: f64,
    pub js: f64,
    /// For a position the path has already filled: B's probability of the token A's path took there,
    /// and its 0-based rank under B. `None` at the tip.
    pub b_chosen: Option<(f32, usize)>,
}

/// Model B along the current path: one step per position from the first generated token to the
/// tip's next, and B's candidates at the tip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbView {
    /// What B is: `"q2_k"`, or the other file's name.
    pub label: String,
    /// For a re-quantised B: which types its matrices got, as the engine's note.
    pub detail: Option<String>,
    /// The same as data: each storage type and how many matrices got it, most first (empty unless B
    /// is re-quantised). The panel's title is made from this, never by reading `detail`.
    #[serde(default)]
    pub matrix_types: Vec<(String, usize)>,
    /// `steps[i].position == first + i`, oldest first; the last is the tip's next token.
    pub steps: Vec<AbStep>,
    /// B's most likely tokens at the tip, best first.
    pub next: Vec<AbCandidate>,
    /// Entropy of B's distribution at the tip, in nats.
    pub next_entropy: f32,
    /// Why B could not be read this time (its pass failed); A's session is not affected.
    pub error: Option<String>,
    /// B's passes for this view: tokens read and milliseconds on the wall clock, the comparison
    /// included (`(0, 0.0)` when everything was known already).
    pub b_pass: (usize, f64),
    /// B has its own vocabulary and reads the text of A's path: the two align by text, and the
    /// divergences compare the two distributions over the next character (`b_chosen` is `None`).
    #[serde(default)]
    pub by_text: bool,
    /// With `by_text`: how B's tokenizer splits the text of A's path, to set beside A's tokens.
    #[serde(default)]
    pub b_tokens: Vec<TokenView>,
}

impl AbView {
    /// Positions so far where B's most likely token is not A's.
    pub fn flips(&self) -> usize {
        self.steps.iter().filter(|s| !s.same_top1).count()
    }

    /// The step for absolute position `position`, if the view holds it.
    pub fn at(&self, position: usize) -> Option<&AbStep> {
        let first = self.steps.first()?.position;
        self.steps.get(position.checked_sub(first)?)
    }

    /// The tip's step (the next token's two distributions).
    pub fn tip(&self) -> Option<&AbStep> {
        self.steps.last()
    }
}
