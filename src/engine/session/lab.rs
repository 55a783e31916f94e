//! The lab's reads over the tree: two paths compared step by step over the whole vocabulary. Reads
//! only: the tree, the path and the reports stay as they are. A logits row that was dropped to save
//! memory is recomputed with one pass over its path (which invalidates the KV cache past the paths'
//! shared prefix, as a branch switch would).

use super::edit::common_prefix;
use super::{Result, Session, SessionError};
use crate::analysis::{Divergence, LogProbs};
use crate::engine::forward::model::ForwardOptions;
use crate::protocol::{AlignedStep, Comparison, PathSummary, PathToken, REJOIN_MIN_STEPS};
use std::sync::Arc;

impl Session {
    /// The tip's node id: the leaf `BranchInfo::id` names for the current path.
    pub fn tip_id(&self) -> Option<usize> {
        self.path.last().copied()
    }

    /// Compares the paths to leaves `a` and `b` (as in `BranchInfo::id`), step by step from the first
    /// generated token. Each step's distributions are the model's raw ones over the whole vocabulary.
    pub fn compare(&mut self, a: usize, b: usize) -> Result<Comparison> {
        self.compare_from(a, b, self.prompt_len)
    }

    /// `compare`, from position `start` of both paths on (at least the prompt's length): step 0 is the
    /// token at `start`, and each side's text and totals cover its tokens from there. A reference run
    /// compares from where the reference began, so the tokens before it are neither scored nor shown.
    fn compare_from(&mut self, a: usize, b: usize, start: usize) -> Result<Comparison> {
        for leaf in [a, b] {
            if leaf >= self.nodes.len() || leaf + 1 < self.prompt_len {
                return Err(SessionError::BadBranch(leaf));
            }
        }
        let pa = self.path_to(a);
        let pb = self.path_to(b);
        let start = start.max(self.prompt_len);
        if self.prompt_len == 0 || pa.len() < start || pb.len() < start {
            return Err(SessionError::NoPrompt);
        }
        let shared = common_prefix(&pa, &pb);
        let (na, nb) = (pa.len() - start, pb.len() - start);
        let fork_step = (shared < pa.len().max(pb.len()) && shared < pa.len().min(pb.len()))
            .then(|| shared - start);
        let mut steps = Vec::with_capacity(na.max(nb));
        for i in 0..na.max(nb) {
            let pos = start + i;
            let la = (i < na).then(|| self.logprobs_at(&pa, pos)).transpose()?;
            // Before the fork both paths share the node and so the distribution.
            let lb = if pos <= shared && i < nb && la.is_some() {
                la.clone()
            } else {
                (i < nb).then(|| self.logprobs_at(&pb, pos)).transpose()?
            };
            let div = match (&la, &lb) {
                (Some(_), Some(_)) if pos <= shared => Some(Divergence::ZERO),
                // A served row knows only its top K: the divergence needs the tails, unknown here.
                (Some(_), Some(_)) if self.model.is_served() => None,
                (Some(x), Some(y)) => Some(Divergence::between(x, y)),
                _ => None,
            };
            let same_top1 = matches!((&la, &lb), (Some(x), Some(y)) if x.argmax() == y.argmax());
            steps.push(AlignedStep {
                step: i,
                a: la.map(|l| self.path_token(pa[pos], &l)),
                b: lb.map(|l| self.path_token(pb[pos], &l)),
                kl_ab: div.map(|d| d.kl_ab),
                kl_ba: div.map(|d| d.kl_ba),
                js: div.map(|d| d.js),
                same_top1,
            });
        }
        let after_fork: Vec<f64> = steps
            .iter()
            .skip(fork_step.unwrap_or(steps.len()))
            .filter_map(|s| s.js)
            .collect();
        let mean_js = if after_fork.is_empty() {
            0.0
        } else {
            after_fork.iter().sum::<f64>() / after_fork.len() as f64
        };
        Ok(Comparison {
            fork_step,
            a: self.summary(a, start, &steps, fork_step, |s| s.a.as_ref()),
            b: self.summary(b, start, &steps, fork_step, |s| s.b.as_ref()),
            rejoined_at: fork_step.and_then(|f| rejoined_at(&steps, f)),
            steps,
            mean_js,
        })
    }

    /// The raw distribution position `pos` of `path` was chosen from: the logits stored on the node
    /// before it, recomputed if they were dropped.
    fn logprobs_at(&mut self, path: &[usize], pos: usize) -> Result<LogProbs> {
        let logits = self.logits_after(path, pos - 1)?;
        if self.model.is_served() {
            // Already log-probabilities over the whole vocabulary (the unknown tail at
            // `UNKNOWN_LOGIT`): renormalising over the K known would overstate each of them.
            return Ok(LogProbs(logits.iter().map(|&l| l as f64).collect()));
        }
        Ok(LogProbs::from_logits(&logits))
    }

    /// The raw logits after the current path's first `p` tokens: the distribution for position `p`
    /// (`1 <= p <= len`). A dropped row is recomputed with one pass; the tree is unchanged.
    pub fn logits_at(&mut self, p: usize) -> Result<Arc<Vec<f32>>> {
        if p == 0 || p > self.path.len() {
            return Err(SessionError::Internal(format!(
                "no distribution at position {p} of a path of {}",
                self.path.len()
            )));
        }
        let path = self.path.clone();
        self.logits_after(&path, p - 1)
    }

    /// The logits stored on `path[k]`; if they were dropped, one pass over the path recomputes them.
    fn logits_after(&mut self, path: &[usize], k: usize) -> Result<Arc<Vec<f32>>> {
        if let Some(l) = &self.nodes[path[k]].logits {
            return Ok(l.clone());
        }
        let out = self.read_aside(
            path,
            k,
            ForwardOptions {
                capture_rows: 0,
                all_logits: false,
                lens: false,
            },
        )?;
        let logits = Arc::new(out.logits);
        self.set_logits(path[k], logits.clone());
        self.remember_logits(path[k]);
        Ok(logits)
    }

