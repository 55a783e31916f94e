//! The reports: plain, owned data describing tokens, distributions, attention, timings and the session.

use super::{AttentionWindow, SamplerSettings};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

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
    /// Probability after the whole sampler chain (0 when a stage cut it); greedy takes the top row for
    /// certain, so then 1 for it and 0 for every other.
    pub sampled_prob: f32,
    /// 0-based rank in the whole raw distribution (how many tokens the model finds likelier).
    #[serde(default)]
    pub rank: usize,
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
    /// When the path ends in a loop, the token that would go on with it, before and after the chain,
    /// wherever it ranks (the penalties may push it far below the candidates shown).
    #[serde(default)]
    pub loop_next: Option<TokenFate>,
    /// The model's own most likely token (raw rank 0) when the penalties or DRY moved it off the
    /// sampler's first row, with its fate in the chain: the candidates are in the sampler's order, so
    /// it may be far below them. `None` when the sampler's first candidate is the model's first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_top: Option<TokenFate>,
    /// A served model (`--server`) reports only its top candidates: the probability mass they cover
    /// (the rest of the vocabulary is unknown, and the chain runs on these alone). `None` for a local
    /// model, whose whole row is known.
    #[serde(default)]
    pub known_mass: Option<f32>,
}

/// One token's figures wherever it ranks: raw probability and rank, and what the sampler makes of it
/// (ranks 0-based; `sampled_prob` 0 when a cut-off drops it). The loop-continuing token's, and the
/// model's first when a penalty moved it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenFate {
    pub token: TokenView,
    pub prob: f32,
    pub rank: usize,
    pub sampled_prob: f32,
    pub sampled_rank: usize,
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
    /// Chosen by the class (class mode, `C`): its most popular guess, forced.
    Class,
}

impl Source {
    /// Whether a person chose the token (the user or the class), not the sampler: what the views mark
    /// as forced and what a stop rule and a replay treat as a deliberate choice.
    pub fn by_hand(self) -> bool {
        matches!(self, Source::Forced | Source::Class)
    }
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
    /// Forward passes run for text since the model was loaded (`Model::forward_passes`: the passes
    /// that only time the machine are not counted).
    pub forward_passes: u64,
    /// A served model's request: then `ms` is the time across the network, not compute alone.
    #[serde(default)]
    pub served: Option<super::ServedTiming>,
}

