//! Speculative decoding, one round at a time, as published (Leviathan et al. 2023; Chen et al. 2023):
//! the draft proposes K tokens one by one from its distribution q; the model reads them all in one
//! pass through its KV cache and gets its own distribution p at every position; drafted token i is
//! kept with probability min(1, p/q); at the first rejection a token is drawn from max(0, p − q),
//! normalised; when all K are kept, one bonus token is drawn from p. p and q are the distributions
//! after the sampler chain (greedy: all mass on the top token, so a drafted token is kept exactly when
//! it is the model's top token, and the text is plain greedy's). Either way the text is distributed as
//! the model's own: the draft changes the cost, never the output.
//!
//! The round's last token is not read by the model: the next round's check reads it together with
//! the new drafts (one pass for both), as a server does. Both KV caches keep only the kept prefix.

use super::{Result, Session, SessionError, ATTENTION_KEEP};
use crate::engine::draft::{Draft, Proposals, MAX_DRAFT_K};
use crate::engine::forward::model::{AttentionRows, ForwardOptions};
use crate::engine::sampler::sparse::{accept_prob, draw, prob_in, residual};
use crate::engine::sampler::{self, ChainOutput};
use crate::engine::session_file::SavedPass;
use crate::protocol::*;
use std::sync::Arc;

/// Salt for the check's uniform numbers (the residual and bonus draws use the plain draw's).
const ACCEPT_SALT: u64 = 0xACCE_9700_0000_0001;
/// Bare passes timed for a round's plain step, the fastest kept: the first after an idle spell run
/// slow on some machines (`docs/PERFORMANCE.md`, round twenty-four), so the later ones are its time.
const PLAIN_PASSES: usize = 6;

/// What the model's check returns: the logits after each position, by position (`None` below the
/// pass), the pass, and its attention rows.
struct Checked {
    rows: Vec<Option<Arc<Vec<f32>>>>,
    pass: PassReport,
    attention: AttentionRows,
}

/// A test hook: what to do at a rejection instead of the published residual draw.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResidualRule {
    /// max(0, p − q), normalised: exact.
    #[default]
    Published,
    /// Draw from p itself, a common mistake: the text is then biased towards what the draft rejects
    /// least. Only for the test that shows the statistical test can tell.
    FromP,
}

impl Session {
    /// One round with `k` drafted tokens (1 to 16; fewer where the context ends). Atomic: on failure
    /// the session is as it was.
    pub fn speculate(&mut self, k: usize) -> Result<RoundSteps> {
        self.speculate_with(k, ResidualRule::Published)
    }

    #[doc(hidden)]
    pub fn speculate_with(&mut self, k: usize, rule: ResidualRule) -> Result<RoundSteps> {
        self.atomically(|s| s.checked_round(k, rule))
    }

    /// A round, then the view of the session it leaves, as one edit (the view reads the round's last
    /// token: one more pass of the model, outside the round's cost). The engine thread answers
    /// `Speculate` through this, so its `Failed` leaves the session as it was.
    pub fn speculate_then_view(&mut self, k: usize) -> Result<(RoundSteps, SessionView)> {
        self.atomically(|s| {
            let round = s.checked_round(k, ResidualRule::Published)?;
            Ok((round, s.view()?))
        })
    }

    /// A round inside an edit, once it is checked that one can run.
    fn checked_round(&mut self, k: usize, rule: ResidualRule) -> Result<RoundSteps> {
        if self.model.is_served() {
            return Err(SessionError::NotServed(
                "speculative decoding (a draft needs the model's own passes)",
            ));
        }
        self.check_room(2)?;
        let room = self.model.config().context_length - self.path.len();
        let k = k.clamp(1, MAX_DRAFT_K).min(room - 1);
        let mut draft = self.draft.take().ok_or_else(|| {
            SessionError::Internal(
                "no draft loaded: start with --draft (q2_k, layers:20, …)".into(),
            )
        })?;
        let timing = std::time::Instant::now();
        let plain = self.plain_ms();
        self.plain_timing_s += timing.elapsed().as_secs_f64();
        let result = plain.and_then(|plain_ms| self.round(&mut draft, k, plain_ms, rule));
        self.draft = Some(draft);
        if let Ok(r) = &result {
            self.rounds += 1;
            r.report.add_to(&mut self.tally);
            self.round_log.push(r.report.clone());
        }
        result
    }

    /// Seconds this session has spent timing rounds' plain steps (every round times one before it).
    pub fn plain_timing_s(&self) -> f64 {
        self.plain_timing_s
    }

