//! Scoring the class's guess (predict-then-reveal) as the next tokens of the current path, aside: the
//! guess's tokens go into the KV cache past the tip for one pass and are cut off again, so the tip, the
//! tree, the reports and what the cache holds of the path are as they were.
//!
//! A guess of several tokens is a sequence: `p(" Eiffel Tower") = p(" Eiff") · p("el" | " Eiff") · …`,
//! each factor read with the guess's earlier tokens teacher-forced, exactly what forcing them one by
//! one would record (a position's numbers do not depend on how many rows share its pass).

use super::{Result, Session, SessionError};
use crate::engine::forward::model::ForwardOptions;
use crate::engine::sampler;
use crate::protocol::{GuessScore, GuessToken};

impl Session {
    /// Scores `text` as the class's guess for the next tokens, exactly as given (the front end puts
    /// the word boundary in: `protocol::as_continuation`): tokenised, and each token's raw probability
    /// (temperature 1) and 0-based rank read given the path and the guess's tokens before it; beside
    /// it the model's own greedy continuation of the same length. The session is unchanged.
    pub fn score_guess(&mut self, text: &str) -> Result<GuessScore> {
        if self.path.is_empty() {
            return Err(SessionError::NoPrompt);
        }
        let ids = self.continuation_ids(text)?;
        self.check_room(ids.len())?;
        if let Some(&bad) = ids.iter().find(|&&t| t as usize >= self.model.vocab_size()) {
            return Err(SessionError::BadToken(bad));
        }
        let first = self.logits_at(self.path.len())?;
        let mut rows = vec![first.to_vec()];
        rows.extend(self.rows_past_tip(&ids[..ids.len() - 1])?);
        let tokens: Vec<GuessToken> = ids
            .iter()
            .zip(&rows)
            .map(|(&t, row)| self.guess_token(row, t))
            .collect();
        let (greedy, greedy_logprob) = self.greedy_run(first.to_vec(), ids.len())?;
        let top1 = &greedy[0];
        Ok(GuessScore {
            text: text.to_string(),
            position: self.path.len(),
            logprob: tokens.iter().map(|t| f64::from(t.logprob)).sum(),
            is_greedy: tokens
                .iter()
                .map(|t| t.token.id)
                .eq(greedy.iter().map(|g| g.id)),
            top1: top1.clone(),
            top1_prob: self.guess_token(&first, top1.id).prob,
            tokens,
            greedy,
            greedy_logprob,
        })
    }

    /// Ranks the class's guesses (class mode) at `position` of the current path: each token's raw
    /// probability (temperature 1) and 0-based rank there, the model's `top` likeliest and the
    /// entropy. Reads the logits stored on the path (one pass if they were dropped); the session is
    /// unchanged.
    pub fn rank_tokens(
        &mut self,
        position: usize,
        tokens: &[u32],
        top: usize,
    ) -> Result<crate::protocol::class::TokenRanks> {
        if let Some(&bad) = tokens
            .iter()
            .find(|&&t| t as usize >= self.model.vocab_size())
        {
            return Err(SessionError::BadToken(bad));
        }
        let row = self.logits_at(position)?;
        let entropy = if self.model.is_served() {
            // Log-probabilities of the top candidates only (the rest are -inf).
            let known = row.iter().filter(|l| l.is_finite());
            -known.map(|l| l.exp() * l).sum::<f32>()
        } else {
            sampler::lse_entropy(&row).1
        };
        Ok(crate::protocol::class::TokenRanks {
            position,
            tokens: tokens.iter().map(|&t| self.guess_token(&row, t)).collect(),
            top: sampler::top_n(&row, top)
                .into_iter()
                .map(|t| self.guess_token(&row, t))
                .collect(),
            entropy,
        })
    }

    /// The ids `text` becomes as a continuation: no BOS, even where the tokenizer adds one.
    fn continuation_ids(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids = self.vocab.encode(text)?;
        if self.vocab.adds_bos() && ids.first() == self.vocab.bos_id().as_ref() {
            ids.remove(0);
        }
        if ids.is_empty() {
            return Err(SessionError::NothingToGuess);
        }
        Ok(ids)
    }

    /// One token of a guess under a raw logits row: its probability, log-probability and rank, as a
    /// step's record computes them.
    fn guess_token(&self, row: &[f32], id: u32) -> GuessToken {
        // A served row holds log-probabilities already (normaliser 1).
        let lse = if self.model.is_served() {
            0.0
        } else {
            sampler::lse_entropy(row).0
        };
        let logprob = row[id as usize] - lse;
        GuessToken {
            token: self.vocab.view(id),
            prob: logprob.exp(),
            logprob,
            rank: sampler::rank_of(row, id),
        }
    }

    /// The model's greedy continuation of `len` tokens from the tip (whose logits row is `first`), and
    /// its log-probability.
    fn greedy_run(
        &mut self,
        first: Vec<f32>,
        len: usize,
    ) -> Result<(Vec<crate::protocol::TokenView>, f64)> {
        let (mut ids, mut logprob, mut row) = (Vec::with_capacity(len), 0.0, first);
        loop {
            let t = sampler::top_n(&row, 1)[0];
            logprob += f64::from(self.guess_token(&row, t).logprob);
            ids.push(t);
            if ids.len() == len {
                break;
            }
            row = self.rows_past_tip(&ids)?.pop().expect("one row per token");
        }
        Ok((ids.iter().map(|&t| self.vocab.view(t)).collect(), logprob))
    }

    /// The raw logits after each of `extra` read past the tip, in one pass that is cut off again: the
    /// KV cache afterwards holds what it held of the path, and `fed` says what it said.
    fn rows_past_tip(&mut self, extra: &[u32]) -> Result<Vec<Vec<f32>>> {
        if extra.is_empty() {
            return Ok(vec![]);
        }
        let len = self.path.len();
        let fed = self.fed;
        let from = if self.opts.kv_cache { fed.min(len) } else { 0 };
        let mut tokens: Vec<u32> = self.path[from..]
            .iter()
            .map(|&n| self.nodes[n].token)
            .collect();
        tokens.extend_from_slice(extra);
        let opts = ForwardOptions {
            capture_rows: 0,
            all_logits: true,
            lens: false,
        };
        let out = self.model.forward(&tokens, from, opts);
        // Only the path's own positions stay: below `from` the pass changed nothing, and from there on
        // it wrote the path itself before the guess.
        if self.opts.kv_cache {
            self.model.cache_truncate(len);
        } else {
            self.model.cache_clear();
        }
        self.fed = fed;
        let out = out?;
        let vocab = out.logits.len() / tokens.len();
        let skip = tokens.len() - extra.len();
        Ok(out
            .logits
            .chunks(vocab)
            .skip(skip)
            .map(<[f32]>::to_vec)
            .collect())
    }
}
