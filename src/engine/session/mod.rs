//! A generation session: a tree of tokens over one model. Step, force, rewind, branch and switch branch;
//! every step is recorded as plain data (`protocol::StepReport`).
//!
//! The current path runs from the first prompt token to the tip. The model has "fed" a prefix of it into
//! its KV cache; the logits for the position after the tip live on the tip node, so rewinding or switching
//! back to a node shows the same distribution as the first time without another forward pass.

mod feed;
mod view;

use super::gguf::LoadError;
use super::model::{AttentionRows, Model};
use super::sampler::{self, ChainOutput};
use super::tokenizer::Vocab;
use crate::protocol::*;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// Key columns of attention kept per position: the widest window a screen can ask for.
pub const ATTENTION_KEEP: usize = 64;
/// Nodes that keep their full logits row (~200 KB each for a 49k vocabulary); older ones recompute.
const LOGITS_KEEP: usize = 512;

#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Candidates per distribution.
    pub top_k_shown: usize,
    /// Positions in each report's attention window (at most `ATTENTION_KEEP`).
    pub attention_window: usize,
    pub kv_cache: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            top_k_shown: 10,
            attention_window: 24,
            kv_cache: true,
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
}

struct Node {
    token: u32,
    parent: usize,
    children: Vec<usize>,
    record: TokenRecord,
    /// Logits for the position after this node (its forward pass's output).
    logits: Option<Arc<Vec<f32>>>,
    /// This position's attention row over its last `attn_cols` keys, `[layer][head][col]`.
    attn: Arc<Vec<f32>>,
    attn_cols: usize,
    /// ms of the pass that fed this token.
    pass_ms: f64,
}

/// Errors a user can cause; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("the prompt is empty: type something for the model to continue")]
    EmptyPrompt,
    #[error(
        "the prompt is {tokens} tokens but the model's context holds {context}; shorten the prompt"
    )]
    PromptTooLong { tokens: usize, context: usize },
    #[error("the context is full ({0} tokens): rewind, or start a new prompt")]
    ContextFull(usize),
    #[error("no prompt yet: prefill one first")]
    NoPrompt,
    #[error("token id {0} is not in the vocabulary")]
    BadToken(u32),
    #[error("no branch with id {0}")]
    BadBranch(usize),
    #[error("this model has no chat template; turn chat mode off")]
    NoChatTemplate,
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("model error: {0}")]
    Model(#[from] candle_core::Error),
}

pub type Result<T> = std::result::Result<T, SessionError>;

pub struct Session {
    pub model: Model,
    pub vocab: Vocab,
    pub chat_template: Option<String>,
    settings: SamplerSettings,
    opts: SessionOptions,
    nodes: Vec<Node>,
    path: Vec<usize>,
    prompt_len: usize,
    fed: usize,
    with_logits: VecDeque<usize>,
    prefill: PrefillReport,
    last_pass: PassReport,
    last_attention: AttentionRows,
    /// The last chain run: (tip node, settings, (output, the logits it read)).
    chain_memo: Option<ChainMemo>,
}

type ChainMemo = (usize, SamplerSettings, (Arc<ChainOutput>, Arc<Vec<f32>>));