/// What one step did: the token it committed, the pass that followed, and the next distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    /// Step number along the current path (0 = first generated token).
    pub step: usize,
    pub committed: TokenRecord,
    /// The distribution the committed token was chosen from: the very one the step before reported
    /// as `next`, which the session also keeps on the token (a step copies no distribution).
    pub chosen_from: Arc<Distribution>,
    pub pass: PassReport,
    pub next: Arc<Distribution>,
    pub attention: AttentionWindow,
    /// The branch list after the step (the current branch grows with every step).
    pub branches: Vec<BranchInfo>,
    /// Model B along the path after the step, when one is loaded (`--model-b`, `--requant-b`).
    #[serde(default)]
    pub ab: Option<super::AbView>,
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
    /// How many of its generated tokens the class chose (class mode, `C`).
    #[serde(default)]
    pub class_choices: usize,
    /// Its own first token (at the fork) was chosen by hand (forced, or the class's): the list marks it
    /// ⚑ as the transcript does.
    #[serde(default)]
    pub forced_at_fork: bool,
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
    /// Whether each of those tokens came from a speculative round: then its `decode_ms` is the round's
    /// time shared among the tokens it wrote, not one decode step's.
    #[serde(default)]
    pub decode_round: Vec<bool>,
    pub branches: Vec<BranchInfo>,
    pub settings: SamplerSettings,
    /// The prompt as it was typed, and whether it went through the chat template, when the session
    /// knows it (a loaded session, a lesson's prompt); `None` for a tree built from ids.
    #[serde(default)]
    pub typed_prompt: Option<(String, bool)>,
    /// Forward passes run before this prompt was read: the status bar counts the passes since
    /// (`last_pass.forward_passes` minus this), so reading a prompt again (a lesson gone back to its
    /// first step) shows "passes 1" beside "the one pass", not the passes of the text before.
    #[serde(default)]
    pub passes_before_prompt: u64,
    /// Model B along the current path, when one is loaded (`--model-b`, `--requant-b`); the engine
    /// thread adds it to each view it sends.
    #[serde(default)]
    pub ab: Option<super::AbView>,
    /// The distribution the last token was chosen from, as its step described it (the chain and the
    /// draw): "the last draw" a lesson can show. `None` at the prompt or for a loaded token.
    #[serde(default)]
    pub last_choice: Option<Distribution>,
    /// The class's answers kept in the session file this tree was loaded from (`--load`), for the app
    /// to take back; empty for a tree read from a prompt. The app keeps the answers given since.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<super::ClassAnswer>,
    /// The draft of speculative decoding loaded in the session (`--draft`, or a lesson's `draft`).
    #[serde(default)]
    pub draft: Option<super::DraftInfo>,
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
    /// Per layer, a sliding-window layer's window (its queries see only the newest `w` keys, their
    /// own included) or `None` for a layer that sees every earlier key. Empty: every layer sees all.
    #[serde(default)]
    pub windows: Vec<Option<usize>>,
    /// The server, when the model is served (`--server`): then there are no attention weights, no
    /// logit lens and no head map, and `n_layer`/`n_head` are 0.
    #[serde(default)]
    pub served: Option<super::ServedInfo>,
    /// This machine's speed of light for this model, measured at load (`None` for a served model).
    #[serde(default)]
    pub machine: Option<MachineSpeed>,
    /// The local model's KV cache holds `f16` (`--kv f16`), not `f32`: half its bytes, and figures a
    /// rounding away from the default's.
    #[serde(default)]
    pub kv_f16: bool,
}

/// What bounds a pass here: memory bandwidth for a one-token step (every weight and the KV cache at
/// its depth stream from memory), arithmetic for a prefill. Measured once at load (`engine/machine.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineSpeed {
    /// Streaming read bandwidth, GB/s, of a buffer the size of the model.
    pub bandwidth_gb_s: f64,
    /// That buffer fits in the CPU's last-level cache, so the figure is the cache's, as a step's
    /// weights come from it too (some servers' L3 holds hundreds of MiB); a laptop's reads memory.
    #[serde(default)]
    pub from_cache: bool,
    /// Bytes of weights a one-token pass reads (every matrix, the output head).
    pub weight_bytes: usize,
    /// Bytes of KV cache per cached position (keys and values, every layer, at the cache's precision).
    pub kv_bytes_per_position: usize,
    /// FLOP of the matrices per token, and of attention per query per key.
    pub matmul_flop_per_token: f64,
    pub attention_flop_per_key: f64,
    /// GFLOP/s of the model's own kernels on a pass of 64 tokens, the best of three.
    pub peak_gflops: f64,
}

impl MachineSpeed {
    /// Bytes a one-token pass at `position` reads: the weights, and the keys and values of every
    /// earlier position.
    pub fn step_bytes(&self, position: usize) -> (usize, usize) {
        (self.weight_bytes, self.kv_bytes_per_position * position)
    }

    /// The fastest such a pass could be: its bytes over the bandwidth, in ms.
    pub fn step_floor_ms(&self, position: usize) -> f64 {
        let (w, kv) = self.step_bytes(position);
        (w + kv) as f64 / (self.bandwidth_gb_s * 1e9) * 1e3
    }

    /// FLOP of a pass over `tokens` tokens from position `from`.
    pub fn pass_flop(&self, tokens: usize, from: usize) -> f64 {
        let keys: usize = (from..from + tokens).map(|p| p + 1).sum();
        self.matmul_flop_per_token * tokens as f64 + self.attention_flop_per_key * keys as f64
    }
}

impl ModelInfo {
    /// Layer `layer`'s sliding window, if it has one.
    pub fn window(&self, layer: usize) -> Option<usize> {
        self.windows.get(layer).copied().flatten()
    }
}
