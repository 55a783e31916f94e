//! The fate of one token under the sampler: its raw probability and rank, and its probability and rank
//! after the penalties, DRY and the cut-offs. The repetition panel asks it of the token that would go
//! on with a loop, which the penalties may push far below the rows on screen.

use super::{rank_of, Cutoffs, DryBreakers, PenaltyRows, RowPasses, Tempered};
use crate::protocol::SamplerSettings;

/// One token's figures before and after the chain (ranks 0-based).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fate {
    /// Softmax of the raw logits at temperature 1, and the rank by raw logit.
    pub prob: f32,
    pub rank: usize,
    /// What the sampler draws it with (0 when a cut-off drops it; under greedy, 1 for the argmax and
    /// 0 for every other token), and its rank by penalised logit.
    pub sampled_prob: f32,
    pub sampled_rank: usize,
}

/// `id`'s fate in the chain that `s` and `history` make of `logits` (the same stages as
/// [`super::run_chain_with`]; one more pass over the vocabulary for its rank).
pub fn fate(
    logits: &[f32],
    history: &[u32],
    s: &SamplerSettings,
    breakers: &DryBreakers,
    id: u32,
) -> Fate {
    let rows = PenaltyRows::new(logits, history, s, breakers);
    let t = Tempered::t_of(s.temperature);
    let passes = RowPasses::run(logits, rows.base(), t, s, 1);
    let lse = passes.lse;
    let tempered = Tempered::new(logits, &passes, rows.base(), t);
    // Ties rank by lower id first, as the chain's sorted order does.
    let b = tempered.base[id as usize];
    let sampled_rank = tempered
        .base
        .iter()
        .enumerate()
        .filter(|&(j, &x)| x > b || (x == b && (j as u32) < id))
        .count();
    let greedy = s.is_greedy();
    let sampled_prob = if greedy {
        f32::from(u8::from(sampled_rank == 0))
    } else {
        let cuts = Cutoffs::find(&tempered, s, passes.sorted);
        if sampled_rank < cuts.n_m {
            tempered.prob(id) / cuts.mass_m
        } else {
            0.0
        }
    };
    Fate {
        prob: (logits[id as usize] - lse).exp(),
        rank: rank_of(logits, id),
        sampled_prob,
        sampled_rank,
    }
}
