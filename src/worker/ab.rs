//! The A/B view on the engine thread: model B (`twin`) beside the session's model A, and at every
//! position of A's current path the two next-token distributions compared over the whole vocabulary.
//!
//! The figures of a position depend only on the tokens before it, so they are kept by that prefix:
//! stepping on, rewinding or switching back to a branch costs B one pass for the new tip at most, and
//! a path that arrived many tokens at once (a loaded session, a lesson) is read by B in one pass.

use super::ab_text::CharClasses;
use crate::analysis::{Divergence, LogProbs};
use crate::engine::sampler::top_n;
use crate::engine::session::Session;
use crate::engine::twin::Twin;
use crate::protocol::{AbCandidate, AbStep, AbView, TokenView};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

pub struct AbTracker {
    twin: Twin,
    /// B's candidates listed at the tip.
    top: usize,
    /// Each position's figures, by a hash of the tokens before it.
    steps: HashMap<u64, AbStep>,
    /// The tip's candidates, for the prefix they were computed after.
    next: Option<(u64, Vec<AbCandidate>, f32)>,
    /// With B's own vocabulary: each token's next-character class, built on the first read.
    classes: Option<CharClasses>,
    /// With B's own vocabulary: B's tokens of the text of A's path at the tip.
    b_tokens: Vec<TokenView>,
    /// B's whole distribution at the last tip it read: once the path steps on, B's probability of the
    /// token taken there comes from it without another pass.
    tip_row: Option<(u64, LogProbs)>,
}

/// The key of every prefix of `ids`: `keys[p]` stands for `ids[..p]`. Each chains the one before
/// with the next token, so a path of n tokens costs n hashes, not n²/2.
fn prefix_keys(ids: &[u32]) -> Vec<u64> {
    let mut keys = Vec::with_capacity(ids.len() + 1);
    keys.push(0);
    for &t in ids {
        let mut h = DefaultHasher::new();
        (keys[keys.len() - 1], t).hash(&mut h);
        keys.push(h.finish());
    }
    keys
}

impl AbTracker {
    pub fn new(twin: Twin, top: usize) -> AbTracker {
        AbTracker {
            twin,
            top,
            steps: HashMap::new(),
            next: None,
            tip_row: None,
            classes: None,
            b_tokens: vec![],
        }
    }

    /// B beside the session's current path, from the first generated token's distribution to the
    /// tip's. Never fails: when B's pass (or a recomputed row of A's) fails, the view says why in
    /// `error` and holds what it had. The session's tree and path are unchanged.
    pub fn view(&mut self, session: &mut Session) -> AbView {
        let mut view = AbView {
            label: self.twin.label.clone(),
            detail: self.twin.detail.clone(),
            matrix_types: self.twin.matrix_types.clone(),
            steps: vec![],
            next: vec![],
            next_entropy: 0.0,
            error: None,
            b_pass: (0, 0.0),
            by_text: self.twin.vocab.is_some(),
            b_tokens: vec![],
        };
        let ids = session.tokens();
        if ids.is_empty() {
            return view;
        }
        let first = session.prompt_len().max(1);
        let keys = prefix_keys(&ids);
        let started = std::time::Instant::now();
        let filled = match self.twin.vocab.is_some() {
            true => self.fill_by_text(session, &ids, &keys, first),
            false => self.fill(session, &ids, &keys, first),
        };
        match filled {
            Ok(0) => {}
            Ok(read) => view.b_pass = (read, started.elapsed().as_secs_f64() * 1e3),
            Err(e) => view.error = Some(format!("model B: {e}")),
        }
        view.steps = (first..=ids.len())
            .map_while(|p| self.steps.get(&keys[p]).cloned())
            .collect();
        if let Some((k, next, entropy)) = &self.next {
            if *k == keys[ids.len()] {
                view.next = next.clone();
                view.next_entropy = *entropy;
                view.b_tokens = self.b_tokens.clone();
            }
        }
        view
    }

