//! The sampler chain view (`t`): each candidate's probability after every stage, with where it was cut.

use super::theme::Theme;
use crate::app::App;
use crate::fmt::{pad, pct, quoted_token, widest_token};
use crate::protocol::Distribution;
use ratatui::text::{Line, Span};

/// Columns of the chain view: one per stage, `CELL` wide.
const CELL: usize = 6;
/// The row labels of the token column ("stage →", "kept", "mass left") need this many columns.
const LABEL_W: usize = 9;

fn stage_label(name: &str) -> &str {
    match name {
        "penalties" => "pen",
        "temperature" => "temp",
        other => other,
    }
}

/// Width of the token column: the longest candidate within limits, and never narrower than the row
/// labels when there is room for them.
fn token_width(dist: &Distribution, width: usize) -> usize {
    let avail = width.saturating_sub(4 + CELL * dist.stages.len());
    widest_token(&dist.candidates)
        .clamp(LABEL_W, 16)
        .min(avail)
        .max(4)
}

/// Stage names, then how many tokens each stage keeps.
pub fn header(dist: &Distribution, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let tw = token_width(dist, width);
    let mut names = format!("{:3} {}", "", pad("stage →", tw));
    let mut kept = format!("{:3} {}", "", pad("kept", tw));
    for st in &dist.stages {
        names.push_str(&format!("{:>w$}", stage_label(&st.name), w = CELL));
        kept.push_str(&format!("{:>w$}", compact_count(st.kept), w = CELL));
    }
    vec![
        Line::styled(names, theme.title),
        Line::styled(kept, theme.dim),
    ]
}

/// One candidate across the stages: its renormalised probability, or ✂ where a stage cut it.
pub fn row(app: &App, dist: &Distribution, i: usize, width: usize, theme: &Theme) -> Line<'static> {
    let c = &dist.candidates[i];
    let tw = token_width(dist, width);
    let planned = c.token.id == dist.planned.id;
    let sel = if i == app.selection.candidate {
        "▶"
    } else {
        " "
    };
    let mut spans = vec![
        Span::styled(format!("{sel}{:>2} ", i + 1), theme.key),
        Span::styled(
            pad(&quoted_token(&c.token), tw),
            if planned { theme.planned } else { theme.text },
        ),
    ];
    let mut alive = true;
    for st in &dist.stages {
        let p = st.probs.get(i).copied().unwrap_or(0.0);
        let (text, style) = if p > 0.0 {
            (pct(p), theme.text)
        } else if alive {
            alive = false;
            ("✂".to_string(), theme.error)
        } else {
            ("·".to_string(), theme.dim)
        };
        spans.push(Span::styled(format!("{text:>w$}", w = CELL), style));
    }
    Line::from(spans)
}

/// Under the list: the share of the distribution's mass still left after each stage ([`mass_left`]),
/// which can only fall from one stage to the next.
pub fn mass_line(dist: &Distribution, width: usize, theme: &Theme) -> Line<'static> {
    let tw = token_width(dist, width);
    let mut row = format!("{:3} {}", "", pad("mass left", tw));
    for m in mass_left(dist) {
        row.push_str(&format!("{:>w$}", pct(m), w = CELL));
    }
    Line::styled(row, theme.dim)
}

/// After each stage, the share of the tempered distribution's mass its survivors hold: the running
/// product of each stage's `kept_mass` (the share of the *previous* stage's mass it kept, which read
/// alone seems to rise when top-p keeps more of top-k's survivors than top-k kept of the whole). The
/// stages before the cut-offs reweight without cutting: 100%.
pub fn mass_left(dist: &Distribution) -> Vec<f32> {
    dist.stages
        .iter()
        .scan(1.0f32, |left, st| {
            *left *= st.kept_mass;
            Some(*left)
        })
        .collect()
}

fn compact_count(n: usize) -> String {
    if n >= 10_000 {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}
