//! The logit lens (`L`): for the position at the tip, what each layer would predict if the model
//! stopped there (its residual stream through the final norm and the output head). One row per layer:
//! its top 3 with their probabilities, then the rank and probability of the token the sampler plans,
//! with a bar; above the rows, that token's probability by layer on one line, so the answer rising
//! through the last layers shows at a glance. Rows that do not fit scroll, the last layers first.

use super::help::panel_hints;
use super::theme::Theme;
use crate::app::keymap::{hint_key, Action, Mode};
use crate::app::App;
use crate::fmt::{bar, fit, pad, pad_left, pct, quoted_token};
use crate::protocol::{LensLayer, LogitLens};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

/// Lines above the layer rows: what is shown, the line by layer, the column names.
const HEAD_LINES: usize = 3;
/// The levels of the line by layer, lowest first.
const SPARK: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
/// The lowest probability the line by layer tells apart (its lowest block).
pub const SPARK_FLOOR: f32 = 1e-5;
/// Widest the probability bar grows.
const BAR_MAX: usize = 30;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let block = Block::bordered()
        .border_style(theme.title)
        .title(Span::styled(
            " Logit lens: what each layer would predict ",
            theme.title,
        ));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let hints = panel_hints(Mode::Lens, inner.width as usize, theme);
    let [body, foot] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(hints.len() as u16)])
            .areas(inner);
    let served = super::served::info(app);
    let lines = match &app.inspect.lens {
        _ if served.is_some() => {
            let info = served.expect("checked");
            vec![super::served::cannot_show(info, "the logit lens", theme)]
        }
        Some(lens) => lens_lines(app, lens, body, theme),
        None => {
            let msg = if app.is_busy() {
                "looking inside the pass…".to_string()
            } else {
                format!(
                    "no lens yet: {} looks inside the pass at the tip",
                    hint_key(Mode::Lens, Action::Reinspect)
                )
            };
            vec![Line::styled(msg, theme.dim)]
        }
    };
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
    frame.render_widget(Paragraph::new(hints), foot);
}

/// Rows for layers in the body of a panel on this screen (the panel takes all but the status lines).
fn layer_rows(app: &App) -> usize {
    let inner_w = app.screen.width.saturating_sub(2) as usize;
    let hints = panel_hints(Mode::Lens, inner_w, &Theme::new(app.screen.theme)).len();
    let inner_h = app.screen.height.saturating_sub(2 + 2) as usize;
    inner_h.saturating_sub(HEAD_LINES + hints)
}

/// How far the rows can scroll up from the last layer on this screen.
pub fn max_scroll(app: &App) -> usize {
    let n = app.inspect.lens.as_ref().map_or(0, |l| l.layers.len());
    let rows = layer_rows(app);
    if n <= rows || rows < 3 {
        0
    } else {
        n - (rows - 1)
    }
}

/// The layers drawn, `first..end`, for `n` layers in `rows` rows scrolled `scroll` up from the last.
/// A marker row takes the place of the layers above (and below, once scrolled) that do not fit.
fn window(n: usize, rows: usize, scroll: usize) -> (usize, usize) {
    if n <= rows {
        return (0, n);
    }
    if rows < 3 {
        return (n - rows, n);
    }
    let top = n - (rows - 1);
    let s = scroll.min(top);
    let first = top - s;
    let end = match s {
        0 => n,
        _ if first == 0 => rows - 1,
        _ => first + rows - 2,
    };
    (first, end)
}

/// The chosen token's probability at each layer as one line of block heights, on a log scale from
/// [`SPARK_FLOOR`] (or less: the lowest block) to 1 (the highest): a rank climbing from thousands to
/// the top shows well before the probability does.
pub fn sparkline(lens: &LogitLens) -> String {
    let decades = -SPARK_FLOOR.log10();
    lens.layers
        .iter()
        .map(|l| {
            let level = ((l.chosen_p.max(1e-30).log10() + decades) / decades).clamp(0.0, 1.0);
            SPARK[((level * 7.0).round() as usize).min(7)]
        })
        .collect()
}

/// The first layer from which the chosen token stays on top to the last layer, if it ends on top.
pub fn on_top_from(lens: &LogitLens) -> Option<usize> {
    let last = lens.layers.last()?;
    if last.chosen_rank != 0 {
        return None;
    }
    let below = lens.layers.iter().rposition(|l| l.chosen_rank != 0);
    Some(below.map_or(0, |i| lens.layers[i + 1].layer))
}

/// Where the chosen token is the layer's #1, in words that agree with the rows: "#1 from layer 20"
/// when it stays on top to the last layer, else the runs of layers where it is ("#1 at layers 13–17,
/// not at the last"), or "never #1 at any layer". Layers counted from 1, as the rows count them.
pub fn top_note(lens: &LogitLens) -> String {
    if let Some(l) = on_top_from(lens) {
        return format!("#1 from layer {}", l + 1);
    }
    let mut runs: Vec<(usize, usize)> = vec![];
    for l in lens.layers.iter().filter(|l| l.chosen_rank == 0) {
        let n = l.layer + 1;
        match runs.last_mut() {
            Some(run) if run.1 + 1 == n => run.1 = n,
            _ => runs.push((n, n)),
        }
    }
    if runs.is_empty() {
        return "never #1 at any layer".into();
    }
    let plural = if runs.len() > 1 || runs[0].0 != runs[0].1 {
        "layers"
    } else {
        "layer"
    };
    let listed: Vec<String> = runs
        .iter()
        .map(|&(a, b)| match a == b {
            true => a.to_string(),
            false => format!("{a}–{b}"),
        })
        .collect();
    format!("#1 at {plural} {}, not at the last", listed.join(", "))
}

