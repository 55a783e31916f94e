//! The reports: plain, owned data describing tokens, distributions, attention, timings and the session.

use serde::{Deserialize, Serialize};

/// How a token is shown. Token boundaries are part of the lesson, so the kind travels with the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    /// Ordinary text (may start with a space).
    Text,
    /// A control or chat-template token such as `<|im_start|>`.
    Special,
    /// Bytes that are only part of a UTF-8 character; `text` holds them as `<E6 97>`.
    Bytes,
}

/// One vocabulary entry as the screen shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenView {
    pub id: u32,
    pub text: String,
    pub kind: TokenKind,
}

/// One row of a distribution: a candidate next token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub token: TokenView,
    /// Probability under the raw model (softmax of the logits, temperature 1).
    pub prob: f32,
    pub logprob: f32,
    /// Probability after the whole sampler chain (0 when a stage cut it).
    pub sampled_prob: f32,
    /// 0-based rank in the whole raw distribution (how many tokens the model finds likelier).
    #[serde(default)]
    pub rank: usize,
}

/// Sampler settings. Stages run in this order: penalties, DRY, temperature, top-k, top-p, min-p, then a
/// draw (llama.cpp's default order as far as these stages go).
///
/// DRY follows llama.cpp (`engine/sampler/dry.rs`): a token that would extend a sequence of `n >=
/// dry_allowed_length` tokens already seen in the window loses `dry_multiplier * dry_base^(n -
/// dry_allowed_length)` from its logit. Sequence breakers are mapped onto the vocabulary as llama.cpp
/// does: a token whose text contains a breaker stops every match and is never penalised; a token whose
/// text ends with the start of a breaker stops a match only when the tokens of the breaker's rest follow
/// it. Simplifications: none in the matching; llama.cpp's `-1` window is its context size, here it is the
/// whole token path (never longer than the context); and `validate` refuses an empty breaker or one over
/// 40 bytes, which llama.cpp skips or cuts with a warning. The DRY fields default when missing, so
/// settings saved before DRY existed still parse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplerSettings {
    /// Argmax of the penalised logits; no random draw.
    pub greedy: bool,
    pub temperature: f32,
    /// 0 turns top-k off.
    pub top_k: usize,
    /// 1.0 turns top-p off.
    pub top_p: f32,
    /// 0.0 turns min-p off.
    pub min_p: f32,
    /// 1.0 turns the repetition penalty off (CTRL-style: divide positive logits, multiply negative ones).
    pub repeat_penalty: f32,
    /// Subtracted once per earlier occurrence (OpenAI-style). 0 is off.
    pub frequency_penalty: f32,
    /// Subtracted once if the token occurred at all. 0 is off.
    pub presence_penalty: f32,
    /// How many recent tokens the penalties look at.
    pub penalty_last_n: usize,
    /// DRY strength; 0 turns DRY off (llama.cpp suggests 0.8).
    #[serde(default)]
    pub dry_multiplier: f32,
    /// How fast the DRY penalty grows with the length of the repeat.
    #[serde(default = "default_dry_base")]
    pub dry_base: f32,
    /// Repeats up to this many tokens long go unpenalised.
    #[serde(default = "default_dry_allowed_length")]
    pub dry_allowed_length: usize,
    /// How many recent tokens DRY scans: -1 the whole context, 0 turns DRY off.
    #[serde(default = "default_dry_penalty_last_n")]
    pub dry_penalty_last_n: i32,
    /// Texts that end a repeat for DRY (llama.cpp's defaults: newline, colon, double quote, asterisk).
    #[serde(default = "default_dry_sequence_breakers")]
    pub dry_sequence_breakers: Vec<String>,
    pub seed: u64,
}

fn default_dry_base() -> f32 {
    1.75
}

fn default_dry_allowed_length() -> usize {
    2
}

fn default_dry_penalty_last_n() -> i32 {
    -1
}

/// llama.cpp's default DRY sequence breakers.
pub fn default_dry_sequence_breakers() -> Vec<String> {
    ["\n", ":", "\"", "*"].map(String::from).to_vec()
}

impl Default for SamplerSettings {
    fn default() -> Self {
        Self {
            greedy: false,
            temperature: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.0,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            penalty_last_n: 64,
            dry_multiplier: 0.0,
            dry_base: default_dry_base(),
            dry_allowed_length: default_dry_allowed_length(),
            dry_penalty_last_n: default_dry_penalty_last_n(),
            dry_sequence_breakers: default_dry_sequence_breakers(),
            seed: 42,
        }
    }
}

/// The longest `dry_allowed_length` the settings accept.
pub const DRY_MAX_ALLOWED_LENGTH: usize = 20;
/// The widest `dry_penalty_last_n` the settings accept (beyond any context this app loads).
pub const DRY_MAX_LAST_N: i32 = 131_072;
/// The longest DRY sequence breaker, in bytes (llama.cpp cuts longer ones to this).
pub const DRY_MAX_BREAKER_BYTES: usize = 40;

