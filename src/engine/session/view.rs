//! What a session shows: distributions as plain data, the attention window, the branch list, the full view.

use super::SessionError;
use super::{ChainOutput, Result, Session, ATTENTION_KEEP};
use crate::engine::sampler;
use crate::engine::session_file::SavedPass;
use crate::protocol::*;
use std::sync::Arc;

/// The chain at the tip, the logits it ran over, and the chain described for a report.
pub(super) type Described = (Arc<ChainOutput>, Arc<Vec<f32>>, Arc<Distribution>);

impl Session {
    pub(super) fn describe(&self, out: &ChainOutput, logits: &[f32]) -> Distribution {
        let ranks = out.shown_ranks(logits);
        let candidates = out
            .shown
            .iter()
            .zip(&out.final_probs)
            .zip(ranks)
            .map(|((&id, &fp), rank)| Candidate {
                token: self.vocab.view(id),
                prob: out.raw_prob(logits, id),
                logprob: logits[id as usize] - out.lse,
                sampled_prob: fp,
                rank,
            })
            .collect();
        let eos_prob = self
            .vocab
            .eos_ids()
            .iter()
            .filter(|&&e| (e as usize) < logits.len())
            .map(|&e| out.raw_prob(logits, e))
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
            loop_next: self.loop_next(logits),
            model_top: self.model_top(out, logits),
            known_mass: self.model.is_served().then(|| known_mass(logits)),
        }
    }

    /// The loop at the tip, if the path ends in one: the token one period back goes on with it, and
    /// its fate in the chain (one more pass over the vocabulary, only while looping).
    fn loop_next(&self, logits: &[f32]) -> Option<TokenFate> {
        let history = self.tokens();
        let cycle = crate::analysis::tip_cycle(&history)?;
        let id = history[history.len() - cycle.period];
        Some(self.fate_of(id, logits))
    }

    /// The model's first token, when a penalty or DRY moved it off the sampler's first row, and its
    /// fate in the chain (one more pass over the vocabulary, only then).
    fn model_top(&self, out: &ChainOutput, logits: &[f32]) -> Option<TokenFate> {
        if out.shown_is_raw {
            return None;
        }
        let top = *sampler::top_n(logits, 1).first()?;
        if out.shown.first() == Some(&top) {
            return None;
        }
        Some(self.fate_of(top, logits))
    }

    /// `id`'s figures before and after the chain under the session's settings.
    fn fate_of(&self, id: u32, logits: &[f32]) -> TokenFate {
        let history = self.tokens();
        // The breakers the chain just used (built by `dry_breakers` when DRY is on), or none.
        let none = sampler::DryBreakers::none();
        let breakers = match &self.dry_breakers {
            Some((built_for, b)) if *built_for == self.settings.dry_sequence_breakers => b.as_ref(),
            _ => &none,
        };
        let f = sampler::fate(logits, &history, &self.settings, breakers, id);
        TokenFate {
            token: self.vocab.view(id),
            prob: f.prob,
            rank: f.rank,
            sampled_prob: f.sampled_prob,
            sampled_rank: f.sampled_rank,
        }
    }

    /// Attention over the last `attention_window` positions, every layer and head: the rows the tree
    /// keeps, shared rather than copied.
    pub fn window(&self) -> AttentionWindow {
        let c = self.model.config();
        let len = self
            .opts
            .attention_window
            .min(ATTENTION_KEEP)
            .min(self.path.len());
        let start = self.path.len() - len;
        let rows = self.path[start..]
            .iter()
            .map(|&n| {
                let node = &self.nodes[n];
                WindowRow {
                    weights: node.attn.clone(),
                    cols: node.attn_cols,
                    first_key: node.attn_first.clone(),
                }
            })
            .collect();
        AttentionWindow::from_rows(start, c.n_layer, c.n_head, rows)
    }

    /// Leaves of the tree below the prompt: the branches a user can switch to.
    pub fn branches(&self) -> Vec<BranchInfo> {
        let tip = self.path.last().copied();
        let leaves = self.nodes.iter().enumerate().filter(|(id, node)| {
            node.children.is_empty() && (node.record.source != Source::Prompt || Some(*id) == tip)
        });
        leaves
            .map(|(id, _)| {
                let path = self.path_to(id);
                let generated = &path[self.prompt_len.min(path.len())..];
                let mean_logprob = if generated.is_empty() {
                    0.0
                } else {
                    let sum: f32 = generated
                        .iter()
                        .map(|&n| self.nodes[n].record.logprob)
                        .sum();
                    sum / generated.len() as f32
                };
                let fork = super::edit::common_prefix(&path, &self.path);
                BranchInfo {
                    id,
                    len: generated.len(),
                    fork_position: fork,
                    mean_logprob,
                    preview: self.tail_text(generated, 40),
                    before_fork: self.tail_text(&path[..fork], 30),
                    after_fork: self.head_text(&path[fork..], 40),
                    current: path == self.path,
                    class_choices: generated
                        .iter()
                        .filter(|&&n| self.nodes[n].record.source == Source::Class)
                        .count(),
                    forced_at_fork: path
                        .get(fork)
                        .is_some_and(|&n| self.nodes[n].record.source.by_hand()),
                }
            })
            .collect()
    }

    /// The last `chars` characters of the text of `nodes`, decoding only as many tokens as that needs.
    fn tail_text(&self, nodes: &[usize], chars: usize) -> String {
        let text = self.edge_text(nodes, chars, Edge::Tail);
        let skip = text.chars().count().saturating_sub(chars);
        text.chars().skip(skip).collect()
    }

    /// The first `chars` characters of the text of `nodes`, decoding only as many tokens as that needs.
    fn head_text(&self, nodes: &[usize], chars: usize) -> String {
        self.edge_text(nodes, chars, Edge::Head)
            .chars()
            .take(chars)
            .collect()
    }

    /// The text of enough tokens at one end of `nodes` to hold `chars` characters there. Most tokens
    /// are several characters, so a short run is decoded first and a longer one only if it falls
    /// short. A token is at least one character, except partial UTF-8 bytes: `chars + 8` tokens always
    /// do; a shorter run must give 4 characters more than asked, since a multi-byte character cut at
    /// the run's far edge decodes as up to 3 U+FFFD there.
    fn edge_text(&self, nodes: &[usize], chars: usize, edge: Edge) -> String {
        let most = nodes.len().min(chars + 8);
        let mut n = most.min(chars / 3 + 4);
        loop {
            let run = match edge {
                Edge::Tail => &nodes[nodes.len() - n..],
                Edge::Head => &nodes[..n],
            };
            let ids: Vec<u32> = run.iter().map(|&k| self.nodes[k].token).collect();
            let text = self.vocab.decode(&ids);
            if n == most || text.chars().count() >= chars + 4 {
                return text;
            }
            n = most.min(2 * n);
        }
    }

    /// Each generated token's step pass.
    fn generated_passes(&self) -> impl Iterator<Item = SavedPass> + '_ {
        self.path[self.prompt_len..]
            .iter()
            .map(|&n| self.nodes[n].pass.unwrap_or(SavedPass::step(0.0, true)))
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
            passes_before_prompt: self.passes_before_prompt,
            prefill: self.prefill.clone(),
            decode_ms: self.generated_passes().map(|p| p.ms).collect(),
            decode_kv: self.generated_passes().map(|p| p.kv_cache).collect(),
            decode_round: self.generated_passes().map(|p| p.round).collect(),
            branches: self.branches(),
            settings: self.settings.clone(),
            typed_prompt: self.typed_prompt(),
            ab: None,
            last_choice: self
                .path
                .last()
                .and_then(|&n| self.nodes[n].chosen.as_deref().cloned()),
            answers: self.loaded_answers().to_vec(),
            draft: self.draft_info(),
        })
    }
}

