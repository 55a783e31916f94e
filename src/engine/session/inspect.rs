//! Looking inside the pass at the tip: the logit lens and the head map. The tip's token is fed again
//! at its own position with the lens on and its attention row captured over every key; the cache ends
//! as it was (same tokens, same bits: `docs/NUMERICS.md`), and the tree, the path and the reports are
//! unchanged.

use super::{Result, Session, SessionError};
use crate::analysis::{head_score, LogProbs};
use crate::engine::forward::model::{AttentionRows, ForwardOptions};
use crate::engine::sampler::top_n;
use crate::protocol::{HeadMap, Inspection, LensLayer, LensToken, LogitLens};

/// Tokens listed per lens layer.
pub const LENS_TOP: usize = 3;

impl Session {
    /// Inspects the tip: the logit lens (following `chosen`, or the sampler's planned token) and/or the
    /// head map. One forward pass of the tip token.
    pub fn inspect(&mut self, lens: bool, heads: bool, chosen: Option<u32>) -> Result<Inspection> {
        if self.model.is_served() {
            return Err(SessionError::NotServed(match (lens, heads) {
                (true, false) => "the logit lens",
                (false, true) => "the head map",
                _ => "the logit lens or the head map",
            }));
        }
        let t = self
            .path
            .len()
            .checked_sub(1)
            .ok_or(SessionError::NoPrompt)?;
        let chosen = match chosen {
            Some(id) if id as usize >= self.model.vocab_size() => {
                return Err(SessionError::BadToken(id))
            }
            Some(id) => id,
            None => self.chain()?.0.planned,
        };
        // Positions before the tip are read from the cache where it holds them.
        let path = self.path.clone();
        let out = self.read_aside(
            &path,
            t,
            ForwardOptions {
                capture_rows: usize::from(heads),
                all_logits: false,
                lens,
            },
        )?;
        let lens = lens.then(|| self.lens_of(&out.lens, t, chosen));
        let heads = heads.then(|| self.head_map(&out.attention, t));
        Ok(Inspection {
            lens,
            heads,
            forward_passes: self.forward_passes(),
        })
    }

    /// The logit lens at position `t` from each layer's logits, following `chosen`.
    fn lens_of(&self, layers: &[Vec<f32>], t: usize, chosen: u32) -> LogitLens {
        let layer = |(layer, logits): (usize, &Vec<f32>)| {
            let l = LogProbs::from_logits(logits);
            LensLayer {
                layer,
                top: top_n(logits, LENS_TOP)
                    .into_iter()
                    .map(|id| LensToken {
                        token: self.vocab.view(id),
                        p: l.logprob(id).exp() as f32,
                    })
                    .collect(),
                chosen_rank: l.rank(chosen),
                chosen_p: l.logprob(chosen).exp() as f32,
            }
        };
        LogitLens {
            position: t,
            chosen: self.vocab.view(chosen),
            layers: layers.iter().enumerate().map(layer).collect(),
        }
    }

    /// Every head's score at position `t` from the attention rows captured over every key.
    fn head_map(&self, a: &AttentionRows, t: usize) -> HeadMap {
        let c = self.model.config();
        let ids = self.tokens();
        let score = |l: usize, h: usize| {
            let row = &a.data[(l * c.n_head + h) * a.kv_len..][..a.kv_len];
            head_score(row, &ids, t)
        };
        HeadMap {
            position: t,
            scores: (0..c.n_layer)
                .map(|l| (0..c.n_head).map(|h| score(l, h)).collect())
                .collect(),
        }
    }
}