impl SamplerSettings {
    /// Checks every setting against its valid range, shared by the command line and the sampler panel.
    /// The error names the setting as a flag would ("temperature 100 is out of range: ...").
    pub fn validate(&self) -> Result<(), String> {
        let checks: [(&str, f32, f32, f32, &str); 8] = [
            ("temperature", self.temperature, 0.0, 5.0, "0 means greedy"),
            ("top-p", self.top_p, 0.01, 1.0, "1 turns it off"),
            ("min-p", self.min_p, 0.0, 0.99, "0 turns it off"),
            (
                "repeat-penalty",
                self.repeat_penalty,
                1.0,
                3.0,
                "1 turns it off",
            ),
            (
                "frequency-penalty",
                self.frequency_penalty,
                -2.0,
                2.0,
                "0 turns it off",
            ),
            (
                "presence-penalty",
                self.presence_penalty,
                -2.0,
                2.0,
                "0 turns it off",
            ),
            (
                "dry-multiplier",
                self.dry_multiplier,
                0.0,
                5.0,
                "0 turns DRY off",
            ),
            (
                "dry-base",
                self.dry_base,
                1.0,
                5.0,
                "the penalty grows by this factor per repeated token",
            ),
        ];
        for (name, value, lo, hi, note) in checks {
            if !(lo..=hi).contains(&value) {
                return Err(format!(
                    "{name} {value} is out of range: use {lo} to {hi} ({note})"
                ));
            }
        }
        let ints: [(&str, i64, i64, i64, &str); 2] = [
            (
                "dry-allowed-length",
                self.dry_allowed_length as i64,
                1,
                DRY_MAX_ALLOWED_LENGTH as i64,
                "repeats this long go unpenalised",
            ),
            (
                "dry-penalty-last-n",
                self.dry_penalty_last_n as i64,
                -1,
                DRY_MAX_LAST_N as i64,
                "-1 means the whole context, 0 turns DRY off",
            ),
        ];
        for (name, value, lo, hi, note) in ints {
            if !(lo..=hi).contains(&value) {
                return Err(format!(
                    "{name} {value} is out of range: use {lo} to {hi} ({note})"
                ));
            }
        }
        for b in &self.dry_sequence_breakers {
            if b.is_empty() || b.len() > DRY_MAX_BREAKER_BYTES {
                return Err(format!(
                    "dry-sequence-breaker {b:?} is out of range: use 1 to {DRY_MAX_BREAKER_BYTES} bytes \
                     of text (\"none\" on the command line for no breakers)"
                ));
            }
        }
        Ok(())
    }
}

/// One stage of the sampler chain, as recorded for the screen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageReport {
    /// "raw", "penalties", "temperature", "top-k", "top-p", "min-p".
    pub name: String,
    /// Tokens still allowed after this stage.
    pub kept: usize,
    /// Probability (renormalised over the survivors) of each of the distribution's shown candidates, in
    /// the same order as `Distribution::candidates`; 0 where this stage cut it.
    pub probs: Vec<f32>,
    /// Mass of the *previous* stage's distribution that survived this stage (1.0 when nothing was cut).
    pub kept_mass: f32,
}

/// The random draw of a sampled step: a uniform number and where it landed in the cumulative distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Draw {
    pub u: f32,
    pub token_id: u32,
    /// Rank of the drawn token in the final (post-chain) distribution, 0-based.
    pub rank: usize,
}

/// A next-token distribution: what the model predicts at one position, and what the sampler would pick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// Absolute position the predicted token will take.
    pub position: usize,
    /// The top candidates by raw probability, best first.
    pub candidates: Vec<Candidate>,
    /// Shannon entropy of the raw distribution, in nats.
    pub entropy: f32,
    /// Raw probability of end-of-sequence (the largest over the model's EOS ids).
    pub eos_prob: f32,
    pub stages: Vec<StageReport>,
    /// The token the sampler chooses if the user just steps. In greedy mode `draw` is `None`.
    pub planned: TokenView,
    pub planned_prob: f32,
    pub draw: Option<Draw>,
}

/// How a committed token was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Prompt,
    Sampled,
    Greedy,
    /// Chosen by the user: a picked candidate, a vocabulary search hit, or typed text (teacher forcing).
    Forced,
}

/// A token that is part of the current path, with how surprised the model was by it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenRecord {
    pub token: TokenView,
    pub position: usize,
    pub source: Source,
    /// Raw probability the model gave this token at its position (1.0 for prompt tokens: not predicted).
    pub prob: f32,
    pub logprob: f32,
    /// 0-based rank in the raw distribution.
    pub rank: usize,
    pub entropy: f32,
}