/// The lens's lines: what is shown, the chosen token's line by layer, the column names, then one row
/// per layer in the window that fits, with markers for the layers above and below it.
fn lens_lines(app: &App, lens: &LogitLens, body: Rect, theme: &Theme) -> Vec<Line<'static>> {
    let w = body.width as usize;
    let chosen = quoted_token(&lens.chosen);
    let mut lines = vec![
        shown_line(app, lens, &chosen, w, theme),
        by_layer_line(lens, &chosen, w, theme),
    ];
    // Column widths: the layer, three tokens with their p, then the chosen token's rank, p and bar.
    let tok_w = match w {
        w if w < 90 => 9,
        w if w < 140 => 11,
        _ => 16,
    };
    let fixed = 6 + 3 * (tok_w + 7) + 2 + 7 + 6 + 1;
    let bar_w = w.saturating_sub(fixed).min(BAR_MAX);
    let top3 = 3 * (tok_w + 7);
    lines.push(Line::styled(
        fit(
            &format!(
                "{}{}│ {}{} {}",
                pad("layer", 6),
                pad("top 3 at this layer", top3),
                pad_left("rank", 7),
                pad_left("p", 6),
                fit(&chosen, bar_w),
            ),
            w,
        ),
        theme.title,
    ));
    let n = lens.layers.len();
    let rows = (body.height as usize).saturating_sub(HEAD_LINES);
    let (first, end) = window(n, rows, app.inspect.scroll_up);
    let marker = |text: String| Line::styled(fit(&format!("  ⋮   {text}"), w), theme.newest);
    if first > 0 {
        lines.push(marker(format!(
            "layers 1–{first} above: {} shows them",
            hint_key(Mode::Lens, Action::Up)
        )));
    }
    for l in &lens.layers[first..end] {
        lines.push(layer_row(l, lens, tok_w, bar_w, theme));
    }
    if end < n {
        lines.push(marker(format!(
            "layers {}–{n} below: {} shows them",
            end + 1,
            hint_key(Mode::Lens, Action::Down)
        )));
    }
    lines
}

/// Draws the first line: the position looked at and the token the sampler plans there, or that the
/// lens is stale and how to look again.
fn shown_line(app: &App, lens: &LogitLens, chosen: &str, w: usize, theme: &Theme) -> Line<'static> {
    let after = app
        .session
        .as_ref()
        .and_then(|s| s.tokens.get(lens.position))
        .map(|t| quoted_token(&t.token))
        .unwrap_or_default();
    if app.lens_stale() {
        let again = hint_key(Mode::Lens, Action::Reinspect);
        Line::from(vec![
            Span::styled(" stale ", theme.warn_badge),
            Span::styled(
                fit(
                    &format!(
                        " computed after {after} (position {}); the path has moved on: {again} looks again",
                        lens.position
                    ),
                    w.saturating_sub(7),
                ),
                theme.text,
            ),
        ])
    } else {
        Line::styled(
            fit(
                &format!(
                    "after {after} (position {}) the sampler plans {chosen}: each layer's guess",
                    lens.position
                ),
                w,
            ),
            theme.text,
        )
    }
}

/// Draws the chosen token's probability by layer as one line, and where it reaches the top.
fn by_layer_line(lens: &LogitLens, chosen: &str, w: usize, theme: &Theme) -> Line<'static> {
    let n = lens.layers.len();
    let lead = format!("log p({chosen}) layer 1 ");
    let tail = format!(" {n}");
    let used = lead.width() + n + tail.width();
    // The note in full where it fits, else in short ("#1 at L13–17, not last").
    let long = format!(" · {}", top_note(lens));
    let top = if used + long.width() <= w {
        long
    } else {
        format!(
            " · {}",
            top_note(lens)
                .replace(" at any layer", "")
                .replace("layers ", "L")
                .replace("layer ", "L")
                .replace("not at the last", "not last")
        )
    };
    Line::from(vec![
        Span::styled(lead, theme.text),
        Span::styled(sparkline(lens), theme.planned),
        Span::styled(tail, theme.text),
        Span::styled(fit(&top, w.saturating_sub(used)), theme.dim),
    ])
}

/// Draws one layer's row: its number, its top 3 with their probabilities, then the chosen token's
/// rank, probability and bar.
fn layer_row(
    l: &LensLayer,
    lens: &LogitLens,
    tok_w: usize,
    bar_w: usize,
    theme: &Theme,
) -> Line<'static> {
    let mut spans = vec![Span::styled(format!("{:>5} ", l.layer + 1), theme.text)];
    for i in 0..3 {
        let (tok, p, style) = match l.top.get(i) {
            Some(t) => {
                let style = if t.token.id == lens.chosen.id {
                    theme.planned
                } else {
                    theme.text
                };
                (quoted_token(&t.token), pct(t.p), style)
            }
            None => (String::new(), String::new(), theme.text),
        };
        spans.push(Span::styled(pad(&tok, tok_w), style));
        spans.push(Span::styled(format!("{} ", pad_left(&p, 6)), theme.dim));
    }
    let rank_style = if l.chosen_rank == 0 {
        theme.planned
    } else {
        theme.text
    };
    spans.push(Span::styled("│ ", theme.border));
    spans.push(Span::styled(
        pad_left(&format!("#{}", l.chosen_rank + 1), 7),
        rank_style,
    ));
    spans.push(Span::styled(pad_left(&pct(l.chosen_p), 6), rank_style));
    spans.push(Span::raw(" "));
    spans.push(Span::styled(bar(l.chosen_p, bar_w), theme.bar));
    Line::from(spans)
}