    /// Computes the figures of every position from `first` to the tip that lacks them, and returns
    /// how many tokens B read. A position kept from when it was the tip learns B's view of the
    /// token taken there from B's last tip row, or is read again.
    fn fill(
        &mut self,
        session: &mut Session,
        ids: &[u32],
        keys: &[u64],
        first: usize,
    ) -> anyhow::Result<usize> {
        let tip_key = keys[ids.len()];
        let mut missing = None;
        for p in first..=ids.len() {
            let k = keys[p];
            let Some(step) = self.steps.get_mut(&k) else {
                missing = Some(p);
                break;
            };
            if p < ids.len() && step.b_chosen.is_none() {
                match &self.tip_row {
                    Some((rk, b)) if *rk == k => {
                        step.b_chosen = Some((b.logprob(ids[p]).exp() as f32, b.rank(ids[p])));
                    }
                    _ => {
                        missing = Some(p);
                        break;
                    }
                }
            }
        }
        let tip_done = matches!(&self.next, Some((k, ..)) if *k == tip_key);
        let Some(from) = missing.or((!tip_done).then_some(ids.len())) else {
            return Ok(0);
        };
        let rows = self.twin.rows_from(ids, from)?;
        for (p, b_logits) in (from..=ids.len()).zip(&rows) {
            let a_logits = session.logits_at(p)?;
            let (a, b) = (
                LogProbs::from_logits(&a_logits),
                LogProbs::from_logits(b_logits),
            );
            let d = Divergence::between(&a, &b);
            let (at, bt) = (a.argmax(), b.argmax());
            let chosen = ids.get(p).map(|&t| (b.logprob(t).exp() as f32, b.rank(t)));
            let step = AbStep {
                position: p,
                a_top: session.token_view(at),
                a_top_prob: a.logprob(at).exp() as f32,
                b_top: session.token_view(bt),
                b_top_prob: b.logprob(bt).exp() as f32,
                same_top1: at == bt,
                kl_ab: d.kl_ab,
                kl_ba: d.kl_ba,
                js: d.js,
                b_chosen: chosen,
            };
            self.steps.insert(keys[p], step);
            if p == ids.len() {
                let next = top_n(b_logits, self.top)
                    .into_iter()
                    .map(|id| AbCandidate {
                        token: session.token_view(id),
                        prob: b.logprob(id).exp() as f32,
                        a_prob: a.logprob(id).exp() as f32,
                        a_rank: a.rank(id),
                    })
                    .collect();
                self.next = Some((tip_key, next, b.entropy() as f32));
                self.tip_row = Some((tip_key, b));
            }
        }
        Ok(self.twin.last_read())
    }

    /// As `fill`, for a model B with its own vocabulary: B reads the text of A's path up to each
    /// position that lacks figures (its cache keeps the common prefix of its own tokens), and the
    /// two are compared over the next character.
    fn fill_by_text(
        &mut self,
        session: &mut Session,
        ids: &[u32],
        keys: &[u64],
        first: usize,
    ) -> anyhow::Result<usize> {
        let mut read = 0;
        for p in first..=ids.len() {
            let k = keys[p];
            let tip = p == ids.len();
            let tip_done = matches!(&self.next, Some((nk, ..)) if *nk == k);
            if self.steps.contains_key(&k) && (!tip || tip_done) {
                continue;
            }
            let b_vocab = self.twin.vocab.as_ref().expect("by text");
            let b_ids = b_vocab.encode(&session.text_of(&ids[..p]))?;
            if b_ids.is_empty() {
                anyhow::bail!("its tokenizer made no tokens of the text so far");
            }
            let b_logits = self.twin.logits_after(&b_ids)?.to_vec();
            let b = LogProbs::from_logits(&b_logits);
            read += self.twin.last_read();
            let b_vocab = self.twin.vocab.as_ref().expect("by text");
            let a = LogProbs::from_logits(&session.logits_at(p)?);
            let classes = self
                .classes
                .get_or_insert_with(|| CharClasses::new(session, a.0.len(), b_vocab));
            let d = Divergence::between(&classes.a(&a), &classes.b(&b));
            let (at, bt) = (a.argmax(), b.argmax());
            let (a_top, b_top) = (session.token_view(at), b_vocab.view(bt));
            let step = AbStep {
                position: p,
                same_top1: a_top.text == b_top.text && a_top.kind == b_top.kind,
                a_top,
                a_top_prob: a.logprob(at).exp() as f32,
                b_top,
                b_top_prob: b.logprob(bt).exp() as f32,
                kl_ab: d.kl_ab,
                kl_ba: d.kl_ba,
                js: d.js,
                b_chosen: None,
            };
            self.steps.insert(k, step);
            if tip {
                let next = top_n(&b_logits, self.top)
                    .into_iter()
                    .map(|id| {
                        let token = b_vocab.view(id);
                        let same = classes
                            .a_token(&token.text)
                            .filter(|_| token.kind == crate::protocol::TokenKind::Text);
                        AbCandidate {
                            prob: b.logprob(id).exp() as f32,
                            a_prob: same.map_or(0.0, |t| a.logprob(t).exp() as f32),
                            a_rank: same.map_or(usize::MAX, |t| a.rank(t)),
                            token,
                        }
                    })
                    .collect();
                self.next = Some((k, next, b.entropy() as f32));
                self.b_tokens = b_ids.iter().map(|&id| b_vocab.view(id)).collect();
            }
        }
        Ok(read)
    }
}
