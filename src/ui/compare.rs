//! The compare view (`x`, or `x` on a branch in the branch list, or a teacher-forcing run from `r`): two
//! paths side by side, aligned step by step, with each token's log-prob and entropy, the divergences between the two
//! next-token distributions over the whole vocabulary (Jensen–Shannon, and KL both ways: in columns
//! where there is room, else for the table's top row on a line of its own), a chart of both log-prob
//! series and the divergence (`compare_chart.rs`), and the sequence totals. Every figure comes from
//! the engine's `Comparison`.

use super::help::panel_hints;
use super::theme::Theme;
use crate::app::keymap::{self, Action, Mode};
use crate::app::App;
use crate::fmt::FORCED_MARK;
use crate::fmt::{fit, pad, quoted_token, shown_step, visible};
use crate::protocol::{AlignedStep, Comparison, PathToken};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

/// Rows of the log-prob chart when the screen has room for it.
const CHART_ROWS: u16 = 7;

/// The two paths' names, as the view labels them.
pub fn names(reference: bool) -> (&'static str, &'static str) {
    if reference {
        ("free", "reference")
    } else {
        ("A", "B")
    }
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let title = if app.lab.reference {
        " Teacher forcing: the reference against free running "
    } else {
        " Compare paths "
    };
    let inner = super::overlays::frame_over(frame, area, title.into(), theme);
    let w = inner.width as usize;
    let hints = panel_hints(Mode::Compare, w, theme);
    let Some(c) = &app.lab.comparison else {
        let [body, foot] =
            Layout::vertical([Constraint::Fill(1), Constraint::Length(hints.len() as u16)])
                .areas(inner);
        let msg = if app.is_busy() {
            "comparing…".to_string()
        } else {
            no_comparison_hint()
        };
        frame.render_widget(
            Paragraph::new(Line::styled(msg, theme.dim))
                .wrap(ratatui::widgets::Wrap { trim: true }),
            body,
        );
        frame.render_widget(Paragraph::new(hints), foot);
        return;
    };
    let mut summary = super::compare_summary::summary_lines(c, app.lab.reference, w, theme);
    if kl_width(w, app.lab.reference).is_none() {
        summary.insert(0, kl_line(c, app.lab.scroll, app.lab.reference, w, theme));
    }
    let chart_rows = if inner.height >= 18 {
        CHART_ROWS.min(inner.height / 3)
    } else {
        0
    };
    // The table takes the rows its steps need; the chart grows into what is left.
    let fixed = 2 + summary.len() as u16 + hints.len() as u16;
    let table_rows = (c.steps.len() as u16 + 1)
        .min(inner.height.saturating_sub(fixed + chart_rows))
        .max(2);
    let (table_c, chart_c) = if chart_rows > 0 {
        (Constraint::Length(table_rows), Constraint::Fill(1))
    } else {
        (Constraint::Fill(1), Constraint::Length(0))
    };
    let [texts, table, chart, sum, foot] = Layout::vertical([
        Constraint::Length(2),
        table_c,
        chart_c,
        Constraint::Length(summary.len() as u16),
        Constraint::Length(hints.len() as u16),
    ])
    .areas(inner);
    frame.render_widget(
        Paragraph::new(path_texts(c, app.lab.reference, w, theme)),
        texts,
    );
    draw_table(frame, table, c, app.lab.scroll, app.lab.reference, theme);
    if chart_rows > 0 {
        super::compare_chart::draw(frame, chart, c, app.lab.reference, theme);
    }
    frame.render_widget(Paragraph::new(summary), sum);
    frame.render_widget(Paragraph::new(hints), foot);
}