    /// One pass that ends at `path[k]` (any path of the tree), outside the tree's records: for reads
    /// such as a dropped logits row, the logit lens or the head map. It reuses what the KV cache holds
    /// of `path` and leaves `fed` saying how much of the current path the cache still holds.
    pub(super) fn read_aside(
        &mut self,
        path: &[usize],
        k: usize,
        opts: ForwardOptions,
    ) -> Result<crate::engine::forward::model::ForwardOutput> {
        let shared = common_prefix(&self.path, &path[..=k]);
        let reuse = if self.opts.kv_cache {
            self.fed.min(shared).min(k)
        } else {
            0
        };
        // Below `reuse` the cache is untouched; from there on it will hold `path`.
        self.fed = reuse;
        let tokens: Vec<u32> = path[reuse..=k]
            .iter()
            .map(|&n| self.nodes[n].token)
            .collect();
        let out = self.model.forward(&tokens, reuse, opts)?;
        if self.opts.kv_cache {
            self.fed = shared;
        } else {
            self.model.cache_clear();
        }
        Ok(out)
    }

    fn path_token(&self, node: usize, l: &LogProbs) -> PathToken {
        let n = &self.nodes[node];
        let lp = l.logprob(n.token);
        PathToken {
            token: self.vocab.view(n.token),
            forced: n.record.source.by_hand(),
            prob: lp.exp(),
            logprob: lp,
            rank: l.rank(n.token),
            entropy: l.entropy(),
            top1: self.vocab.view(l.argmax()),
        }
    }

    /// One side's totals over its tokens from position `start` on.
    fn summary(
        &self,
        leaf: usize,
        start: usize,
        steps: &[AlignedStep],
        fork_step: Option<usize>,
        side: impl Fn(&AlignedStep) -> Option<&crate::protocol::PathToken>,
    ) -> PathSummary {
        let path = self.path_to(leaf);
        let ids: Vec<u32> = path[start..].iter().map(|&n| self.nodes[n].token).collect();
        let toks: Vec<&PathToken> = steps.iter().filter_map(&side).collect();
        let free: Vec<f64> = steps
            .iter()
            .skip(fork_step.unwrap_or(0))
            .filter_map(&side)
            .filter(|t| !t.forced)
            .map(|t| t.logprob)
            .collect();
        PathSummary {
            leaf,
            text: self.vocab.decode(&ids),
            tokens: ids.len(),
            // Folded from +0.0: an empty `sum()` of floats is -0.0.
            logprob: toks.iter().fold(0.0, |acc, t| acc + t.logprob),
            forced_logprob: toks
                .iter()
                .filter(|t| t.forced)
                .fold(0.0, |acc, t| acc + t.logprob),
            free_mean_logprob: (!free.is_empty())
                .then(|| free.iter().sum::<f64>() / free.len() as f64),
            free_tokens: free.len(),
        }
    }
}

/// The first step after `fork` from which both paths hold the same token and agree on the top token
/// through the last step both have, when that run is at least `REJOIN_MIN_STEPS` long.
fn rejoined_at(steps: &[AlignedStep], fork: usize) -> Option<usize> {
    let both: Vec<&AlignedStep> = steps
        .iter()
        .filter(|s| s.a.is_some() && s.b.is_some())
        .collect();
    let agree = |s: &AlignedStep| {
        s.same_top1 && s.a.as_ref().map(|t| t.token.id) == s.b.as_ref().map(|t| t.token.id)
    };
    let run = both.iter().rev().take_while(|s| agree(s)).count();
    if run < REJOIN_MIN_STEPS {
        return None;
    }
    let first = both[both.len() - run].step;
    (first > fork).then_some(first)
}

impl Session {
    /// Teacher forcing against free running, from the tip: forces every token of `reference` (one
    /// branch), goes back, runs free for `free_steps` steps (as many as the reference has, by default)
    /// with the current sampler (another branch,
    /// stopping at an end of text it chose), leaves the free path current, and compares the two (A is
    /// free running, B the reference) from the tip they started at: step 0 is the reference's first
    /// token, and each side holds only its own run's tokens (never the ones generated or forced before).
    /// All or nothing: on a failure the session is as it was.
    /// `progress(done, total)` hears each token of both runs.
    pub fn reference_run(
        &mut self,
        reference: &str,
        free_steps: Option<usize>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Comparison> {
        let ids = self.vocab.encode(reference)?;
        if ids.is_empty() {
            return Err(SessionError::NothingToForce);
        }
        let free = free_steps.unwrap_or(ids.len());
        self.check_room(ids.len().max(free))?;
        if let Some(&bad) = ids.iter().find(|&&t| t as usize >= self.model.vocab_size()) {
            return Err(SessionError::BadToken(bad));
        }
        self.atomically(|s| {
            let start = s.path.len();
            let total = ids.len() + free;
            for (i, &t) in ids.iter().enumerate() {
                s.commit(super::Choice::Force(t))?;
                progress(i + 1, total);
            }
            let reference_leaf = *s.path.last().expect("forced");
            s.path.truncate(start);
            s.fed = s.fed.min(start);
            for i in 0..free {
                let r = s.commit(super::Choice::Sample)?;
                progress(ids.len() + i + 1, total);
                if s.ends_text(&r) {
                    break;
                }
            }
            let free_leaf = *s.path.last().expect("stepped");
            // From where the reference began: tokens generated or forced before it are not its own.
            s.compare_from(free_leaf, reference_leaf, start)
        })
    }
}
