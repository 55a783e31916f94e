//! Running the forward pass that brings the model up to the session's tip, and the sampler chain over
//! the tip's logits (memoised).

use super::{ChainOutput, Node, Result, Session, SessionError, ATTENTION_KEEP, LOGITS_KEEP};
use crate::engine::model::ForwardOptions;
use crate::engine::sampler;
use crate::protocol::{PassReport, TokenRecord};
use std::sync::Arc;

impl Session {
    pub(super) fn push_node(&mut self, parent: usize, token: u32, record: TokenRecord) -> usize {
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
    pub(super) fn feed(&mut self) -> Result<PassReport> {
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
    pub(super) fn chain(&mut self) -> Result<(Arc<ChainOutput>, Arc<Vec<f32>>)> {
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
}
