//! Running the forward pass that brings the model up to the session's tip, and the sampler chain over
//! the tip's logits (memoised).

use super::{logits_keep, ATTENTION_KEEP};
use super::{ChainMemo, ChainOutput, Node, Result, Session, SessionError};
use crate::engine::forward::model::{ForwardOptions, Model};
use crate::engine::forward::quant::decode_plan::with_small_rows_threads;
use crate::engine::sampler::{self, DryBreakers};
use crate::engine::session_file::SavedPass;
use crate::protocol::{PassReport, TokenRecord};
use std::sync::{Arc, Mutex, Weak};

/// A pass's logits row, held weakly (only to know it again: while the handle lives, no other row can
/// take its allocation's address), and the block maxima the output head found as it wrote it. The
/// chain reads them instead of a pass of its own (`chain_beside`).
pub(super) type FreshMaxima = (Weak<Vec<f32>>, Arc<Vec<f32>>);

impl Session {
    /// Appends a node below `parent` (or a new root) and makes it the tip.
    pub(super) fn push_node(
        &mut self,
        parent: Option<usize>,
        token: u32,
        record: TokenRecord,
    ) -> usize {
        let id = self.nodes.len();
        self.nodes.push(Node::new(token, parent, record));
        if let Some(p) = parent {
            self.nodes[p].children.push(id);
        }
        self.path.push(id);
        id
    }

    /// The path from the root to `node`.
    pub(super) fn path_to(&self, node: usize) -> Vec<usize> {
        let mut path = vec![node];
        while let Some(p) = self.nodes[*path.last().expect("never empty")].parent {
            path.push(p);
        }
        path.reverse();
        path
    }

    /// Runs the forward pass that brings the model up to the tip, storing the tip's logits and each fed
    /// position's attention row.
    pub(super) fn feed(&mut self) -> Result<PassReport> {
        self.feed_to(self.path.len())
    }

    /// Feeds the path up to `len` (a prefix of it when a long prompt is read in chunks), storing the
    /// logits after position `len - 1`. Without the KV cache every pass starts from position 0.
    pub(super) fn feed_to(&mut self, len: usize) -> Result<PassReport> {
        let pass = self.feed_to_later(len)?;
        self.keep_attention_rows(&self.last_attention.clone(), pass.ms);
        Ok(pass)
    }

    /// `feed_to` leaving the fed positions' attention rows in `last_attention` for the caller to
    /// keep on their nodes (`keep_attention_rows`) before anything reads them: a step keeps them
    /// beside its chain.
    pub(super) fn feed_to_later(&mut self, len: usize) -> Result<PassReport> {
        if !self.opts.kv_cache {
            self.fed = 0;
        }
        if self.fed >= len {
            // Everything is cached but the tip's logits were dropped: re-feed the tip alone.
            self.fed = len - 1;
        }
        self.fed_floor = self.fed_floor.min(self.fed);
        let tokens: Vec<u32> = self.path[self.fed..len]
            .iter()
            .map(|&n| self.nodes[n].token)
            .collect();
        let out = self.model.forward(
            &tokens,
            self.fed,
            ForwardOptions {
                capture_rows: ATTENTION_KEEP.min(tokens.len()),
                all_logits: false,
                lens: false,
            },
        )?;
        if self.fault_at_pass == Some(self.model.forward_passes()) {
            self.fault_at_pass = None;
            return Err(SessionError::Internal("injected fault".into()));
        }
        let tip = self.path[len - 1];
        let row = Arc::new(out.logits);
        let maxima = Arc::new(out.block_maxima);
        self.fresh_maxima = (!maxima.is_empty()).then(|| (Arc::downgrade(&row), maxima));
        self.set_logits(tip, row);
        self.last_attention = Arc::new(out.attention);
        self.remember_logits(tip);
        let on = self.opts.kv_cache;
        self.fed = if on { len } else { 0 };
        if !on {
            self.model.cache_clear();
        }
        self.last_pass = PassReport {
            tokens_fed: tokens.len(),
            ms: out.ms,
            kv_len: if on { self.model.cache_len() } else { 0 },
            kv_bytes: if on { self.model.cache_bytes() } else { 0 },
            kv_cache_on: on,
            forward_passes: self.model.forward_passes(),
            served: self.model.last_timing(),
        };
        Ok(self.last_pass.clone())
    }

