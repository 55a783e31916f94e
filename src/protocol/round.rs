//! One round of speculative decoding as plain data: what the draft proposed, what the model's check
//! said of each token, the token the round ended with, and what the round cost.

use super::{Distribution, PassReport, TokenRecord, TokenView};
use serde::{Deserialize, Serialize};

/// The loaded draft, as the screen names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DraftInfo {
    /// `q2_k`, `layers:20`, or a file's name.
    pub label: String,
    /// Tokens it proposes per round (`--draft-k`).
    pub k: usize,
    /// Its layers (the model's, or fewer for an early exit).
    pub n_layer: usize,
    /// Bytes of weights one draft pass reads over one pass of the model.
    pub bytes_ratio: f64,
}

impl DraftInfo {
    /// The draft in words for a class: "the model's own first 26 layers" for an early exit
    /// (`layers:26`, where "layers:26 (26 layers)" had said it twice), else "q2_k (30 layers)".
    pub fn in_words(&self) -> String {
        match self.label.strip_prefix("layers:") {
            Some(_) => format!("the model's own first {} layers", self.n_layer),
            None => format!("{} ({} layers)", self.label, self.n_layer),
        }
    }
}

/// What the check said of one drafted token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Accepted,
    Rejected,
    /// After the first rejection: never checked (its p was computed, but the text had already left it).
    Unchecked,
}

/// One drafted token, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DraftedToken {
    pub token: TokenView,
    /// The model's final probability of the token (after the sampler chain): p.
    pub p: f32,
    /// The draft's: q.
    pub q: f32,
    /// min(1, p / q): the chance the check keeps it.
    pub accept_prob: f32,
    /// The uniform number the check compared with `accept_prob` (kept when below it).
    pub u: f32,
    pub verdict: Verdict,
    /// The model's most likely token at this position.
    pub model_top: TokenView,
}

/// How the round's last token was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundEnd {
    /// At the first rejection: drawn from the residual max(0, p − q), normalised.
    Residual,
    /// Every drafted token was kept: one more token drawn from p, for free.
    Bonus,
}

/// The round's last token and the distribution it was drawn from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundLast {
    pub token: TokenView,
    pub end: RoundEnd,
    /// The probability it had in the distribution it was drawn from (the residual, or p).
    pub prob: f32,
    /// That distribution's best tokens, best first (at most a screen's worth).
    pub from: Vec<(TokenView, f32)>,
}

/// One round: K drafted tokens, one check by the model, 1 to K + 1 tokens of text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundReport {
    /// Rounds run in this session before this one.
    pub round: usize,
    /// The draft's name: `q2_k`, `layers:20`, or a file's name.
    pub draft: String,
    /// Position of the first drafted token.
    pub first_position: usize,
    pub drafted: Vec<DraftedToken>,
    /// Drafted tokens kept, in order, before the first rejection.
    pub accepted: usize,
    pub last: RoundLast,
    /// The draft's passes (one per drafted token) and their time.
    pub draft_passes: usize,
    pub draft_ms: f64,
    /// Tokens the draft's first pass read: 1, or more when it caught up on text it had not seen.
    pub draft_read: usize,
    /// The model's one checking pass: the positions it read, and its time.
    pub verify_positions: usize,
    pub verify_ms: f64,
    /// One plain step of the model at about this depth, measured (what each of the round's tokens
    /// would have cost without a draft).
    pub plain_ms: f64,
    /// Whether the sampler was greedy (a drafted token is then kept exactly when it is the model's
    /// top token).
    pub greedy: bool,
}

impl RoundReport {
    /// Tokens of text the round wrote: the kept drafts and the last token.
    pub fn tokens(&self) -> usize {
        self.accepted + 1
    }

    /// What the round cost: the draft's passes and the check.
    pub fn ms(&self) -> f64 {
        self.draft_ms + self.verify_ms
    }

    /// What as many plain steps would have cost.
    pub fn plain_equivalent_ms(&self) -> f64 {
        self.plain_ms * self.tokens() as f64
    }

    /// Adds this round to a running tally.
    pub fn add_to(&self, t: &mut crate::analysis::speculation::Tally) {
        let times = (self.draft_ms, self.verify_ms);
        t.add(self.drafted.len(), self.accepted, times, self.plain_ms);
    }
}

/// One token a round wrote, as a step: what was committed and the model's distribution it was chosen
/// from (its `draw` is the plain draw only for a bonus token; otherwise `None`, the round saying how
/// the token was chosen).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundStep {
    /// Step number along the current path (0 = first generated token).
    pub step: usize,
    pub committed: TokenRecord,
    pub chosen_from: Distribution,
}

/// A round and the steps it wrote. The last step's token is not yet read by the model: the next
/// round's check reads it with the new drafts (a view of the session reads it first when asked).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundSteps {
    pub report: RoundReport,
    pub steps: Vec<RoundStep>,
    /// The model's checking pass (its `ms` the check alone; each step's share of the round is
    /// `report.ms() / steps.len()`).
    pub pass: PassReport,
}

#[cfg(test)]
mod tests {
    use super::DraftInfo;

    #[test]
    fn a_draft_in_words_names_an_early_exit_once() {
        let draft = |label: &str, n_layer| DraftInfo {
            label: label.into(),
            k: 4,
            n_layer,
            bytes_ratio: 0.9,
        };
        assert_eq!(
            draft("layers:26", 26).in_words(),
            "the model's own first 26 layers"
        );
        assert_eq!(draft("q2_k", 30).in_words(), "q2_k (30 layers)");
    }
}
