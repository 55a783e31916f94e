//! A generation session: a tree of tokens over one model. Step, force, rewind, branch and switch branch;
//! every step is recorded as plain data (`protocol::StepReport`).
//!
//! The current path runs from the first prompt token to the tip. The model has "fed" a prefix of it into
//! its KV cache; the logits for the position after the tip live on the tip node, so rewinding or switching
//! back to a node shows the same distribution as the first time without another forward pass.
//!
//! Every command that changes the tree is atomic (`edit.rs` over `atomic.rs`): it either succeeds or leaves the session as
//! it was, so a front end can promise "the session is unchanged" after a failure.

mod atomic;
mod draft_slot;
mod edit;
mod error;
mod feed;
mod generate;
mod guess;
mod inspect;
mod lab;
mod measure;
mod save;
mod speculate;
mod view;

pub use error::SessionError;
pub use generate::Written;
pub use inspect::LENS_TOP;
pub use speculate::ResidualRule;
pub use view::NewestAttention;

use super::backend::Backend;
use super::forward::kv_cache::KvPrecision;
use super::forward::model::{AttentionRows, Model};
use super::sampler::{ChainOutput, DryBreakers};
use super::session_file::SavedPass;
use super::tokenizer::Vocab;
use crate::protocol::*;
use std::collections::VecDeque;
use std::sync::Arc;

/// Key columns of attention kept per position: the widest window a screen can ask for.
pub const ATTENTION_KEEP: usize = 64;
/// Bytes of full logits rows a session keeps on its newest nodes, so a rewound step shows its
/// distribution at once; older rows are recomputed (one pass) when visited again. 170 rows of
/// SmolLM2's 49,152 logits, 32 of Gemma 3's 262,144. They are written once before the first step
/// and reused from then on (`forward/spare_rows.rs`).
const LOGITS_BYTES: usize = 32 << 20;

/// Logits rows kept for a vocabulary of `vocab`: `LOGITS_BYTES`' worth, 16 to 512.
pub(super) fn logits_keep(vocab: usize) -> usize {
    (LOGITS_BYTES / (4 * vocab.max(1))).clamp(16, 512)
}

#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Candidates per distribution.
    pub top_k_shown: usize,
    /// Positions in each report's attention window (at most `ATTENTION_KEEP`).
    pub attention_window: usize,
    pub kv_cache: bool,
    /// Prompt tokens per pass when a prompt is read: a long prompt goes in chunks, so that progress
    /// can be shown and the read cancelled between them.
    pub prefill_chunk: usize,
    /// What a local model's KV cache stores: `F32` (candle's bits) or `F16` (half the bytes).
    pub kv_precision: KvPrecision,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            top_k_shown: 10,
            attention_window: 24,
            kv_cache: true,
            prefill_chunk: 256,
            kv_precision: KvPrecision::F32,
        }
    }
}

/// How the next token is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The sampler's planned token (greedy or the seeded draw).
    Sample,
    /// A token the user chose.
    Force(u32),
    /// The class's most popular guess (class mode): marked as the class's choice.
    Class(u32),
}

#[derive(Debug, Clone)]
struct Node {
    token: u32,
    /// `None` for the first prompt token, the root of the tree.
    parent: Option<usize>,
    children: Vec<usize>,
    record: TokenRecord,
    /// Logits for the position after this node (its forward pass's output).
    logits: Option<Arc<Vec<f32>>>,
    /// This position's attention row over its last `attn_cols` keys, `[layer][head][col]`.
    attn: Arc<Vec<f32>>,
    attn_cols: usize,
    /// This position's weight on key 0, `[layer][head]` (the attention sink, kept when it is older than
    /// the last `attn_cols` keys).
    attn_first: Arc<Vec<f32>>,
    /// The pass that fed this token at its step (its ms, whether the KV cache was on, whether a round
    /// wrote it). Recorded once: a later re-feed (cache off, branch switch, cache rebuild) does not
    /// rewrite history.
    pass: Option<SavedPass>,
    /// The distribution this token was chosen from, as its step described it (the chain, the draw):
    /// what "the last draw" shows. `None` for prompt tokens and tokens loaded from a file.
    chosen: Option<Arc<crate::protocol::Distribution>>,
    /// The sampler settings a sampled or greedy token was chosen under (a replay needs them, and they
    /// may change between steps); `None` for prompt tokens and tokens chosen by hand.
    settings: Option<Arc<SamplerSettings>>,
}