/// Attention of the newest query rows over a window of recent positions, for every layer and head.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttentionWindow {
    /// Absolute position of the first row and first column.
    pub start: usize,
    /// Number of positions in the window (rows and columns).
    pub len: usize,
    pub n_layer: usize,
    pub n_head: usize,
    /// `weights[((layer * n_head + head) * len + row) * len + col]`; exactly 0 above the diagonal. Rows are
    /// the real softmax rows restricted to the window, so they sum to at most 1: the rest of each row's
    /// weight falls on the `start` keys before the window.
    pub weights: Vec<f32>,
    /// Each row's weight on the very first key (position 0), `first_key[(layer * n_head + head) * len +
    /// row]`, also when it lies before the window: the first token is often an "attention sink" that
    /// takes much of the weight, and hiding it would hide the most striking pattern.
    pub first_key: Vec<f32>,
}

impl AttentionWindow {
    pub fn get(&self, layer: usize, head: usize, row: usize, col: usize) -> f32 {
        self.weights[((layer * self.n_head + head) * self.len + row) * self.len + col]
    }
    /// Mean over heads of one layer.
    pub fn mean_heads(&self, layer: usize, row: usize, col: usize) -> f32 {
        let s: f32 = (0..self.n_head).map(|h| self.get(layer, h, row, col)).sum();
        s / self.n_head as f32
    }
    /// Weight of one row on key 0.
    pub fn first(&self, layer: usize, head: usize, row: usize) -> f32 {
        self.first_key[(layer * self.n_head + head) * self.len + row]
    }
    /// Weight of one row on the keys before the window (key 0 included): what the window hides.
    pub fn hidden(&self, layer: usize, head: usize, row: usize) -> f32 {
        let shown: f32 = (0..self.len).map(|c| self.get(layer, head, row, c)).sum();
        (1.0 - shown).max(0.0)
    }
}

/// Cost of reading the prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefillReport {
    pub tokens: usize,
    pub ms: f64,
    pub tok_per_s: f64,
    /// Time to first token: prefill plus the first sampling.
    pub ttft_ms: f64,
}

/// Cost of one forward pass and the state of the KV cache after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassReport {
    /// Tokens fed in this pass (1 for a decode step with the cache on; the whole sequence with it off).
    pub tokens_fed: usize,
    pub ms: f64,
    pub kv_len: usize,
    pub kv_bytes: usize,
    pub kv_cache_on: bool,
    /// Forward passes run since the model was loaded.
    pub forward_passes: u64,
}

/// What one step did: the token it committed, the pass that followed, and the next distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    /// Step number along the current path (0 = first generated token).
    pub step: usize,
    pub committed: TokenRecord,
    /// The distribution the committed token was chosen from.
    pub chosen_from: Distribution,
    pub pass: PassReport,
    pub next: Distribution,
    pub attention: AttentionWindow,
    /// The branch list after the step (the current branch grows with every step).
    pub branches: Vec<BranchInfo>,
}

/// One leaf of the branch tree, for the branch list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BranchInfo {
    pub id: usize,
    /// Generated tokens on this path (after the prompt).
    pub len: usize,
    /// Where it leaves the current path (absolute position of its first differing token).
    pub fork_position: usize,
    /// Mean log-prob of its generated tokens.
    pub mean_logprob: f32,
    /// The last characters of the branch's text.
    pub preview: String,
    /// The text just before the fork (shared with the current path), line breaks kept.
    pub before_fork: String,
    /// The branch's own text from the fork on (empty for the current path), line breaks kept.
    pub after_fork: String,
    pub current: bool,
}

/// The whole visible state of the session after a change that is not a single step (prefill, rewind,
/// branch switch, setting change, teacher forcing). The UI replaces its copy; a single step is folded in
/// with [`SessionView::apply`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    pub tokens: Vec<TokenRecord>,
    pub prompt_len: usize,
    pub next: Distribution,
    pub attention: AttentionWindow,
    pub last_pass: PassReport,
    pub prefill: PrefillReport,
    /// ms of each decode pass along the current path, oldest first, recorded at its step.
    pub decode_ms: Vec<f64>,
    /// Whether the KV cache was on for each of those passes.
    pub decode_kv: Vec<bool>,
    pub branches: Vec<BranchInfo>,
    pub settings: SamplerSettings,
}

/// Facts about the loaded model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub name: String,
    pub path: String,
    pub architecture: String,
    pub file_bytes: u64,
    pub n_layer: usize,
    pub n_head: usize,
    pub n_kv_head: usize,
    pub head_dim: usize,
    pub n_embd: usize,
    pub vocab_size: usize,
    pub context_length: usize,
    pub has_chat_template: bool,
    /// Tokens that end a sequence (autoplay stops at them).
    pub eos_ids: Vec<u32>,
    pub load_ms: f64,
}