impl Session {
    /// The distribution for the next position, with the sampler's plan. No forward pass unless the tip's
    /// logits were dropped.
    pub fn distribution(&mut self) -> Result<Distribution> {
        Ok(Distribution::clone(&self.described()?.2))
    }

    /// The chain at the tip, its logits, and the chain described (memoised with the chain, and shared
    /// with the reports that show it).
    pub(super) fn described(&mut self) -> Result<Described> {
        let (out, logits) = self.chain()?;
        if let Some(d) = self.chain_memo.as_ref().and_then(|m| m.described.clone()) {
            return Ok((out, logits, d));
        }
        let d = Arc::new(self.describe(&out, &logits));
        if let Some(m) = &mut self.chain_memo {
            m.described = Some(d.clone());
        }
        Ok((out, logits, d))
    }

    /// One vocabulary entry as a candidate at the current position (for search results).
    pub fn candidate(&mut self, id: u32) -> Result<Candidate> {
        if id as usize >= self.model.vocab_size() {
            return Err(SessionError::BadToken(id));
        }
        let (out, logits) = self.chain()?;
        let sampled_prob = out
            .shown
            .iter()
            .position(|&s| s == id)
            .map_or(0.0, |r| out.final_probs[r]);
        Ok(Candidate {
            token: self.vocab.view(id),
            prob: out.raw_prob(&logits, id),
            logprob: logits[id as usize] - out.lse,
            sampled_prob,
            rank: crate::engine::sampler::rank_of(&logits, id),
        })
    }

