//! What a session shows: distributions as plain data, the attention window, the branch list, the full view.

use super::{ChainOutput, Node, Result, Session, ATTENTION_KEEP};
use crate::protocol::*;

impl Session {
    pub(super) fn describe(&self, out: &ChainOutput, logits: &[f32]) -> Distribution {
        let candidates = out
            .shown
            .iter()
            .zip(&out.final_probs)
            .map(|(&id, &fp)| Candidate {
                token: self.vocab.view(id),
                prob: out.raw_prob(logits, id),
                logprob: logits[id as usize] - out.lse,
                sampled_prob: fp,
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
