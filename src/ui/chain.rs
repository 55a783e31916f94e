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

/// Width of the elision mark that stands for the stage columns left out.
const ELIDED_W: usize = 2;

/// The token column's width and the columns that fit `width` beside it: every column when they fit;
/// else the first (the model's raw distribution), the last (what the draw takes) and the one the
/// sampler panel is changing (`focus`), then as many others as fit, nearest the end first, with an
/// elision mark (`None`) for each run left out. A column is never cut part-way: "82.0%" cut to "8"
/// had read as 8% where the sampler panel covered the view's right side.
fn fit(dist: &Distribution, width: usize, focus: Option<&str>) -> (usize, Vec<Option<usize>>) {
    let cols = columns(dist);
    let widths: Vec<usize> = cols.iter().map(Column::width).collect();
    let all: usize = widths.iter().sum();
    let tw = widest_token(&dist.candidates).clamp(LABEL_W, 16);
    let avail = |tw: usize| width.saturating_sub(4 + tw);
    if all <= avail(tw) {
        return (tw, (0..cols.len()).map(Some).collect());
    }
    if all <= avail(LABEL_W) {
        return (avail(0) - all, (0..cols.len()).map(Some).collect());
    }
    let tw = LABEL_W.min(tw);
    let last = cols.len() - 1;
    let mut chosen = vec![0, last];
    chosen.extend(
        cols.iter()
            .position(|c| Some(c.name) == focus.map(stage_label)),
    );
    let used = |chosen: &[usize]| {
        let mut c = chosen.to_vec();
        c.sort_unstable();
        c.dedup();
        let gaps = c.windows(2).filter(|w| w[1] > w[0] + 1).count();
        c.iter().map(|&i| widths[i]).sum::<usize>() + gaps * ELIDED_W
    };
    for i in (1..last).rev() {
        let mut more = chosen.clone();
        more.push(i);
        if used(&more) <= avail(tw) {
            chosen = more;
        }
    }
    chosen.sort_unstable();
    chosen.dedup();
    let mut shown = vec![];
    for (k, &i) in chosen.iter().enumerate() {
        if k > 0 && i > chosen[k - 1] + 1 {
            shown.push(None);
        }
        shown.push(Some(i));
    }
    (tw, shown)
}

/// The stage the sampler panel's selected setting acts in, while it is open: its column stays shown.
fn focus(app: &App) -> Option<&'static str> {
    use crate::protocol::{Group, Setting};
    if app.mode != crate::app::keymap::Mode::Sampler {
        return None;
    }
    let setting = *crate::app::sampler_panel::FIELDS.get(app.sampler.field)?;
    Some(match setting {
        Setting::Temperature => "temperature",
        Setting::TopK => "top-k",
        Setting::TopP => "top-p",
        Setting::MinP => "min-p",
        s if s.names().group == Group::Penalty => "penalties",
        s if s.names().group == Group::Dry => "dry",
        _ => return None,
    })
}

/// Width of the token column (see [`fit`]).
fn token_width(dist: &Distribution, width: usize, focus: Option<&str>) -> usize {
    fit(dist, width, focus).0
}

/// Each column's cell, by [`fit`]'s choice: `cell(column)` for a shown one, "…" for the mark.
fn cells(
    dist: &Distribution,
    (width, focus): (usize, Option<&str>),
    mut cell: impl FnMut(usize, &Column) -> String,
) -> String {
    let cols = columns(dist);
    let all: Vec<String> = cols.iter().enumerate().map(|(i, c)| cell(i, c)).collect();
    fit(dist, width, focus)
        .1
        .iter()
        .map(|c| match c {
            Some(i) => format!("{:>w$}", all[*i], w = cols[*i].width()),
            None => format!("{:>w$}", "…", w = ELIDED_W),
        })
        .collect()
}

/// Stage names, then how many tokens each stage keeps.
pub fn header(app: &App, dist: &Distribution, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let fit_to = (width, focus(app));
    let tw = token_width(dist, width, fit_to.1);
    let names = format!(
        "{:3} {}{}",
        "",
        pad("stage →", tw),
        cells(dist, fit_to, |_, col| col.name.to_string())
    );
    let kept = format!(
        "{:3} {}{}",
        "",
        pad("kept", tw),
        cells(dist, fit_to, |_, col| compact_count(col.kept))
    );
    vec![
        Line::styled(names, theme.title),
        Line::styled(kept, theme.dim),
    ]
}

/// One candidate across the stages: its renormalised probability, or ✂ where a stage cut it.
pub fn row(app: &App, dist: &Distribution, i: usize, width: usize, theme: &Theme) -> Line<'static> {
    let c = &dist.candidates[i];
    let tw = token_width(dist, width, focus(app));
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
    // Over every column, so the ✂ marks the stage that cut it even where that column is left out.
    let cols = columns(dist);
    let mut alive = true;
    let all: Vec<(String, ratatui::style::Style)> = cols
        .iter()
        .map(|col| {
            let p = col.probs.get(i).copied().unwrap_or(0.0);
            if p > 0.0 {
                (pct(p), theme.text)
            } else if alive {
                alive = false;
                ("✂".to_string(), theme.error)
            } else {
                ("·".to_string(), theme.dim)
            }
        })
        .collect();
    for c in fit(dist, width, focus(app)).1 {
        spans.push(match c {
            Some(k) => Span::styled(format!("{:>w$}", all[k].0, w = cols[k].width()), all[k].1),
            None => Span::styled(format!("{:>w$}", "…", w = ELIDED_W), theme.dim),
        });
    }
    Line::from(spans)
}

/// Under the list: the share of the distribution's mass still left after each stage ([`mass_left`]),
/// which can only fall from one stage to the next.
pub fn mass_line(app: &App, dist: &Distribution, width: usize, theme: &Theme) -> Line<'static> {
    let fit_to = (width, focus(app));
    let tw = token_width(dist, width, fit_to.1);
    let mass = mass_left(dist);
    let row = format!(
        "{:3} {}{}",
        "",
        pad("mass left", tw),
        cells(dist, fit_to, |i, _| pct(mass[i]))
    );
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
