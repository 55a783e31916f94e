//! What one attention head does at one query position, in three numbers: how much it looks at the
//! previous token, how much it looks where an induction head would (the token that followed an
//! earlier occurrence of the current token; Olsson et al. 2022), and how spread out it is.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HeadScore {
    /// Attention on position `t − 1`.
    pub prev: f32,
    /// Attention on every position `j + 1` where `tokens[j]` equals the current token `tokens[t]`
    /// (`j < t`): where a head that copies "what came next last time" looks. 0 when the current token
    /// has not occurred before.
    pub induction: f32,
    /// Entropy of the attention row in nats: near 0 for a head that looks at one key.
    pub entropy: f32,
}

/// Scores one head's attention `row` (weights over keys `0..=t`) for the query at position `t` of
/// `tokens`.
pub fn head_score(row: &[f32], tokens: &[u32], t: usize) -> HeadScore {
    let prev = if t > 0 { row[t - 1] } else { 0.0 };
    let current = tokens[t];
    let induction = (0..t)
        .filter(|&j| tokens[j] == current)
        .fold(0.0, |acc, j| acc + row[j + 1]);
    let entropy = -row[..=t]
        .iter()
        .filter(|&&w| w > 0.0)
        .map(|&w| w as f64 * (w as f64).ln())
        .sum::<f64>() as f32;
    HeadScore {
        prev,
        induction,
        entropy: entropy.max(0.0),
    }
}