    /// One plain step's time here and now, measured for every round right before it: the fastest of
    /// `PLAIN_PASSES` bare passes, after any trial of the decode plans (whose passes take each plan in
    /// turn: a pass on a plan that loses is no plain step). A plain time measured once and kept had
    /// been taken cold, after the class read a lesson step, and set against rounds run warm, in a row:
    /// "this round ran 1.29× (faster)" beside "no acceptance pays here". The passes also warm the
    /// machine the round then runs on, so the two are timed alike.
    fn plain_ms(&mut self) -> Result<f64> {
        if self.fed + 1 < self.path.len() || !self.opts.kv_cache {
            self.feed()?;
        }
        let mut n = 0;
        while self.decode_trial_running() && n < 64 {
            self.time_plain_pass()?;
            n += 1;
        }
        let mut ms = f64::INFINITY;
        for _ in 0..PLAIN_PASSES {
            ms = ms.min(self.time_plain_pass()?);
        }
        Ok(ms)
    }

    fn round(
        &mut self,
        draft: &mut Draft,
        k: usize,
        plain_ms: f64,
        rule: ResidualRule,
    ) -> Result<RoundSteps> {
        let l = self.path.len();
        let breakers = self.dry_breakers();
        let proposals = draft.propose(&self.tokens(), k, &self.settings, &breakers)?;
        let checked = self.verify(&proposals)?;
        let (mut drafted, steps, last) = self.walk(&proposals, &checked.rows, rule)?;
        let accepted = steps.len() - 1;
        let history = &self.tokens()[..l];
        for i in drafted.len()..proposals.tokens.len() {
            let row = checked.rows[l + i - 1].clone().expect("the check read it");
            drafted.push(self.unchecked(history, &proposals, i, &row, &breakers));
        }
        self.settle_caches(l + accepted);
        // The check's attention rows of the positions the text kept (a rejected draft's are dropped).
        let kept = checked.attention.below(l + accepted);
        self.keep_attention_rows(&kept, checked.pass.ms);
        self.last_attention = Arc::new(kept);
        let report = RoundReport {
            round: self.rounds,
            draft: draft.label.clone(),
            first_position: l,
            drafted,
            accepted,
            last,
            draft_passes: proposals.passes,
            draft_ms: proposals.ms,
            draft_read: proposals.read,
            verify_positions: checked.pass.tokens_fed,
            verify_ms: checked.pass.ms,
            plain_ms,
            greedy: self.settings.is_greedy(),
        };
        let share = report.ms() / steps.len() as f64;
        for s in &steps {
            let node = self.path[s.committed.position];
            self.nodes[node].pass = Some(SavedPass {
                ms: share,
                kv_cache: self.opts.kv_cache,
                round: true,
            });
        }
        Ok(RoundSteps {
            report,
            steps,
            pass: checked.pass,
        })
    }

    /// The check, token by token: each drafted token kept with probability min(1, p/q) and written;
    /// at the first rejection the last token is drawn from the residual, else the bonus from p.
    /// Returns the checked drafts, the steps written and how the round ended.
    fn walk(
        &mut self,
        proposals: &Proposals,
        rows: &[Option<Arc<Vec<f32>>>],
        rule: ResidualRule,
    ) -> Result<(Vec<DraftedToken>, Vec<RoundStep>, RoundLast)> {
        let l = self.path.len();
        let seed = self.settings.seed;
        let mut drafted = Vec::with_capacity(proposals.tokens.len());
        let mut steps = Vec::with_capacity(proposals.tokens.len() + 1);
        for (i, d) in proposals.tokens.iter().enumerate() {
            let (out, logits, dist) = self.described()?;
            let p = prob_in(&out.kept, d.token);
            let u = sampler::uniform(seed ^ ACCEPT_SALT, l + i);
            let kept = u < accept_prob(p, d.q);
            drafted.push(DraftedToken {
                token: self.vocab.view(d.token),
                p,
                q: d.q,
                accept_prob: accept_prob(p, d.q),
                u,
                verdict: if kept {
                    Verdict::Accepted
                } else {
                    Verdict::Rejected
                },
                model_top: self.vocab.view(out.kept[0].0),
            });
            if !kept {
                let from = match rule {
                    ResidualRule::Published => residual(&out.kept, &d.dist),
                    ResidualRule::FromP => out.kept.clone(),
                };
                let u = sampler::uniform(seed, l + i);
                let (token, prob) = draw(&from, u).unwrap_or((out.kept[0].0, 1.0));
                steps.push(self.write(token, &out, &logits, without_draw(&dist), None)?);
                let last = self.round_last(token, RoundEnd::Residual, prob, &from);
                return Ok((drafted, steps, last));
            }
            let row = rows.get(l + i).cloned().flatten();
            steps.push(self.write(d.token, &out, &logits, without_draw(&dist), row)?);
        }
        // Every drafted token kept: the bonus is the plain draw from p at the next position.
        let (out, logits, dist) = self.described()?;
        let token = out.planned;
        steps.push(self.write(token, &out, &logits, Distribution::clone(&dist), None)?);
        let last = self.round_last(token, RoundEnd::Bonus, out.planned_prob, &out.kept);
        Ok((drafted, steps, last))
    }