/// Each path's text from just before the fork, forced tokens marked, one line each.
fn path_texts(c: &Comparison, reference: bool, w: usize, theme: &Theme) -> Vec<Line<'static>> {
    let from = c.fork_step.unwrap_or(0).saturating_sub(2);
    let (na, nb) = names(reference);
    let label_w = na.width().max(nb.width()) + 1;
    let side = |name: &str, pick: &dyn Fn(&AlignedStep) -> Option<&PathToken>, style: Style| {
        let mut spans = vec![Span::styled(pad(name, label_w), style)];
        if from > 0 {
            spans.push(Span::styled("…", theme.dim));
        }
        let mut used = label_w + usize::from(from > 0);
        for (i, t) in c
            .steps
            .iter()
            .enumerate()
            .skip(from)
            .filter_map(|(i, s)| pick(s).map(|t| (i, t)))
        {
            let mark = if t.forced { FORCED_MARK } else { "" };
            let text = format!("{mark}{}", visible(&t.token.text));
            if used + text.width() > w {
                break;
            }
            used += text.width();
            let style = if t.forced {
                theme.forced
            } else if Some(i) < c.fork_step {
                theme.dim
            } else {
                theme.text
            };
            spans.push(Span::styled(text, style));
        }
        Line::from(spans)
    };
    vec![
        side(na, &|s| s.a.as_ref(), theme.key),
        side(nb, &|s| s.b.as_ref(), theme.planned),
    ]
}

/// The KL columns' headers: KL(A‖B) is what B's distribution costs where A's is the truth.
fn kl_heads(reference: bool) -> [&'static str; 2] {
    if reference {
        ["KL(free‖ref)", "KL(ref‖free)"]
    } else {
        ["KL(A‖B)", "KL(B‖A)"]
    }
}

/// The width of each KL column when the table has room for both (tokens kept at 10 cells or more).
fn kl_width(w: usize, reference: bool) -> Option<usize> {
    let kw = kl_heads(reference)[0].width() + 1;
    (w >= 5 + 2 * (10 + 14) + 6 + 11 + 2 * kw).then_some(kw)
}

/// What to press for a comparison, every key named as the keymap binds it.
pub fn no_comparison_hint() -> String {
    let key = |mode, action| keymap::hint_key(mode, action);
    format!(
        "no comparison yet: {} compares with the path left last; or pick a branch in the branch list \
         ({}) and press {}; or give a reference with {}",
        key(Mode::Normal, Action::OpenCompare),
        key(Mode::Normal, Action::OpenBranches),
        key(Mode::Branches, Action::CompareBranch),
        key(Mode::Normal, Action::OpenReference),
    )
}

/// A divergence to three places, right-aligned in `k` cells; `—` where a path had ended.
fn num(x: Option<f64>, k: usize) -> String {
    x.map_or(format!("{:>k$}", "—"), |x| format!("{x:>k$.3}"))
}

/// Where the table has no KL columns: KL both ways and JS for the step at the top of the table.
fn kl_line(
    c: &Comparison,
    scroll: usize,
    reference: bool,
    w: usize,
    theme: &Theme,
) -> Line<'static> {
    let [ab, ba] = kl_heads(reference);
    let text = c.steps.get(scroll).map_or(String::new(), |s| {
        let (kab, kba, js) = (num(s.kl_ab, 0), num(s.kl_ba, 0), num(s.js, 0));
        format!(
            "step {} (top row): {ab} {kab} · {ba} {kba} · JS {js}",
            shown_step(s.step)
        )
    });
    Line::styled(fit(&text, w), theme.text)
}

/// Widths of the table's columns: token, then its figures.
fn token_width(w: usize) -> usize {
    // step(5) + 2 × (mark, token, figures: token + 14) + separators (6) + JS, bar, top (11)
    (w.saturating_sub(5 + 28 + 6 + 11) / 2).clamp(6, 18)
}

