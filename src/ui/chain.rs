//! The sampler chain view (`t`): each candidate's probability after every stage, with where it was cut.
//! Under greedy the stages after the one greedy ranks by play no part (greedy draws nothing for a
//! temperature to shape or a cut-off to trim), so the view ends there with one column, `greedy`,
//! which keeps the top row alone.

use super::distribution::greedy_ranks;
use super::theme::Theme;
use crate::app::App;
use crate::fmt::{pad, pct, quoted_token, widest_token};
use crate::protocol::{Distribution, StageReport};
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

/// One column of the view: a stage the pick went through, or greedy's own.
struct Column<'a> {
    name: &'a str,
    kept: usize,
    /// Each candidate's probability after it (0 where it cut the candidate).
    probs: std::borrow::Cow<'a, [f32]>,
    /// The share of the previous column's mass it kept.
    kept_mass: f32,
}

impl Column<'_> {
    /// `CELL` columns, or one more than its name where that is longer (`greedy`).
    fn width(&self) -> usize {
        CELL.max(self.name.len() + 1)
    }
}

/// The columns the pick went through: every stage when the sampler draws; under greedy, the stages
/// up to the one greedy ranks by ([`greedy_ranks`]), then `greedy`, the pick alone.
fn columns<'a>(dist: &'a Distribution) -> Vec<Column<'a>> {
    let column = |st: &'a StageReport| Column {
        name: stage_label(&st.name),
        kept: st.kept,
        probs: std::borrow::Cow::Borrowed(&st.probs[..]),
        kept_mass: st.kept_mass,
    };
    let Some(ranks) = greedy_ranks(dist) else {
        return dist.stages.iter().map(column).collect();
    };
    let through = dist
        .stages
        .iter()
        .position(|st| std::ptr::eq(st, ranks))
        .map_or(0, |i| i + 1);
    let mut cols: Vec<Column> = dist.stages[..through].iter().map(column).collect();
    let top = dist
        .candidates
        .iter()
        .position(|c| c.token.id == dist.planned.id);
    cols.push(Column {
        name: "greedy",
        kept: 1,
        probs: (0..dist.candidates.len())
            .map(|i| if Some(i) == top { 1.0 } else { 0.0 })
            .collect(),
        kept_mass: top.and_then(|i| ranks.probs.get(i)).copied().unwrap_or(0.0),
    });
    cols
}

/// Width of the token column: the longest candidate within limits, and never narrower than the row
/// labels when there is room for them.
fn token_width(dist: &Distribution, width: usize) -> usize {
    let cells: usize = columns(dist).iter().map(Column::width).sum();
    let avail = width.saturating_sub(4 + cells);
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
    for col in columns(dist) {
        names.push_str(&format!("{:>w$}", col.name, w = col.width()));
        kept.push_str(&format!("{:>w$}", compact_count(col.kept), w = col.width()));
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
    for col in columns(dist) {
        let p = col.probs.get(i).copied().unwrap_or(0.0);
        let (text, style) = if p > 0.0 {
            (pct(p), theme.text)
        } else if alive {
            alive = false;
            ("✂".to_string(), theme.error)
        } else {
            ("·".to_string(), theme.dim)
        };
        spans.push(Span::styled(format!("{text:>w$}", w = col.width()), style));
    }
    Line::from(spans)
}

/// Under the list: the share of the distribution's mass still left after each stage ([`mass_left`]),
/// which can only fall from one stage to the next.
pub fn mass_line(dist: &Distribution, width: usize, theme: &Theme) -> Line<'static> {
    let tw = token_width(dist, width);
    let mut row = format!("{:3} {}", "", pad("mass left", tw));
    for (m, col) in mass_left(dist).into_iter().zip(columns(dist)) {
        row.push_str(&format!("{:>w$}", pct(m), w = col.width()));
    }
    Line::styled(row, theme.dim)
}

/// After each column, the share of the tempered distribution's mass its survivors hold: the running
/// product of each stage's `kept_mass` (the share of the *previous* stage's mass it kept, which read
/// alone seems to rise when top-p keeps more of top-k's survivors than top-k kept of the whole). The
/// stages before the cut-offs reweight without cutting: 100%. Under greedy, the last column's is the
/// pick's own probability.
pub fn mass_left(dist: &Distribution) -> Vec<f32> {
    columns(dist)
        .iter()
        .scan(1.0f32, |left, col| {
            *left *= col.kept_mass;
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
