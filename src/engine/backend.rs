//! The seam between a session and what computes its logits: our own local forward pass (`Model`), or
//! a model served by llama.cpp's server or vLLM (`served/`). The session asks both the same thing (feed
//! these tokens at this position, give the next logits); only the local model also gives attention
//! rows and the logit lens.
//!
//! A served model keeps no state between requests, so its "KV cache" here is the list of token ids the
//! session has fed: every request sends the whole path up to the new tip (the server's own prompt cache
//! makes that cheap). Its logits row holds the K candidates' log-probabilities and `UNKNOWN_LOGIT`
//! everywhere else: the tail beyond K is not known, and the sampler chain runs on the K alone.

use super::forward::config::LlamaConfig;
use super::forward::model::{AttentionRows, ForwardOptions, ForwardOutput, Model};
use super::served::{Client, SERVED_TOP_K};
use super::session::{Result, SessionError};
use super::tokenizer::LearntPieces;
use crate::protocol::ServedTiming;
use std::sync::Arc;

/// The logit a served row gives every token beyond its top K: not minus infinity (the row maths would
/// meet `0 * inf`), but so low that its probability is exactly 0 in f32.
pub const UNKNOWN_LOGIT: f32 = -1.0e4;

pub enum Backend {
    Local(Box<Model>),
    Served(Box<ServedModel>),
}

/// A model on a server, stepped one request at a time.
pub struct ServedModel {
    pub client: Arc<Client>,
    /// Only `context_length` is meaningful (the server's context); the model's shape is unknown here.
    pub config: LlamaConfig,
    pub vocab_size: usize,
    /// The ids fed so far: what the local model's KV cache would hold.
    fed: Vec<u32>,
    passes: u64,
    learnt: LearntPieces,
    last_timing: Option<ServedTiming>,
}

impl ServedModel {
    pub fn new(client: Arc<Client>, config: LlamaConfig, learnt: LearntPieces) -> Self {
        Self {
            vocab_size: client.n_vocab,
            client,
            config,
            fed: Vec::new(),
            passes: 0,
            learnt,
            last_timing: None,
        }
    }

    /// One request: the top K after `ids`, as a logits row over the whole vocabulary.
    fn row(&mut self, ids: &[u32]) -> Result<(Vec<f32>, ServedTiming)> {
        let top = self.client.top_k(ids, SERVED_TOP_K)?;
        let mut row = vec![UNKNOWN_LOGIT; self.vocab_size];
        let mut learnt = self.learnt.lock().unwrap_or_else(|p| p.into_inner());
        for c in &top.candidates {
            let slot = row.get_mut(c.id as usize).ok_or_else(|| {
                SessionError::Internal(format!(
                    "the server named token {} but its vocabulary has {} tokens",
                    c.id, self.vocab_size
                ))
            })?;
            *slot = c.logprob.max(UNKNOWN_LOGIT);
            if let Some(b) = c.bytes.as_ref().filter(|b| !b.is_empty()) {
                learnt.entry(c.id).or_insert_with(|| b.clone());
            }
        }
        Ok((row, top.timing))
    }

    fn forward(
        &mut self,
        tokens: &[u32],
        index_pos: usize,
        opts: ForwardOptions,
    ) -> Result<ForwardOutput> {
        if opts.lens {
            return Err(SessionError::NotServed("the logit lens"));
        }
        if tokens.is_empty() {
            return Err(SessionError::Internal(
                "forward needs at least one token".into(),
            ));
        }
        if index_pos > self.fed.len() {
            return Err(SessionError::Internal(format!(
                "the served path holds {} positions, expected {index_pos}",
                self.fed.len()
            )));
        }
        let mut path = self.fed[..index_pos].to_vec();
        path.extend_from_slice(tokens);
        // Teacher forcing asks for every fed position's logits: one request per position.
        let first = if opts.all_logits {
            index_pos + 1
        } else {
            path.len()
        };
        let mut logits = Vec::new();
        let mut ms = 0.0;
        let mut timing = ServedTiming::default();
        for end in first..=path.len() {
            let (row, t) = self.row(&path[..end])?;
            self.passes += 1;
            logits.extend(row);
            ms += t.request_ms;
            timing = t;
        }
        timing.request_ms = ms;
        // Only a whole success changes what is "fed": a failed request leaves it as it was.
        self.fed = path;
        self.last_timing = Some(timing);
        Ok(ForwardOutput {
            logits,
            attention: AttentionRows::default(),
            lens: Vec::new(),
            block_maxima: Vec::new(),
            ms,
        })
    }
}

