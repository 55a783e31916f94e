//! The head map (`H`): every head of every layer at the tip, one cell each, shaded by the chosen score
//! (previous-token, induction or entropy) with the attention map's shade characters, so that it reads
//! without colour. Layers run across (30 fit in 80 columns), heads down. A cursor picks a cell; its
//! three scores are written out under the grid, with the heads that score highest.

use super::help::panel_hints;
use super::theme::Theme;
use crate::app::inspect::Score;
use crate::app::keymap::{hint_key, Action, Mode};
use crate::app::App;
use crate::fmt::{fit, pad};
use crate::protocol::HeadMap;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

/// Where each shade starts, on the score's 0..=1 level: below the first a cell is blank, then ░ ▒ ▓ █.
/// These are the attention map's steps (`Theme::heat` takes the square of the level, and steps on
/// its square root).
pub const SHADE_STEPS: [f32; 4] = [0.08, 0.3, 0.5, 0.7];
/// Width of the head labels on the left ("head 8 ").
const LABEL_W: usize = 8;
/// Heads listed as scoring highest.
const BEST: usize = 3;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let block = Block::bordered()
        .border_style(theme.title)
        .title(Span::styled(
            " Head map: every head at the tip ",
            theme.title,
        ));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let hints = panel_hints(Mode::HeadMap, inner.width as usize, theme);
    let [body, foot] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(hints.len() as u16)])
            .areas(inner);
    let served = super::served::info(app);
    let lines = match &app.inspect.heads {
        _ if served.is_some() => {
            let info = served.expect("checked");
            vec![super::served::cannot_show(info, "the head map", theme)]
        }
        Some(map) if !map.scores.is_empty() => map_lines(app, map, body.width as usize, theme),
        _ => {
            let msg = if app.is_busy() {
                "looking inside the pass…".to_string()
            } else {
                format!(
                    "no head map yet: {} looks inside the pass at the tip",
                    hint_key(Mode::HeadMap, Action::Reinspect)
                )
            };
            vec![Line::styled(msg, theme.dim)]
        }
    };
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
    frame.render_widget(Paragraph::new(hints), foot);
}

/// The shade character for a level in 0..=1.
pub fn shade(level: f32) -> char {
    let [blank, light, medium, dark] = SHADE_STEPS;
    match level {
        x if x < blank => ' ',
        x if x < light => '░',
        x if x < medium => '▒',
        x if x < dark => '▓',
        _ => '█',
    }
}

/// What the shades mean for this score.
fn legend(score: Score) -> String {
    let [a, b, c, d] = SHADE_STEPS;
    let steps = format!("blank <{a} ░ <{b} ▒ <{c} ▓ <{d} █");
    match score {
        Score::Prev => format!("attention on the token before: {steps} (of 1)"),
        Score::Induction => {
            format!("attention on what followed this token last time: {steps} (of 1)")
        }
        Score::Entropy => {
            format!("how spread out, of the most it can be here: {steps} (even)")
        }
    }
}

/// The head map's lines: what is shown, the legend, the layer numbers and the cursor's column, one
/// row per head, then the cell under the cursor and the heads that score highest.
fn map_lines(app: &App, map: &HeadMap, w: usize, theme: &Theme) -> Vec<Line<'static>> {
    let score = app.inspect.score;
    let n_layer = map.scores.len();
    let n_head = map.scores.first().map_or(0, Vec::len);
    let (cl, ch) = app.inspect.cell;
    let (cl, ch) = (
        cl.min(n_layer.saturating_sub(1)),
        ch.min(n_head.saturating_sub(1)),
    );
    let cell = (w.saturating_sub(LABEL_W) / n_layer.max(1)).clamp(1, 4);
    let mut lines = vec![
        shown_line(app, map, w, theme),
        Line::styled(fit(&legend(score), w), theme.dim),
        Line::styled(fit(&layer_labels(n_layer, cell), w), theme.title),
    ];
    // The cursor's layer, marked over its column (the row is marked by its label).
    let mark = format!("{}▼", " ".repeat(LABEL_W + cl * cell + (cell - 1) / 2));
    lines.push(Line::styled(fit(&mark, w), theme.newest));
    for h in 0..n_head {
        let cursor = (h == ch).then_some(cl);
        lines.push(head_row(map, h, cursor, cell, score, theme));
    }
    lines.extend(cursor_line(map, (cl, ch), w, theme));
    lines.push(best_line(map, score, w, theme));
    lines
}

