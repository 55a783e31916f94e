//! A generation session: a tree of tokens over one model. Step, force, rewind, branch and switch branch;
//! every step is recorded as plain data (`protocol::StepReport`).
//!
//! The current path runs from the first prompt token to the tip. The model has "fed" a prefix of it into
//! its KV cache; the logits for the position after the tip live on the tip node, so rewinding or switching
//! back to a node shows the same distribution as the first time without another forward pass.

use super::gguf::LoadError;
use super::model::{AttentionRows, ForwardOptions, Model};
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
        let start = Instant::now();
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
        let _ = start;
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
            prob: out.raw_probs[token as usize],
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
            prob: out.raw_probs[i],
            logprob: logits[i] - out.lse,
            sampled_prob,
        })
    }

    pub fn prefill_report(&self) -> &PrefillReport {
        &self.prefill
    }

    fn push_node(&mut self, parent: usize, token: u32, record: TokenRecord) -> usize {
        let id = self.nodes.len();
        self.nodes.push(Node {
            token,
            parent,
            children: Vec::new(),
            record,
            logits: None,
            attn: Arc::new(Vec::new()),
            attn_cols: 0,
            pass_ms: 0.0,
        });
        if parent != usize::MAX {
            self.nodes[parent].children.push(id);
        }
        self.path.push(id);
        id
    }

    /// Runs the forward pass that brings the model up to the tip, storing the tip's logits and each fed
    /// position's attention row.
    fn feed(&mut self) -> Result<PassReport> {
        let len = self.path.len();
        if !self.opts.kv_cache {
            self.fed = 0;
        }
        if self.fed >= len {
            // Everything is cached but the tip's logits were dropped: re-feed the tip alone.
            self.fed = len - 1;
        }
        let tokens: Vec<u32> = self.path[self.fed..]
            .iter()
            .map(|&n| self.nodes[n].token)
            .collect();
        let capture = ATTENTION_KEEP.min(tokens.len());
        let out = self.model.forward(
            &tokens,
            self.fed,
            ForwardOptions {
                capture_rows: capture,
                all_logits: false,
            },
        )?;
        let a = &out.attention;
        let heads = self.model.config.n_layer * self.model.config.n_head;
        for r in 0..a.rows {
            let pos = a.first_row + r;
            let cols = (pos + 1).min(ATTENTION_KEEP);
            let first_col = pos + 1 - cols;
            let mut row = Vec::with_capacity(heads * cols);
            for lh in 0..heads {
                let base = (lh * a.rows + r) * a.kv_len;
                row.extend_from_slice(&a.data[base + first_col..base + pos + 1]);
            }
            let node = &mut self.nodes[self.path[pos]];
            node.attn = Arc::new(row);
            node.attn_cols = cols;
            node.pass_ms = out.ms;
        }
        let tip = self.path[len - 1];
        self.nodes[tip].logits = Some(Arc::new(out.logits));
        self.last_attention = out.attention;
        self.with_logits.push_back(tip);
        while self.with_logits.len() > LOGITS_KEEP {
            let old = self.with_logits.pop_front().unwrap();
            if old + 1 != self.prompt_len && !self.path.last().is_some_and(|&t| t == old) {
                self.nodes[old].logits = None;
            }
        }
        self.fed = len;
        let on = self.opts.kv_cache;
        if !on {
            self.model.cache.clear();
            self.fed = 0;
        }
        self.last_pass = PassReport {
            tokens_fed: tokens.len(),
            ms: out.ms,
            kv_len: if on { self.model.cache.len() } else { 0 },
            kv_bytes: if on { self.model.cache.bytes() } else { 0 },
            kv_cache_on: on,
            forward_passes: self.model.forward_passes(),
        };
        Ok(self.last_pass.clone())
    }

    /// The tip's logits (re-fed if they were dropped) run through the sampler chain. Memoised per tip and
    /// settings: a step reuses the chain its previous report already ran.
    fn chain(&mut self) -> Result<(Arc<ChainOutput>, Arc<Vec<f32>>)> {
        let tip = *self.path.last().ok_or(SessionError::NoPrompt)?;
        if self.nodes[tip].logits.is_none() {
            self.feed()?;
        }
        let logits = self.nodes[tip].logits.clone().expect("fed");
        if let Some((t, settings, out)) = &self.chain_memo {
            if *t == tip && *settings == self.settings && Arc::ptr_eq(&out.1, &logits) {
                return Ok((out.0.clone(), logits));
            }
        }
        let history = self.tokens();
        let u = sampler::uniform(self.settings.seed, self.path.len());
        let out = Arc::new(sampler::run_chain(
            &logits,
            &history,
            &self.settings,
            self.opts.top_k_shown,
            u,
        ));
        self.chain_memo = Some((tip, self.settings.clone(), (out.clone(), logits.clone())));
        Ok((out, logits))
    }

    fn describe(&self, out: &ChainOutput, logits: &[f32]) -> Distribution {
        let candidates = out
            .shown
            .iter()
            .zip(&out.final_probs)
            .map(|(&id, &fp)| Candidate {
                token: self.vocab.view(id),
                prob: out.raw_probs[id as usize],
                logprob: logits[id as usize] - out.lse,
                sampled_prob: fp,
            })
            .collect();
        let eos_prob = self
            .vocab
            .eos_ids()
            .iter()
            .filter_map(|&e| out.raw_probs.get(e as usize))
            .cloned()
            .fold(0.0, f32::max);
        Distribution {
            position: self.path.len(),
            candidates,
            entropy: out.entropy,
            eos_prob,
            stages: out.stages.clone(),
            planned: self.vocab.view(out.planned),
            planned_prob: out.planned_prob,
            draw: out.draw.clone(),
        }
    }

    /// Attention over the last `attention_window` positions, every layer and head.
    pub fn window(&self) -> AttentionWindow {
        let c = &self.model.config;
        let len = self
            .opts
            .attention_window
            .min(ATTENTION_KEEP)
            .min(self.path.len());
        let start = self.path.len() - len;
        let heads = c.n_layer * c.n_head;
        let mut weights = vec![0f32; heads * len * len];
        for r in 0..len {
            let pos = start + r;
            let node = &self.nodes[self.path[pos]];
            let first_col = pos + 1 - node.attn_cols;
            for lh in 0..heads {
                for col in 0..=r {
                    let key = start + col;
                    if key >= first_col && node.attn_cols > 0 {
                        weights[(lh * len + r) * len + col] =
                            node.attn[lh * node.attn_cols + key - first_col];
                    }
                }
            }
        }
        AttentionWindow {
            start,
            len,
            n_layer: c.n_layer,
            n_head: c.n_head,
            weights,
        }
    }

    /// Leaves of the tree below the prompt: the branches a user can switch to.
    pub fn branches(&self) -> Vec<BranchInfo> {
        let tip = self.path.last().copied();
        let mut out = Vec::new();
        for (id, node) in self.nodes.iter().enumerate() {
            if !node.children.is_empty()
                || (node.record.source == Source::Prompt && Some(id) != tip)
            {
                continue;
            }
            let mut path = vec![id];
            while self.nodes[*path.last().unwrap()].parent != usize::MAX {
                path.push(self.nodes[*path.last().unwrap()].parent);
            }
            path.reverse();
            let fork = path
                .iter()
                .zip(&self.path)
                .take_while(|(a, b)| a == b)
                .count();
            let generated: Vec<&Node> = path[self.prompt_len.min(path.len())..]
                .iter()
                .map(|&n| &self.nodes[n])
                .collect();
            let mean_logprob = if generated.is_empty() {
                0.0
            } else {
                generated.iter().map(|n| n.record.logprob).sum::<f32>() / generated.len() as f32
            };
            let ids: Vec<u32> = generated.iter().map(|n| n.token).collect();
            let text = self.vocab.decode(&ids);
            let preview: String = text
                .chars()
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            out.push(BranchInfo {
                id,
                len: generated.len(),
                fork_position: fork,
                mean_logprob,
                preview,
                current: path == self.path,
            });
        }
        out
    }

    /// Everything the UI shows, for a full refresh.
    pub fn view(&mut self) -> Result<SessionView> {
        let next = self.distribution()?;
        Ok(SessionView {
            tokens: self
                .path
                .iter()
                .map(|&n| self.nodes[n].record.clone())
                .collect(),
            prompt_len: self.prompt_len,
            next,
            attention: self.window(),
            last_pass: self.last_pass.clone(),
            prefill: self.prefill.clone(),
            decode_ms: self.path[self.prompt_len..]
                .iter()
                .map(|&n| self.nodes[n].pass_ms)
                .collect(),
            branches: self.branches(),
            settings: self.settings.clone(),
        })
    }
}