    /// Stores each captured row's last `ATTENTION_KEEP` keys on its node. A node's pass time is recorded
    /// the first time it is fed: a re-feed (cache off, branch switch) re-reads it but is not its step.
    pub(super) fn keep_attention_rows(
        &mut self,
        a: &crate::engine::forward::model::AttentionRows,
        ms: f64,
    ) {
        let on = self.opts.kv_cache;
        let heads = self.model.config().n_layer * self.model.config().n_head;
        for r in 0..a.rows {
            let pos = a.first_row + r;
            let cols = (pos + 1).min(ATTENTION_KEEP);
            let first_col = pos + 1 - cols;
            let mut row = Vec::with_capacity(heads * cols);
            let mut first = Vec::with_capacity(heads);
            for lh in 0..heads {
                let base = (lh * a.rows + r) * a.kv_len;
                row.extend_from_slice(&a.data[base + first_col..base + pos + 1]);
                first.push(a.data[base]);
            }
            let node = &mut self.nodes[self.path[pos]];
            node.attn = Arc::new(row);
            node.attn_cols = cols;
            node.attn_first = Arc::new(first);
            node.pass.get_or_insert(SavedPass::step(ms, on));
        }
    }

    /// Keeps the newest `logits_keep` logits rows; older ones are recomputed if visited again. A
    /// dropped row no one else holds goes back to the model, for a later pass to write into.
    pub(super) fn remember_logits(&mut self, tip: usize) {
        self.with_logits.push_back(tip);
        while self.with_logits.len() > logits_keep(self.model.vocab_size()) {
            let old = self.with_logits.pop_front().expect("longer than kept");
            if old + 1 != self.prompt_len && old != tip {
                let row = self.nodes[old].logits.take();
                self.recycle(row);
            }
        }
    }

    /// Stores `row` as `node`'s logits; a row it replaces that no one else holds goes back to the model.
    pub(super) fn set_logits(&mut self, node: usize, row: Arc<Vec<f32>>) {
        let old = self.nodes[node].logits.replace(row);
        self.recycle(old);
    }

    /// Gives `row` back to the model for a later pass to write into, if no one else holds it.
    fn recycle(&mut self, row: Option<Arc<Vec<f32>>>) {
        if let (Some(Ok(row)), Some(m)) = (row.map(Arc::try_unwrap), self.model.local_mut()) {
            m.recycle_row(row);
        }
    }

    /// How many of the newest logits rows this session keeps (older ones recompute when visited).
    pub fn logits_rows_kept(&self) -> usize {
        logits_keep(self.model.vocab_size())
    }

    /// The raw logits for the token after the tip (re-fed if they were dropped).
    pub fn tip_logits(&mut self) -> Result<Arc<Vec<f32>>> {
        Ok(self.chain()?.1)
    }

    /// The tip's logits (re-fed if they were dropped) run through the sampler chain. Memoised per tip and
    /// settings: a step reuses the chain its previous report already ran.
    pub(super) fn chain(&mut self) -> Result<(Arc<ChainOutput>, Arc<Vec<f32>>)> {
        self.chain_beside(|_| {})
    }