    /// Vocabulary search for the `/` box, as candidates at the current position (after a word, a token
    /// with a leading space first). A tokenizer given with `--tokenizer` may know ids the model has no
    /// row for: those are left out.
    pub fn search(&mut self, query: &str, limit: usize) -> Result<Vec<Candidate>> {
        if self.vocab.is_remote() {
            return Err(SessionError::NotServed(
                "a vocabulary search with the server's tokenizer (it lists no vocabulary); pass the model's tokenizer.json with --tokenizer, or force text with `i`",
            ));
        }
        let vocab_size = self.model.vocab_size();
        let last = self
            .path
            .last()
            .map(|&n| self.vocab.view(self.nodes[n].token).text);
        let after_word = last.is_some_and(|t| t.ends_with(|c: char| c.is_alphanumeric()));
        let ids: Vec<u32> = self
            .vocab
            .search(query, limit, after_word)
            .into_iter()
            .filter(|&id| (id as usize) < vocab_size)
            .collect();
        ids.into_iter().map(|id| self.candidate(id)).collect()
    }

    /// The newest query row of the last pass, over every key: `rows[layer][head][key]`.
    pub fn newest_attention(&self) -> Option<NewestAttention> {
        let a = &self.last_attention;
        if a.rows == 0 {
            return None;
        }
        let c = self.model.config();
        let rows = (0..c.n_layer)
            .map(|l| {
                (0..c.n_head)
                    .map(|h| {
                        let base = ((l * c.n_head + h) * a.rows + a.rows - 1) * a.kv_len;
                        a.data[base..base + a.kv_len].to_vec()
                    })
                    .collect()
            })
            .collect();
        Some(NewestAttention {
            query_position: a.first_row + a.rows - 1,
            rows,
        })
    }
}

/// The attention of the newest position over every key, for each layer and head.
#[derive(Debug, Clone, PartialEq)]
pub struct NewestAttention {
    pub query_position: usize,
    /// `rows[layer][head][key]`.
    pub rows: Vec<Vec<Vec<f32>>>,
}

/// The probability mass a served row's known candidates cover (its unknown tail is `UNKNOWN_LOGIT`,
/// which is exactly 0 in f32).
fn known_mass(logits: &[f32]) -> f32 {
    logits
        .iter()
        .filter(|&&l| l > crate::engine::backend::UNKNOWN_LOGIT)
        .map(|&l| l.exp())
        .sum()
}

/// Which end of a run of tokens a text is read from.
#[derive(Clone, Copy)]
enum Edge {
    Head,
    Tail,
}
