//! Changing the tree: prefill, step, teacher forcing, rewind, branch switch, settings. Each edit is
//! atomic: validate first, then change inside `atomically` (`atomic.rs`), so a failure leaves the
//! session unchanged.

use super::{ChainOutput, Choice, Node, Result, Session, SessionError, StepReport};
use crate::engine::sampler;
use crate::engine::session_file::SavedPass;
use crate::protocol::{Distribution, PrefillReport, Source, TokenRecord};
use std::sync::Arc;
use std::time::Instant;

impl Session {
    /// Tokenises and reads a prompt. Starts a new tree.
    pub fn prefill_text(&mut self, prompt: &str, chat: bool) -> Result<PrefillReport> {
        let ids = self.prompt_ids(prompt, chat)?;
        self.prefill_ids(&ids)
    }

    /// The token ids a prompt becomes (through the chat template when `chat`), checked to fit.
    pub fn prompt_ids(&self, prompt: &str, chat: bool) -> Result<Vec<u32>> {
        let text = self.render_prompt(prompt, chat)?;
        let ids = self.vocab.encode(&text)?;
        self.check_prompt(&ids)?;
        Ok(ids)
    }

    fn check_prompt(&self, ids: &[u32]) -> Result<()> {
        let context = self.model.config().context_length;
        if ids.is_empty() {
            return Err(SessionError::EmptyPrompt);
        }
        if ids.len() >= context {
            return Err(SessionError::PromptTooLong {
                tokens: ids.len(),
                context,
            });
        }
        match ids.iter().find(|&&t| t as usize >= self.model.vocab_size()) {
            Some(&bad) => Err(SessionError::BadToken(bad)),
            None => Ok(()),
        }
    }

    /// Reads prompt token ids (the parallel "reading" phase). Starts a new tree; on failure the old
    /// tree stays.
    pub fn prefill_ids(&mut self, ids: &[u32]) -> Result<PrefillReport> {
        self.prefill_ids_with(ids, &mut |_, _| true)
    }

    /// `prefill_ids`, reading a long prompt in chunks of `SessionOptions::prefill_chunk` tokens. `progress(done,
    /// total)` hears each chunk and returns false to cancel: the old tree then stays. Chunks change no
    /// number: a position's computation does not depend on how many rows share its pass.
    pub fn prefill_ids_with(
        &mut self,
        ids: &[u32],
        progress: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<PrefillReport> {
        self.check_prompt(ids)?;
        let old_nodes = std::mem::take(&mut self.nodes);
        let passes_before = self.model.forward_passes();
        let result = self.atomically(|s| s.read_prompt(ids, progress));
        match result {
            // `atomically` dropped what the prefill added (its checkpoint saw an empty tree).
            Err(_) => self.nodes = old_nodes,
            // The rounds were run on the old tree.
            Ok(_) => {
                self.round_log.clear();
                self.passes_before_prompt = passes_before;
            }
        }
        result
    }

    fn read_prompt(
        &mut self,
        ids: &[u32],
        progress: &mut dyn FnMut(usize, usize) -> bool,
    ) -> Result<PrefillReport> {
        self.with_logits.clear();
        self.path.clear();
        self.fed = 0;
        self.fed_floor = 0;
        self.chain_memo = None;
        let mut parent = None;
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
            parent = Some(self.push_node(parent, t, record));
        }
        self.prompt_len = ids.len();
        // Without the cache a chunk could not see the ones before it: one pass then.
        let chunk = if self.opts.kv_cache {
            self.opts.prefill_chunk.max(1)
        } else {
            ids.len()
        };
        let (mut done, mut ms) = (0, 0.0);
        while done < ids.len() {
            done = (done + chunk).min(ids.len());
            ms += self.feed_to(done)?.ms;
            if !progress(done, ids.len()) {
                return Err(SessionError::Cancelled);
            }
        }
        let dist_start = Instant::now();
        self.chain()?;
        self.prefill = PrefillReport {
            tokens: ids.len(),
            ms,
            tok_per_s: ids.len() as f64 / (ms / 1e3),
            ttft_ms: ms + dist_start.elapsed().as_secs_f64() * 1e3,
        };
        Ok(self.prefill.clone())
    }

