//! Steps 1 and 1b of the chain: the repetition (CTRL, Keskar et al. 2019), frequency and presence
//! penalties over the last `penalty_last_n` tokens, with llama.cpp's semantics; then DRY over that row.

use super::{dry_penalties, DryBreakers};
use crate::protocol::SamplerSettings;
use std::collections::HashMap;

fn penalties_on(s: &SamplerSettings) -> bool {
    let off = s.repeat_penalty == 1.0 && s.frequency_penalty == 0.0 && s.presence_penalty == 0.0;
    !off && s.penalty_last_n > 0
}

/// Applies repetition (CTRL, Keskar et al. 2019), frequency and presence penalties over the last
/// `penalty_last_n` tokens of `history`.
pub fn apply_penalties(logits: &mut [f32], history: &[u32], s: &SamplerSettings) {
    if !penalties_on(s) {
        return;
    }
    let recent = &history[history.len().saturating_sub(s.penalty_last_n)..];
    let mut counts: HashMap<u32, usize> = HashMap::new();
    for &t in recent {
        *counts.entry(t).or_default() += 1;
    }
    for (&t, &n) in &counts {
        let Some(l) = logits.get_mut(t as usize) else {
            continue;
        };
        if s.repeat_penalty != 1.0 {
            *l = if *l > 0.0 {
                *l / s.repeat_penalty
            } else {
                *l * s.repeat_penalty
            };
        }
        *l -= n as f32 * s.frequency_penalty + s.presence_penalty;
    }
}

/// Step 1: the penalised logits, only when a penalty is on and there is history to penalise; otherwise
/// `None`, and the raw row stands in (no copy of the vocabulary).
pub(super) fn penalised(logits: &[f32], history: &[u32], s: &SamplerSettings) -> Option<Vec<f32>> {
    (penalties_on(s) && !history.is_empty()).then(|| {
        let mut pen = logits.to_vec();
        apply_penalties(&mut pen, history, s);
        pen
    })
}

/// Steps 1 and 1b: the row after the repetition penalties (`pen`), and after DRY (`dried`), each `None`
/// when it does not change the row before it.
pub(super) struct PenaltyRows {
    pub pen: Option<Vec<f32>>,
    pub dried: Option<Vec<f32>>,
}

impl PenaltyRows {
    pub fn new(
        logits: &[f32],
        history: &[u32],
        s: &SamplerSettings,
        breakers: &DryBreakers,
    ) -> Self {
        let pen = penalised(logits, history, s);
        let dried = dried(pen.as_deref().unwrap_or(logits), history, s, breakers);
        PenaltyRows { pen, dried }
    }

    /// The last row a penalty changed, if any: what temperature and the cut-offs work on.
    pub fn base(&self) -> Option<&[f32]> {
        self.dried.as_deref().or(self.pen.as_deref())
    }
}

/// Step 1b: DRY over the penalised row, only when it is on and penalises some token this step.
fn dried(
    row: &[f32],
    history: &[u32],
    s: &SamplerSettings,
    breakers: &DryBreakers,
) -> Option<Vec<f32>> {
    let penalties = dry_penalties(history, s, breakers);
    (!penalties.is_empty()).then(|| {
        let mut out = row.to_vec();
        for (t, p) in penalties {
            if let Some(l) = out.get_mut(t as usize) {
                *l -= p;
            }
        }
        out
    })
}