    /// `chain`, and `beside` once on the session while the chain's whole-row passes run (on one of
    /// their threads, as the first item of their job): a step's bookkeeping, which needs none of the
    /// chain, takes the time the passes' second thread would otherwise wait (`edit::commit`). It runs
    /// before the chain is remembered; on a memoised chain, at once. It must not use the matmul pool.
    pub(super) fn chain_beside(
        &mut self,
        beside: impl FnOnce(&mut Session) + Send,
    ) -> Result<(Arc<ChainOutput>, Arc<Vec<f32>>)> {
        let tip = *self.path.last().ok_or(SessionError::NoPrompt)?;
        if self.nodes[tip].logits.is_none() {
            self.feed()?;
        }
        let logits = self.nodes[tip].logits.clone().expect("fed");
        if let Some(m) = &self.chain_memo {
            if m.tip == tip && m.settings == self.settings && Arc::ptr_eq(&m.logits, &logits) {
                let out = m.out.clone();
                beside(self);
                return Ok((out, logits));
            }
        }
        // The block maxima the pass found, if these logits are that pass's row.
        let maxima = match &self.fresh_maxima {
            Some((row, m)) if std::ptr::eq(row.as_ptr(), Arc::as_ptr(&logits)) => Some(m.clone()),
            _ => None,
        };
        let history = self.tokens();
        let u = sampler::uniform(self.settings.seed, self.path.len());
        let breakers = self.dry_breakers();
        let (settings, shown) = (self.settings.clone(), self.opts.top_k_shown);
        let threads = self.model.local().map_or(1, Model::decode_threads);
        // The chain reads only what is owned above; `beside` borrows the session meanwhile.
        let once = Mutex::new(Some((beside, &mut *self)));
        let side = || {
            let job = once.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some((f, session)) = job {
                f(session)
            }
        };
        let mut out = with_small_rows_threads(threads, || {
            let row = (&logits[..], maxima.as_deref().map(|m| &m[..]));
            sampler::run_chain_beside(row, (&history, &settings, &breakers), shown, u, &side)
        });
        side(); // already run by the passes' job: this takes nothing
        drop(once);
        if self.model.is_served() {
            // A served row holds log-probabilities over the whole vocabulary already: the raw
            // probabilities are theirs (normaliser 1), not renormalised over the K known.
            out.lse = 0.0;
        }
        let out = Arc::new(out);
        self.chain_memo = Some(ChainMemo {
            tip,
            settings,
            out: out.clone(),
            logits: logits.clone(),
            described: None,
        });
        Ok((out, logits))
    }

    /// The sampler chain over `row` after `history` with the session's settings, its whole-row passes
    /// side by side on the threads the decode steps chose (`sampler/passes.rs`).
    pub(super) fn run_chain(
        &self,
        row: &[f32],
        history: &[u32],
        breakers: &DryBreakers,
        shown: usize,
        u: f32,
    ) -> ChainOutput {
        let threads = self.model.local().map_or(1, Model::decode_threads);
        with_small_rows_threads(threads, || {
            sampler::run_chain_with(row, history, &self.settings, breakers, shown, u)
        })
    }

    /// The DRY sequence breakers mapped onto the vocabulary (a pass over every token's text), built once
    /// for the breaker texts in the settings and kept until those change. None while DRY is off.
    pub(super) fn dry_breakers(&mut self) -> Arc<DryBreakers> {
        // A served vocabulary lives on the server: mapping breakers onto it would take a request per
        // token, so DRY runs there without sequence breakers (docs/TRACE.md says so).
        if !sampler::dry_on(&self.settings)
            || self.settings.dry_sequence_breakers.is_empty()
            || self.vocab.is_remote()
        {
            return Arc::new(DryBreakers::none());
        }
        let texts = &self.settings.dry_sequence_breakers;
        if let Some((built_for, b)) = &self.dry_breakers {
            if built_for == texts {
                return b.clone();
            }
        }
        let vocab = &self.vocab;
        let b = Arc::new(DryBreakers::from_vocab(
            texts,
            vocab.vocab_size(),
            |id| vocab.token_bytes(id),
            |text| {
                // llama.cpp tokenises a breaker's rest without BOS.
                let mut ids = vocab.encode(text).ok()?;
                if vocab.adds_bos() && ids.first() == vocab.bos_id().as_ref() {
                    ids.remove(0);
                }
                Some(ids)
            },
        ));
        self.dry_breakers = Some((texts.clone(), b.clone()));
        b
    }
}