pub type Result<T> = std::result::Result<T, SessionError>;

/// An existing node an edit changed: its id, record and step pass before the change.
type Undo = (usize, TokenRecord, Option<SavedPass>);

/// The last sampler chain run: which tip, under which settings, over which logits.
struct ChainMemo {
    tip: usize,
    settings: SamplerSettings,
    out: Arc<ChainOutput>,
    logits: Arc<Vec<f32>>,
    /// The chain's output described for a report (kept once made: a step describes the distribution
    /// its previous report already showed).
    described: Option<Arc<Distribution>>,
}

pub struct Session {
    model: Backend,
    vocab: Vocab,
    chat_template: Option<String>,
    settings: SamplerSettings,
    opts: SessionOptions,
    nodes: Vec<Node>,
    path: Vec<usize>,
    prompt_len: usize,
    /// Positions of the current path whose keys and values are in the model's KV cache.
    fed: usize,
    /// The lowest position a forward pass started from during the current edit (see `atomic.rs`).
    fed_floor: usize,
    with_logits: VecDeque<usize>,
    prefill: PrefillReport,
    last_pass: PassReport,
    last_attention: Arc<AttentionRows>,
    chain_memo: Option<ChainMemo>,
    /// The newest pass's row (held weakly: only to know it again) and its block maxima.
    fresh_maxima: Option<feed::FreshMaxima>,
    /// The DRY sequence breakers mapped onto the vocabulary, for the breaker texts they were built from:
    /// built the first time DRY runs, again only if the texts change (see `feed.rs`).
    dry_breakers: Option<(Vec<String>, Arc<DryBreakers>)>,
    /// Existing nodes an edit in progress has changed, with what they held before (see `atomic.rs`).
    undo: Vec<Undo>,
    /// Test hook: the forward pass with this count fails after it ran (see `inject_fault`).
    fault_at_pass: Option<u64>,
    /// The model file, the prompt as typed, and loaded candidates, for saving (`save.rs`).
    save: save::SaveState,
    /// The server, when the model is served (`--server`).
    served: Option<ServedInfo>,
    /// The draft of speculative decoding, when one is loaded (`speculate.rs`).
    draft: Option<super::draft::Draft>,
    /// Speculative rounds run in this session.
    rounds: usize,
    /// The rounds since the draft was loaded, added up (`speculate.rs`).
    tally: crate::analysis::speculation::Tally,
    /// Every round since the prompt was read, for the saved session and the handout.
    round_log: Vec<RoundReport>,
    /// This machine's speed of light, once measured (`measure_machine`), for the handout.
    machine: Option<MachineSpeed>,
    /// Seconds spent timing rounds' plain steps (`speculate.rs`), which `bench --draft` takes out of
    /// the speculative run's clock: they are the measure, not the method.
    plain_timing_s: f64,
    /// Forward passes run before the current prompt was read (`SessionView::passes_before_prompt`).
    passes_before_prompt: u64,
}

impl Session {
    pub fn new(
        model: Model,
        vocab: Vocab,
        chat_template: Option<String>,
        settings: SamplerSettings,
        opts: SessionOptions,
    ) -> Self {
        Self::with_backend(
            Backend::Local(Box::new(model)),
            vocab,
            chat_template,
            settings,
            opts,
        )
    }

    /// A session over any backend: the local model or a served one.
    pub fn with_backend(
        mut model: Backend,
        vocab: Vocab,
        chat_template: Option<String>,
        settings: SamplerSettings,
        opts: SessionOptions,
    ) -> Self {
        let kv_cache_on = opts.kv_cache;
        let keep = logits_keep(model.vocab_size());
        if let Some(m) = model.local_mut() {
            m.set_kv_precision(opts.kv_precision);
            // Every kept row, the prompt's last (kept for good) and the one the next pass writes.
            m.ready_rows(keep + 2);
        }
        Self {
            model,
            vocab,
            chat_template,
            settings,
            opts,
            nodes: Vec::new(),
            path: Vec::new(),
            prompt_len: 0,
            fed: 0,
            fed_floor: 0,
            with_logits: VecDeque::new(),
            last_attention: Arc::new(AttentionRows::default()),
            chain_memo: None,
            fresh_maxima: None,
            dry_breakers: None,
            undo: Vec::new(),
            fault_at_pass: None,
            save: Default::default(),
            served: None,
            draft: None,
            rounds: 0,
            tally: Default::default(),
            round_log: Vec::new(),
            machine: None,
            plain_timing_s: 0.0,
            passes_before_prompt: 0,
            prefill: PrefillReport {
                tokens: 0,
                ms: 0.0,
                tok_per_s: 0.0,
                ttft_ms: 0.0,
            },
            last_pass: PassReport {
                tokens_fed: 0,
                ms: 0.0,
                kv_len: 0,
                kv_bytes: 0,
                kv_cache_on,
                forward_passes: 0,
                served: None,
            },
        }
    }

