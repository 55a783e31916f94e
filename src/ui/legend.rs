//! Legends: what the screen's colours, marks and quotes mean, built from the same constants the views
//! draw with (the help screen lists them all; the transcript's border carries the colour key).

use super::attention_grid::{GAP_MARK, MASK_MARK, WINDOW_MARK};
use super::theme::{Theme, HEAT_BLANK, PROB_ITALIC, PROB_STEPS};
use crate::fmt::FORCED_MARK;
use crate::fmt::{pct, quoted, JS_MAX, QUOTE_CLOSE, QUOTE_OPEN, SPACE_MARK};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// The transcript's colour key: one swatch per probability step ("≥50% ≥20% ≥5% ≥1% <1%"), or the
/// italic rule without colour.
pub fn prob_key(theme: &Theme) -> Vec<Span<'static>> {
    if !theme.has_color() {
        return vec![Span::styled(
            format!("italic = p < {}", step_pct(PROB_ITALIC)),
            theme.prob(0.0),
        )];
    }
    let mut spans: Vec<Span> = PROB_STEPS
        .iter()
        .map(|&p| Span::styled(format!("≥{} ", step_pct(p)), theme.prob(p)))
        .collect();
    let last = PROB_STEPS[PROB_STEPS.len() - 1];
    spans.push(Span::styled(
        format!("<{}", step_pct(last)),
        theme.prob(0.0),
    ));
    spans
}

/// A legend's threshold as a whole percentage where it is one ("50%", not "50.0%").
fn step_pct(p: f32) -> String {
    let x = p * 100.0;
    if (x - x.round()).abs() < 1e-4 {
        format!("{x:.0}%")
    } else {
        pct(p)
    }
}

/// The help's "reading the screen" section, `width` wide: each entry's label, then its meaning
/// wrapped under itself.
pub fn help_lines(theme: &Theme, width: usize) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(" Reading the screen", theme.title)];
    for (label, text) in entries(theme) {
        lines.extend(entry_lines(label, text, width, theme));
    }
    lines
}

/// Draws one entry of the section: its label, then its meaning wrapped under itself.
fn entry_lines(
    label: Vec<Span<'static>>,
    text: String,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let label_w: usize = label.iter().map(|s| s.content.width()).sum();
    let indent = label_w + 3;
    let parts = textwrap::wrap(&text, width.saturating_sub(indent).max(10));
    let mut first = vec![Span::raw(" ")];
    first.extend(label);
    let mut lines = vec![];
    for (i, part) in parts.iter().enumerate() {
        let mut spans = if i == 0 {
            std::mem::take(&mut first)
        } else {
            vec![Span::raw(" ".repeat(indent - 2))]
        };
        spans.push(Span::styled(format!("  {part}"), theme.dim));
        lines.push(Line::from(spans));
    }
    lines
}

/// The section's entries, in order: each a label drawn as the screen draws it, and what it means.
fn entries(theme: &Theme) -> Vec<(Vec<Span<'static>>, String)> {
    let mut colour = vec![Span::styled("p ", theme.text)];
    colour.extend(prob_key(theme));
    vec![
        (
            colour,
            "transcript: how likely each token was when it was chosen".into(),
        ),
        (
            vec![Span::styled(FORCED_MARK, theme.forced)],
            "a token you forced in place of the sampler's pick".into(),
        ),
        (
            vec![Span::styled(quoted(" Paris"), theme.text)],
            format!(
                "a token between {QUOTE_OPEN} {QUOTE_CLOSE}: {SPACE_MARK} a space, ↵ a newline, \
                 <E2 80> part of a character"
            ),
        ),
        (
            vec![Span::styled("█", theme.bar), Span::styled("░", theme.ghost)],
            "bars: █ what the sampler draws from, ░ the model's own p".into(),
        ),
        (
            vec![Span::styled("◀ next", theme.planned)],
            "the sampler's pick; `cut by top-p` rows cannot be drawn".into(),
        ),
        (
            vec![Span::styled("u=0.412", theme.text)],
            "the draw's random number, from 0 to 1: the sampler adds up the kept tokens' \
             probabilities, best first, and takes the first token whose sum passes u"
                .into(),
        ),
        (
            vec![Span::styled("TTFT TPOT", theme.text)],
            "time to first token (reading the prompt, then one sampler run); time per output \
             token (one decode step)"
                .into(),
        ),
        (
            vec![Span::styled("JS", theme.text)],
            format!(
                "Jensen–Shannon divergence between two next-token distributions; its bars and \
                 charts run 0 to ln 2 = {JS_MAX:.2} nats (nothing in common), the same scale everywhere"
            ),
        ),
        (
            vec![Span::styled(MASK_MARK, theme.blocked)],
            format!(
                "attention: masked (the future); blank: weight under {}",
                pct(HEAT_BLANK)
            ),
        ),
        (
            vec![Span::styled(WINDOW_MARK, theme.blocked)],
            "attention: outside a local layer's sliding window (Gemma 3): too old to see".into(),
        ),
        (
            vec![Span::styled(GAP_MARK, theme.dim)],
            "attention: older keys not drawn (the line below says how much they get)".into(),
        ),
        (
            vec![Span::styled("mouse", theme.text)],
            "click a candidate to force it, a generated token to rewind to just before it; the wheel scrolls; Shift+drag selects text".into(),
        ),
    ]
}