    /// Commits one token (the planned one, or a forced one), then runs the forward pass that feeds it.
    pub fn step(&mut self, choice: Choice) -> Result<StepReport> {
        self.check_room(1)?;
        if let Choice::Force(t) | Choice::Class(t) = choice {
            self.check_token(t)?;
        }
        self.atomically(|s| s.commit(choice))
    }

    /// Tokenises `text` and teacher-forces each token in turn: all of them, or none on failure.
    /// `progress(session, done, total)` hears each forced token right after its pass.
    pub fn force_text(
        &mut self,
        text: &str,
        progress: &mut dyn FnMut(&Session, usize, usize),
    ) -> Result<Vec<StepReport>> {
        let ids = self.vocab.encode(text)?;
        if ids.is_empty() {
            return Err(SessionError::NothingToForce);
        }
        self.check_room(ids.len())?;
        for &t in &ids {
            self.check_token(t)?;
        }
        self.atomically(|s| {
            let total = ids.len();
            let mut reports = Vec::with_capacity(total);
            for (i, &t) in ids.iter().enumerate() {
                reports.push(s.commit(Choice::Force(t))?);
                progress(s, i + 1, total);
            }
            Ok(reports)
        })
    }

    pub(super) fn check_room(&self, need: usize) -> Result<()> {
        let context = self.model.config().context_length;
        let used = self.path.len();
        if used == 0 {
            return Err(SessionError::NoPrompt);
        }
        match (used >= context, used + need > context) {
            (true, _) => Err(SessionError::ContextFull(context)),
            (false, true) => Err(SessionError::NoRoom {
                need,
                used,
                context,
            }),
            _ => Ok(()),
        }
    }

    fn check_token(&self, t: u32) -> Result<()> {
        if (t as usize) < self.model.vocab_size() {
            Ok(())
        } else {
            Err(SessionError::BadToken(t))
        }
    }

    /// The body of a step, inside an edit: choose, record, move along the tree, feed, describe.
    pub(super) fn commit(&mut self, choice: Choice) -> Result<StepReport> {
        let (out, logits, chosen_from) = self.described()?;
        // A hand pick equal to what the sampler would take is a step, not a deviation: only real
        // deviations are marked as forced.
        let token = match choice {
            Choice::Sample => out.planned,
            Choice::Force(t) | Choice::Class(t) => t,
        };
        let source = match out.draw {
            _ if matches!(choice, Choice::Class(_)) => Source::Class,
            _ if token != out.planned => Source::Forced,
            None => Source::Greedy,
            Some(_) => Source::Sampled,
        };
        let node = self.place(token, source, &out, &logits, &chosen_from)?;
        let pass = self.feed_to_later(self.path.len())?;
        self.nodes[node].pass = Some(SavedPass::step(pass.ms, pass.kv_cache_on));
        // What the report needs besides the next distribution, made while the chain's passes run.
        let (mut kept, ms) = (None, pass.ms);
        self.chain_beside(|s| {
            s.keep_attention_rows(&s.last_attention.clone(), ms);
            kept = Some((s.window(), s.branches()));
        })?;
        let next = self.described()?.2;
        let (attention, branches) = kept.expect("run beside the chain");
        // Last, after everything that can fail: the undo log does not need to know of it.
        self.nodes[node].chosen = Some(chosen_from.clone());
        self.stamp_settings(node);
        let committed = self.nodes[node].record.clone();
        Ok(StepReport {
            step: self.generated() - 1,
            committed,
            chosen_from,
            pass,
            next,
            attention,
            branches,
            ab: None,
        })
    }