    pub fn settings(&self) -> &SamplerSettings {
        &self.settings
    }

    /// Forward passes run since the model was loaded.
    pub fn forward_passes(&self) -> u64 {
        self.model.forward_passes()
    }

    /// Whether the model is served (`--server`): no attention, no logit lens, no head map.
    /// Every id of the vocabulary as the screen shows it (class mode's room looks guesses up in it).
    pub fn vocabulary(&self) -> Vec<crate::protocol::TokenView> {
        self.vocab.table()
    }

    pub fn is_served(&self) -> bool {
        self.model.is_served()
    }

    /// The server a served session steps (kind, address, model, K), for the trace to record.
    pub fn served(&self) -> Option<&ServedInfo> {
        self.served.as_ref()
    }

    /// Records which server this session steps (set once when it connects).
    pub fn set_served(&mut self, info: ServedInfo) {
        self.served = Some(info);
    }

    /// The local model (`None` when served), for what only it can do (the A/B twin).
    pub fn local_model(&self) -> Option<&Model> {
        self.model.local()
    }

    pub fn tokens(&self) -> Vec<u32> {
        self.path.iter().map(|&n| self.nodes[n].token).collect()
    }

    pub fn len(&self) -> usize {
        self.path.len()
    }

    pub fn is_empty(&self) -> bool {
        self.path.is_empty()
    }

    pub fn prompt_len(&self) -> usize {
        self.prompt_len
    }

    pub fn generated(&self) -> usize {
        self.path.len() - self.prompt_len
    }

    pub fn kv_cache_on(&self) -> bool {
        self.opts.kv_cache
    }

    /// Tokenises text the way the model reads it.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.vocab.encode(text)?)
    }

    /// The text of `ids` as another model reads it: the bytes of every token (a special one by its
    /// name), leaving out the BOS this model's tokenizer put first.
    pub fn text_of(&self, ids: &[u32]) -> String {
        let skip =
            usize::from(self.vocab.adds_bos() && ids.first() == self.vocab.bos_id().as_ref());
        self.vocab.decode(&ids[skip..])
    }

    /// One vocabulary entry as the screen shows it.
    pub fn token_view(&self, id: u32) -> TokenView {
        self.vocab.view(id)
    }

    /// Whether `id` ends a sequence.
    pub fn is_eos(&self, id: u32) -> bool {
        self.vocab.eos_ids().contains(&id)
    }

    /// The text of a prompt as the model will read it (through the chat template when `chat`).
    pub fn render_prompt(&self, prompt: &str, chat: bool) -> Result<String> {
        if !chat {
            return Ok(prompt.to_string());
        }
        let tpl = self
            .chat_template
            .as_deref()
            .ok_or(SessionError::NoChatTemplate)?;
        let bos = self
            .vocab
            .bos_id()
            .map(|b| self.vocab.view(b).text)
            .unwrap_or_default();
        let eos = self
            .vocab
            .eos_ids()
            .first()
            .map(|&e| self.vocab.view(e).text)
            .unwrap_or_default();
        Ok(super::chat::render_chat(tpl, prompt, &bos, &eos)?)
    }

    /// Fault injection for tests: the `n`-th forward pass from now fails just after it has written the
    /// KV cache, the harshest point for an edit to be undone. Lets tests hold "a failure leaves the
    /// session unchanged" to account.
    #[doc(hidden)]
    pub fn inject_fault(&mut self, n: u64) {
        self.fault_at_pass = Some(self.model.forward_passes() + n.max(1));
    }
}