impl Session {
    pub fn new(
        model: Model,
        vocab: Vocab,
        settings: SamplerSettings,
        opts: SessionOptions,
    ) -> Self {
        let kv_cache_on = opts.kv_cache;
        Self {
            model,
            vocab,
            chat_template: None,
            settings,
            opts,
            nodes: Vec::new(),
            path: Vec::new(),
            prompt_len: 0,
            fed: 0,
            with_logits: VecDeque::new(),
            last_attention: AttentionRows::default(),
            chain_memo: None,
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
            },
        }
    }

    pub fn settings(&self) -> &SamplerSettings {
        &self.settings
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

    /// Tokenises and reads a prompt. Starts a new tree.
    pub fn prefill_text(&mut self, prompt: &str, chat: bool) -> Result<PrefillReport> {
        let text = self.render_prompt(prompt, chat)?;
        let ids = self.vocab.encode(&text)?;
        self.prefill_ids(&ids)
    }

    /// Reads prompt token ids in one forward pass (the parallel "reading" phase).
    pub fn prefill_ids(&mut self, ids: &[u32]) -> Result<PrefillReport> {
        let context = self.model.config.context_length;
        if ids.is_empty() {
            return Err(SessionError::EmptyPrompt);
        }
        if ids.len() >= context {
            return Err(SessionError::PromptTooLong {
                tokens: ids.len(),
                context,
            });
        }
        if let Some(&bad) = ids.iter().find(|&&t| t as usize >= self.model.vocab_size) {
            return Err(SessionError::BadToken(bad));
        }
        self.nodes.clear();
        self.with_logits.clear();
        self.path.clear();
        self.fed = 0;
        self.model.cache.clear();
        let mut parent = usize::MAX;
        for (pos, &t) in ids.iter().enumerate() {
            let record = TokenRecord {
                token: self.vocab.view(t),
                position: pos,
                source: Source::Prompt,
                prob: 1.0,
                logprob: 0.0,
                rank: 0,
                entropy: 0.0,
            };
            parent = self.push_node(parent, t, record);
        }
        self.prompt_len = ids.len();
        let pass = self.feed()?;
        let dist_start = Instant::now();
        self.chain()?;
        let ms = pass.ms;
        self.prefill = PrefillReport {
            tokens: ids.len(),
            ms,
            tok_per_s: ids.len() as f64 / (ms / 1e3),
            ttft_ms: ms + dist_start.elapsed().as_secs_f64() * 1e3,
        };
        Ok(self.prefill.clone())
    }

    /// The distribution for the next position, with the sampler's plan. No forward pass unless the tip's
    /// logits were dropped.
    pub fn distribution(&mut self) -> Result<Distribution> {
        let (out, logits) = self.chain()?;
        Ok(self.describe(&out, &logits))
    }

    /// Commits one token (the planned one, or a forced one), then runs the forward pass that feeds it.
    pub fn step(&mut self, choice: Choice) -> Result<StepReport> {
        let context = self.model.config.context_length;
        if self.path.len() >= context {
            return Err(SessionError::ContextFull(context));
        }
        let (out, logits) = self.chain()?;
        let chosen_from = self.describe(&out, &logits);
        let (token, source) = match choice {
            Choice::Sample if self.settings.greedy => (out.planned, Source::Greedy),
            Choice::Sample => (out.planned, Source::Sampled),
            Choice::Force(t) if (t as usize) < self.model.vocab_size => (t, Source::Forced),
            Choice::Force(t) => return Err(SessionError::BadToken(t)),
        };
        let record = TokenRecord {
            token: self.vocab.view(token),
            position: self.path.len(),
            source,
            prob: out.raw_prob(&logits, token),
            logprob: logits[token as usize] - out.lse,
            rank: sampler::rank_of(&logits, token),
            entropy: chosen_from.entropy,
        };
        let tip = *self.path.last().ok_or(SessionError::NoPrompt)?;
        let at_fork = !self.nodes[tip].children.is_empty();
        match self.nodes[tip]
            .children
            .iter()
            .find(|&&c| self.nodes[c].token == token)
        {
            Some(&child) => self.path.push(child),
            None => {
                self.push_node(tip, token, record);
            }
        }
        let pass = self.feed()?;
        let next = self.distribution()?;
        let committed = self.nodes[*self.path.last().unwrap()].record.clone();
        Ok(StepReport {
            step: self.generated() - 1,
            committed,
            chosen_from,
            pass,
            next,
            attention: self.window(),
            branches: at_fork.then(|| self.branches()),
        })
    }

    /// Tokenises `text` and teacher-forces each token in turn.
    pub fn force_text(&mut self, text: &str) -> Result<Vec<StepReport>> {
        let ids = self.vocab.encode(text)?;
        ids.into_iter()
            .map(|t| self.step(Choice::Force(t)))
            .collect()
    }

    /// Drops the last `n` generated tokens (never the prompt). The dropped path stays as a branch.
    pub fn rewind(&mut self, n: usize) -> Result<usize> {
        let n = n.min(self.generated());
        self.path.truncate(self.path.len() - n);
        self.fed = self.fed.min(self.path.len());
        Ok(n)
    }

    /// Makes the path to `leaf` current, re-feeding whatever the cache lacks.
    pub fn switch_branch(&mut self, leaf: usize) -> Result<()> {
        if leaf >= self.nodes.len()
            || self.nodes[leaf].record.source == Source::Prompt && leaf + 1 != self.prompt_len
        {
            return Err(SessionError::BadBranch(leaf));
        }
        let mut new_path = vec![leaf];
        while let Some(&n) = new_path.last() {
            if self.nodes[n].parent == usize::MAX {
                break;
            }
            new_path.push(self.nodes[n].parent);
        }
        new_path.reverse();
        let common = self
            .path
            .iter()
            .zip(&new_path)
            .take_while(|(a, b)| a == b)
            .count();
        self.fed = self.fed.min(common);
        self.path = new_path;
        if self.fed < self.path.len() {
            self.feed()?;
        }
        Ok(())
    }

    /// New sampler settings; the next distribution re-ranks with no forward pass.
    pub fn set_settings(&mut self, settings: SamplerSettings) {
        self.settings = settings;
    }

    /// With the cache off every pass re-reads the whole sequence, so its cost grows with length.
    pub fn set_kv_cache(&mut self, on: bool) {
        self.opts.kv_cache = on;
        if !on {
            self.model.cache.release();
            self.fed = 0;
        }
        self.last_pass.kv_cache_on = on;
    }

    pub fn kv_cache_on(&self) -> bool {
        self.opts.kv_cache
    }

    pub fn last_pass(&self) -> &PassReport {
        &self.last_pass
    }

    /// The full attention rows (every key) captured by the last forward pass.
    pub fn last_attention(&self) -> &AttentionRows {
        &self.last_attention
    }

    /// One vocabulary entry as a candidate at the current position (for search results).
    pub fn candidate(&mut self, id: u32) -> Result<Candidate> {
        let (out, logits) = self.chain()?;
        let token = self.vocab.view(id);
        let i = id as usize;
        let sampled_prob = out
            .shown
            .iter()
            .position(|&s| s == id)
            .map_or(0.0, |r| out.final_probs[r]);
        Ok(Candidate {
            token,
            prob: out.raw_prob(&logits, id),
            logprob: logits[i] - out.lse,
            sampled_prob,
        })
    }

    pub fn prefill_report(&self) -> &PrefillReport {
        &self.prefill
    }
}