/// Draws the first line: the position looked at and the score that shades the map, or that the map
/// is stale and how to look again.
fn shown_line(app: &App, map: &HeadMap, w: usize, theme: &Theme) -> Line<'static> {
    let after = app
        .session
        .as_ref()
        .and_then(|s| s.tokens.get(map.position))
        .map(|t| crate::fmt::quoted_token(&t.token))
        .unwrap_or_default();
    if app.heads_stale() {
        let again = hint_key(Mode::HeadMap, Action::Reinspect);
        Line::from(vec![
            Span::styled(" stale ", theme.warn_badge),
            Span::styled(
                fit(
                    &format!(
                        " computed at {after} (position {}); the path has moved on: {again} looks again",
                        map.position
                    ),
                    w.saturating_sub(7),
                ),
                theme.text,
            ),
        ])
    } else {
        let next = hint_key(Mode::HeadMap, Action::NextScore);
        let (at, score) = (map.position, app.inspect.score.name());
        // Whole clauses give way, never a word cut ("(tab: next sc…" at 80 columns).
        let forms = [
            format!("at {after} (position {at}), shaded by the {score} score ({next}: next score)"),
            format!("shaded by the {score} score ({next}: next score) at {after}"),
            format!("shaded by the {score} score ({next}: next)"),
        ];
        Line::styled(fit(&crate::fmt::first_fitting(&forms, w), w), theme.text)
    }
}

/// Draws the layer numbers across: every layer when they fit in a cell, else every fifth.
fn layer_labels(n_layer: usize, cell: usize) -> String {
    let mut labels = pad("layer", LABEL_W);
    let every = if cell >= 3 { 1 } else { 5 };
    // Numbered from 1, as the attention panel numbers them.
    let mut l = if every == 1 { 0 } else { every - 1 };
    if every > 1 {
        labels.push_str(&" ".repeat(cell * l));
    }
    while l < n_layer {
        let text = pad(
            &(l + 1).to_string(),
            (cell * every).min(cell * (n_layer - l)),
        );
        labels.push_str(&text);
        l += every;
    }
    labels
}

/// Draws head `h`'s row: its label, then one shaded cell per layer; `cursor` is the cursor's layer
/// when the cursor is on this head.
fn head_row(
    map: &HeadMap,
    h: usize,
    cursor: Option<usize>,
    cell: usize,
    score: Score,
    theme: &Theme,
) -> Line<'static> {
    let here = cursor.is_some();
    let mut spans = vec![Span::styled(
        pad(
            &format!("{}head {}", if here { "▶" } else { " " }, h + 1),
            LABEL_W,
        ),
        if here { theme.newest } else { theme.text },
    )];
    for (l, heads) in map.scores.iter().enumerate() {
        let level = heads.get(h).map_or(0.0, |s| score.level(s, map.position));
        let (_, mut style) = theme.heat(level * level);
        let g = shade(level);
        let text: String = match cell {
            1 => g.to_string(),
            2 => [g, g].iter().collect(),
            c => std::iter::repeat_n(g, c - 1).chain([' ']).collect(),
        };
        if cursor == Some(l) {
            style = style.add_modifier(Modifier::REVERSED);
            // The cursor shows even on a blank cell.
            let text = if g == ' ' { "·".repeat(cell) } else { text };
            spans.push(Span::styled(text, style));
        } else {
            spans.push(Span::styled(text, style));
        }
    }
    Line::from(spans)
}

/// Draws the cell under the cursor, `(layer, head)`, in words: its three scores.
fn cursor_line(
    map: &HeadMap,
    (cl, ch): (usize, usize),
    w: usize,
    theme: &Theme,
) -> Option<Line<'static>> {
    let s = map.scores.get(cl).and_then(|hs| hs.get(ch))?;
    let most = ((map.position + 1) as f32).ln();
    Some(Line::styled(
        fit(
            &format!(
                "layer {} · head {}: prev {:.2} · induction {:.2} · entropy {:.2} of {most:.2} nats",
                cl + 1,
                ch + 1,
                s.prev, s.induction, s.entropy
            ),
            w,
        ),
        theme.key,
    ))
}

/// Draws the heads that score highest on this score, best first.
fn best_line(map: &HeadMap, score: Score, w: usize, theme: &Theme) -> Line<'static> {
    let best = best_heads(map, score);
    let label = match score {
        Score::Entropy => "most spread",
        _ => "highest",
    };
    let list: Vec<String> = best
        .iter()
        .map(|&(l, h, v)| format!("L{} H{} {v:.2}", l + 1, h + 1))
        .collect();
    Line::styled(
        fit(&format!("{label}: {}", list.join(" · ")), w),
        theme.text,
    )
}

/// The heads that score highest, best first: (layer, head, raw score).
pub fn best_heads(map: &HeadMap, score: Score) -> Vec<(usize, usize, f32)> {
    let mut all: Vec<(usize, usize, f32)> = map
        .scores
        .iter()
        .enumerate()
        .flat_map(|(l, hs)| {
            hs.iter()
                .enumerate()
                .map(move |(h, s)| (l, h, score.raw(s)))
        })
        .collect();
    all.sort_by(|a, b| b.2.total_cmp(&a.2));
    all.truncate(BEST);
    all
}