    /// The model's check: one pass over the tokens its cache lacks (the last round's final token, if
    /// any) and the drafts. Sets the tip's logits when it had none.
    fn verify(&mut self, proposals: &Proposals) -> Result<Checked> {
        let l = self.path.len();
        let tip = self.path[l - 1];
        let on = self.opts.kv_cache;
        let from = match (on, self.nodes[tip].logits.is_some()) {
            (false, _) => 0,
            (true, true) => self.fed.min(l),
            (true, false) => self.fed.min(l - 1),
        };
        self.fed_floor = self.fed_floor.min(from);
        let mut tokens: Vec<u32> = self.path[from..]
            .iter()
            .map(|&n| self.nodes[n].token)
            .collect();
        tokens.extend(proposals.tokens.iter().map(|p| p.token));
        let opts = ForwardOptions {
            capture_rows: ATTENTION_KEEP.min(tokens.len()),
            all_logits: true,
            lens: false,
        };
        let out = self.model.forward(&tokens, from, opts)?;
        if self.fault_at_pass == Some(self.model.forward_passes()) {
            self.fault_at_pass = None;
            return Err(SessionError::Internal("injected fault".into()));
        }
        let vocab = self.model.vocab_size();
        let mut rows = vec![None; from];
        rows.extend(
            out.logits
                .chunks_exact(vocab)
                .map(|r| Some(Arc::new(r.to_vec()))),
        );
        if self.nodes[tip].logits.is_none() {
            self.nodes[tip].logits = rows[l - 1].clone();
            self.remember_logits(tip);
        }
        let pass = PassReport {
            tokens_fed: tokens.len(),
            ms: out.ms,
            kv_len: if on { from + tokens.len() } else { 0 },
            kv_bytes: 0,
            kv_cache_on: on,
            forward_passes: self.model.forward_passes(),
            served: None,
        };
        Ok(Checked {
            rows,
            pass,
            attention: out.attention,
        })
    }

    /// Commits one of the round's tokens after the tip. `row`, the model's logits after it, is known
    /// for a kept draft (the check computed it); the round's last token has none yet.
    fn write(
        &mut self,
        token: u32,
        out: &ChainOutput,
        logits: &[f32],
        chosen_from: Distribution,
        row: Option<Arc<Vec<f32>>>,
    ) -> Result<RoundStep> {
        let source = if self.settings.is_greedy() {
            Source::Greedy
        } else {
            Source::Sampled
        };
        let node = self.place(token, source, out, logits, &chosen_from)?;
        if let Some(row) = row {
            self.set_logits(node, row);
            self.remember_logits(node);
        }
        self.nodes[node].chosen = Some(Arc::new(chosen_from.clone()));
        self.stamp_settings(node);
        Ok(RoundStep {
            step: self.generated() - 1,
            committed: self.nodes[node].record.clone(),
            chosen_from,
        })
    }

    /// After the round: the model's cache holds the path up to `fed` (the round's last token is not
    /// read yet), and the last pass reports that.
    fn settle_caches(&mut self, fed: usize) {
        if self.opts.kv_cache {
            self.fed = fed;
            self.model.cache_truncate(fed);
        } else {
            self.fed = 0;
            self.model.cache_clear();
        }
        self.last_pass = PassReport {
            kv_len: self.model.cache_len(),
            kv_bytes: self.model.cache_bytes(),
            forward_passes: self.model.forward_passes(),
            ..self.last_pass.clone()
        };
    }

    /// A drafted token after the first rejection, never checked: what the check would have said.
    fn unchecked(
        &self,
        history: &[u32],
        proposals: &Proposals,
        i: usize,
        row: &[f32],
        breakers: &sampler::DryBreakers,
    ) -> DraftedToken {
        let mut ids = history.to_vec();
        ids.extend(proposals.tokens[..i].iter().map(|p| p.token));
        let out = self.run_chain(row, &ids, breakers, 1, 0.0);
        let d = &proposals.tokens[i];
        let p = prob_in(&out.kept, d.token);
        DraftedToken {
            token: self.vocab.view(d.token),
            p,
            q: d.q,
            accept_prob: accept_prob(p, d.q),
            u: sampler::uniform(self.settings.seed ^ ACCEPT_SALT, history.len() + i),
            verdict: Verdict::Unchecked,
            model_top: self.vocab.view(out.kept[0].0),
        }
    }

    fn round_last(&self, token: u32, end: RoundEnd, prob: f32, from: &[(u32, f32)]) -> RoundLast {
        RoundLast {
            token: self.vocab.view(token),
            end,
            prob,
            from: from
                .iter()
                .take(self.opts.top_k_shown)
                .map(|&(t, p)| (self.vocab.view(t), p))
                .collect(),
        }
    }
}

/// A drafted or residual token's distribution: the plain draw at its position was not what chose it.
fn without_draw(d: &Distribution) -> Distribution {
    Distribution {
        draw: None,
        ..d.clone()
    }
}