impl Backend {
    pub fn config(&self) -> &LlamaConfig {
        match self {
            Backend::Local(m) => &m.config,
            Backend::Served(s) => &s.config,
        }
    }

    pub fn vocab_size(&self) -> usize {
        match self {
            Backend::Local(m) => m.vocab_size,
            Backend::Served(s) => s.vocab_size,
        }
    }

    pub fn is_served(&self) -> bool {
        matches!(self, Backend::Served(_))
    }

    /// The local model, for what only it can show (the logit lens, the head map, the A/B twin).
    pub fn local(&self) -> Option<&Model> {
        match self {
            Backend::Local(m) => Some(m),
            Backend::Served(_) => None,
        }
    }

    /// The local model, mutably (to measure this machine with it).
    pub fn local_mut(&mut self) -> Option<&mut Model> {
        match self {
            Backend::Local(m) => Some(m),
            Backend::Served(_) => None,
        }
    }

    /// Forward passes (requests, for a served model) since loading.
    pub fn forward_passes(&self) -> u64 {
        match self {
            Backend::Local(m) => m.forward_passes(),
            Backend::Served(s) => s.passes,
        }
    }

    /// Runs `f` without counting its passes in `forward_passes` (`Model::uncounted`): passes that only
    /// time the machine.
    pub fn uncounted<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let before = self.forward_passes();
        let out = f(self);
        match self {
            Backend::Local(m) => m.forward_passes = before,
            Backend::Served(s) => s.passes = before,
        }
        out
    }

    /// Feeds `tokens` at `index_pos..` and returns the next logits (see `Model::forward`). A served
    /// model gives no attention rows and refuses the logit lens.
    pub fn forward(
        &mut self,
        tokens: &[u32],
        index_pos: usize,
        opts: ForwardOptions,
    ) -> Result<ForwardOutput> {
        match self {
            Backend::Local(m) => Ok(m.forward(tokens, index_pos, opts)?),
            Backend::Served(s) => s.forward(tokens, index_pos, opts),
        }
    }

    /// The last request's times (served models only).
    pub fn last_timing(&self) -> Option<ServedTiming> {
        match self {
            Backend::Local(_) => None,
            Backend::Served(s) => s.last_timing.clone(),
        }
    }

    pub fn cache_len(&self) -> usize {
        match self {
            Backend::Local(m) => m.cache.len(),
            Backend::Served(s) => s.fed.len(),
        }
    }

    /// Bytes the KV cache takes here (a served model's cache is on the server: 0).
    pub fn cache_bytes(&self) -> usize {
        match self {
            Backend::Local(m) => m.cache.bytes(),
            Backend::Served(_) => 0,
        }
    }

    pub fn cache_truncate(&mut self, len: usize) {
        match self {
            Backend::Local(m) => m.cache.truncate(len),
            Backend::Served(s) => s.fed.truncate(len),
        }
    }

    pub fn cache_clear(&mut self) {
        match self {
            Backend::Local(m) => m.cache.clear(),
            Backend::Served(s) => s.fed.clear(),
        }
    }

    pub fn cache_release(&mut self) {
        match self {
            Backend::Local(m) => m.cache.release(),
            Backend::Served(s) => s.fed = Vec::new(),
        }
    }
}
