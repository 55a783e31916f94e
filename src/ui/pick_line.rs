//! The next-token panel's last line: what the sampler picks, the greedy top row or where the random
//! draw landed (under speculative rounds, what a plain step would draw).

use super::theme::Theme;
use crate::fmt::{pct, quoted_token};
use crate::protocol::Distribution;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// What the sampler picks: the greedy top row, or where the random draw landed.
pub(super) fn pick_line(
    dist: &Distribution,
    width: usize,
    rounds: bool,
    theme: &Theme,
) -> Line<'static> {
    let planned = quoted_token(&dist.planned);
    let (lead, after) = match &dist.draw {
        None => {
            // Greedy said plainly; the words give way before the token does.
            let forms = [
                " (always the top row: no draw)",
                " (always the top row)",
                "",
            ];
            let lead = "greedy → ";
            let after = forms
                .iter()
                .find(|f| lead.width() + f.width() + planned.width() <= width)
                .unwrap_or(&"");
            (lead.to_string(), after.to_string())
        }
        Some(d) => {
            let kept = dist.stages.last().map(|s| s.kept).unwrap_or(0);
            let after = format!(" (#{} of {kept}, {})", d.rank + 1, pct(dist.planned_prob));
            // u is the draw's random number: said in words where the line has room. Under rounds,
            // the draw is a plain step's, which the next press does not take.
            let forms = match rounds {
                false => vec![
                    format!("draw, random u={:.3} → ", d.u),
                    format!("draw u={:.3} → ", d.u),
                ],
                true => vec![
                    format!("a plain step would draw u={:.3} → ", d.u),
                    format!("plain draw u={:.3} → ", d.u),
                    format!("plain u={:.3} → ", d.u),
                ],
            };
            let room = width.saturating_sub(after.width() + planned.width());
            (crate::fmt::first_fitting(&forms, room), after)
        }
    };
    let token_w = width.saturating_sub(lead.width() + after.width()).max(3);
    Line::from(vec![
        Span::styled(lead, theme.dim),
        Span::styled(crate::fmt::fit_quoted(&planned, token_w), theme.planned),
        Span::styled(after, theme.dim),
    ])
}