fn draw_table(
    frame: &mut Frame,
    area: Rect,
    c: &Comparison,
    scroll: usize,
    reference: bool,
    theme: &Theme,
) {
    let w = area.width as usize;
    let kw = kl_width(w, reference);
    // The KL columns' text is `2k + 1` wide (a space after them): at 100 columns a row without that
    // one had run a column past the panel, its `top` mark cut.
    let tw = token_width(w - kw.map_or(0, |k| 2 * k + 1));
    let (na, nb) = names(reference);
    let [kl_ab, kl_ba] = kl_heads(reference);
    let kl_head = kw.map_or(String::new(), |k| format!("{kl_ab:>k$}{kl_ba:>k$} "));
    let figures = |name: &str| {
        if reference && name == "reference" {
            format!("{} {:>6} {:>5}", pad(name, tw + 1), "p", "rank")
        } else {
            format!("{} {:>6} {:>5}", pad(name, tw + 1), "log p", "H")
        }
    };
    let head = format!(
        "{} {} │ {} │ {kl_head}{:>6} top",
        pad("step", 4),
        figures(na),
        figures(nb),
        "JS"
    );
    let mut lines = vec![Line::styled(fit(&head, w), theme.title)];
    let rows = (area.height as usize).saturating_sub(1);
    // Where steps are left below, the last row says how many: the rows above it show one fewer.
    let all_fit = c.steps.len() <= scroll + rows;
    let shown = if all_fit {
        rows
    } else {
        rows.saturating_sub(1)
    };
    let cols = (tw, kw, reference);
    for s in c.steps.iter().skip(scroll).take(shown) {
        lines.push(row(s, Some(s.step) == c.fork_step, cols, theme));
    }
    if !all_fit {
        let more = c.steps.len() - scroll - shown;
        let steps = if more == 1 { "step" } else { "steps" };
        let text = format!("↓ {more} more {steps} (↑/↓ scroll)");
        lines.push(Line::styled(text, theme.dim));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// One step's row: its number (`▸` at the fork), each path's cell, the KL columns when shown, the
/// JS divergence with its bar, and whether the top tokens agree. `cols`: the token width, the KL
/// columns' width, and whether B is the reference.
fn row(
    s: &AlignedStep,
    fork: bool,
    (tw, kw, reference): (usize, Option<usize>, bool),
    theme: &Theme,
) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!("{}{:<3} ", if fork { "▸" } else { " " }, shown_step(s.step)),
        if fork { theme.key } else { theme.dim },
    )];
    spans.extend(cell(s.a.as_ref(), tw, false, theme));
    spans.push(Span::styled(" │ ", theme.dim));
    spans.extend(cell(s.b.as_ref(), tw, reference, theme));
    spans.push(Span::styled(" │ ", theme.dim));
    if let Some(k) = kw {
        let text = format!("{}{} ", num(s.kl_ab, k), num(s.kl_ba, k));
        spans.push(Span::styled(text, theme.text));
    }
    match s.js {
        Some(js) => {
            spans.push(Span::styled(format!("{js:>6.3}"), theme.text));
            // On the fixed scale to ln 2: the same length is the same divergence on every row.
            let bar = crate::fmt::scaled_bar(js, crate::fmt::JS_MAX, 3);
            spans.push(Span::styled(pad(&bar, 3), theme.bar));
        }
        None => spans.push(Span::styled(format!("{:>6}   ", "—"), theme.dim)),
    }
    // Once a path has ended there is nothing to compare its top token with: "—", not "≠".
    let (same, style) = match (s.a.is_some() && s.b.is_some(), s.same_top1) {
        (false, _) => (" —", theme.dim),
        (true, true) => (" =", theme.dim),
        (true, false) => (" ≠", theme.forced),
    };
    spans.push(Span::styled(same, style));
    Line::from(spans)
}

/// One path's token and its figures at one step; the reference shows probability and rank.
fn cell(t: Option<&PathToken>, tw: usize, reference: bool, theme: &Theme) -> Vec<Span<'static>> {
    let Some(t) = t else {
        return vec![Span::styled(pad("(ended)", tw + 1 + 13), theme.dim)];
    };
    let mark = if t.forced { FORCED_MARK } else { " " };
    let style = if t.forced {
        theme.forced
    } else {
        theme.prob(t.prob as f32)
    };
    let figures = if reference {
        format!(
            " {:>6} {:>5}",
            crate::fmt::pct(t.prob as f32),
            format!("#{}", t.rank + 1)
        )
    } else {
        format!(" {:>6.2} {:>5.2}", t.logprob, t.entropy)
    };
    vec![
        Span::styled(mark, theme.forced),
        Span::styled(pad(&fit(&quoted_token(&t.token), tw), tw), style),
        Span::styled(figures, theme.text),
    ]
}