    /// Records `token`, chosen by `source` from the chain `out` over `logits` (described as
    /// `chosen_from`), as the token after the tip, and moves the tip onto it: onto the existing child
    /// with that token when a branch already went there, else a new node. Runs no pass.
    pub(super) fn place(
        &mut self,
        token: u32,
        source: Source,
        out: &ChainOutput,
        logits: &[f32],
        chosen_from: &Distribution,
    ) -> Result<usize> {
        let record = TokenRecord {
            token: self.vocab.view(token),
            position: self.path.len(),
            source,
            prob: out.raw_prob(logits, token),
            logprob: logits[token as usize] - out.lse,
            rank: match chosen_from.candidates.iter().find(|c| c.token.id == token) {
                Some(c) => c.rank,
                None => sampler::rank_of(logits, token),
            },
            entropy: chosen_from.entropy,
        };
        let tip = *self.path.last().ok_or(SessionError::NoPrompt)?;
        let existing = self.nodes[tip]
            .children
            .iter()
            .copied()
            .find(|&c| self.nodes[c].token == token);
        Ok(match existing {
            Some(child) => {
                // Stepping again where a branch already went: the same node, chosen anew.
                let old = &self.nodes[child];
                self.undo.push((child, old.record.clone(), old.pass));
                self.nodes[child].record = record;
                self.path.push(child);
                child
            }
            None => self.push_node(Some(tip), token, record),
        })
    }

    /// Records the settings the sampler chose `node`'s token under (none for a token chosen by hand).
    /// Called last in an edit, after everything that can fail.
    pub(super) fn stamp_settings(&mut self, node: usize) {
        let by_sampler = !self.nodes[node].record.source.by_hand();
        self.nodes[node].settings = by_sampler.then(|| Arc::new(self.settings.clone()));
    }

    /// Drops the last `n` generated tokens (never the prompt). The dropped path stays as a branch.
    /// Returns how many were dropped. Runs no forward pass.
    pub fn rewind(&mut self, n: usize) -> Result<usize> {
        if self.path.is_empty() {
            return Err(SessionError::NoPrompt);
        }
        let n = n.min(self.generated());
        self.path.truncate(self.path.len() - n);
        self.fed = self.fed.min(self.path.len());
        Ok(n)
    }

    /// Makes the path to `leaf` current, re-feeding whatever the cache lacks.
    pub fn switch_branch(&mut self, leaf: usize) -> Result<()> {
        let valid = leaf < self.nodes.len()
            && (self.nodes[leaf].record.source != Source::Prompt || leaf + 1 == self.prompt_len);
        if !valid {
            return Err(SessionError::BadBranch(leaf));
        }
        self.atomically(|s| {
            let new_path = s.path_to(leaf);
            let common = common_prefix(&s.path, &new_path);
            s.fed = s.fed.min(common);
            s.path = new_path;
            if s.fed < s.path.len() {
                s.feed()?;
            }
            Ok(())
        })
    }

    /// New sampler settings; the next distribution re-ranks with no forward pass.
    pub fn set_settings(&mut self, settings: crate::protocol::SamplerSettings) {
        self.settings = settings;
    }

    /// With the cache off every pass re-reads the whole sequence, so its cost grows with length.
    /// Turning it back on rebuilds it at once, in one pass over the path (a prefill of its own, reported
    /// as the last pass), so the next step is an ordinary one-token step again.
    pub fn set_kv_cache(&mut self, on: bool) -> Result<()> {
        if on == self.opts.kv_cache {
            return Ok(());
        }
        self.opts.kv_cache = on;
        self.fed = 0;
        if !on {
            self.model.cache_release();
            self.last_pass.kv_cache_on = false;
            self.last_pass.kv_len = 0;
            self.last_pass.kv_bytes = 0;
            return Ok(());
        }
        let result = if self.path.is_empty() {
            Ok(())
        } else {
            self.atomically(|s| s.feed().map(|_| ()))
        };
        if result.is_err() {
            self.opts.kv_cache = false;
        }
        result
    }
}

/// How many leading entries two paths share.
pub(super) fn common_prefix(a: &[usize], b: &[usize]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl Node {
    pub(super) fn new(token: u32, parent: Option<usize>, record: TokenRecord) -> Node {
        Node {
            token,
            parent,
            children: Vec::new(),
            record,
            logits: None,
            attn: Arc::new(Vec::new()),
            attn_cols: 0,
            attn_first: Arc::new(Vec::new()),
            pass: None,
            chosen: None,
            settings: None,
        }
    }
}
