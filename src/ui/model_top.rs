//! The model's own first token, pinned under the candidates when the penalties or DRY moved it out
//! of the rows on screen: the candidates are in the sampler's order, and without this row a class
//! would read the first one as the model's favourite, and greedy as having taken it.

use super::theme::Theme;
use crate::fmt::{first_fitting, pct, quoted_token};
use crate::protocol::{Distribution, TokenFate};
use ratatui::text::Line;

/// The model's first token when it is not among the first `rows` candidates (those on screen).
pub fn hidden(dist: &Distribution, rows: usize) -> Option<&TokenFate> {
    let top = dist.model_top.as_ref()?;
    let shown = &dist.candidates[..rows.min(dist.candidates.len())];
    (!shown.iter().any(|c| c.token.id == top.token.id)).then_some(top)
}

/// "model's #1 ⟨␣cats⟩ 15.1% → 0.4% after the penalties" (the sampler draws), "… → cut after the
/// penalties" (a cut-off dropped it), "… ranked #3 after the penalties" (greedy, which draws nothing),
/// in the longest form that fits `width`.
pub fn line(dist: &Distribution, top: &TokenFate, width: usize, theme: &Theme) -> Line<'static> {
    let token = quoted_token(&top.token);
    let raw = pct(top.prob);
    let after = match (&dist.draw, top.sampled_prob > 0.0) {
        (None, _) => format!("ranked #{}", top.sampled_rank + 1),
        (Some(_), true) => format!("→ {}", pct(top.sampled_prob)),
        (Some(_), false) => "→ cut".to_string(),
    };
    let forms = [
        format!(" model's #1 {token} {raw} {after} after the penalties"),
        format!(" model's #1 {token} {raw} {after}, penalised"),
        format!(" #1 {token} {raw} {after}, penalised"),
        format!(" #1 {token} {raw} {after}"),
    ];
    Line::styled(first_fitting(&forms, width), theme.key)
}
