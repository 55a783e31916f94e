//! Panels that open over the screen: sampler settings (`s`), search hits (`/`); the branch list (`b`)
//! is drawn by `branches.rs` in the same frame.

use super::fmt::{fit, pad, pct, quoted_token};
use super::help::panel_hints;
use super::theme::Theme;
use crate::app::keymap::Mode;
use crate::app::sampler_panel::FIELDS;
use crate::app::App;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

/// Draws `lines` in a bordered panel over `area` with the mode's key hints at the bottom.
pub(super) fn panel(
    frame: &mut Frame,
    area: Rect,
    title: String,
    lines: Vec<Line>,
    mode: Mode,
    theme: &Theme,
) {
    let block = Block::bordered()
        .border_style(theme.title)
        .title(Span::styled(title, theme.title));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let hints = panel_hints(mode, inner.width as usize, theme);
    let [body, foot] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(hints.len() as u16)])
            .areas(inner);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), body);
    frame.render_widget(Paragraph::new(hints), foot);
}

/// Sampler settings: each change is sent at once and re-ranks the current distribution.
pub fn sampler(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let mut lines = vec![];
    for (i, f) in FIELDS.iter().enumerate() {
        let sel = i == app.sampler.field;
        let style = if sel { theme.selected } else { theme.text };
        let name = pad(
            &format!("{}{}", if sel { "▶ " } else { "  " }, f.name()),
            17,
        );
        lines.push(Line::from(vec![
            Span::styled(name, style),
            Span::styled(
                format!("{:>6}", f.value(&app.sampler.settings)),
                style.patch(theme.key),
            ),
        ]));
    }
    let f = FIELDS[app.sampler.field];
    lines.push(Line::styled(f.explain(), theme.dim));
    lines.push(Line::styled("applies at once: no forward pass", theme.info));
    panel(frame, area, " Sampler ".into(), lines, Mode::Sampler, theme);
}

/// Vocabulary search hits for the query being typed: each with the model's probability, its row in
/// the next-token list when it is there, and (where there is room) the sampler's probability and id.
pub fn search(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let w = area.width.saturating_sub(2) as usize;
    let tw = if w >= 56 { 16 } else { 12 };
    // Columns past the token, most useful first; those that do not fit are left out.
    let base = 2 + tw + 8 + 6;
    let with_sampler = base + 8 <= w;
    let with_id = base + 8 * usize::from(with_sampler) + 10 <= w;
    let mut lines = vec![];
    if app.input.hits.is_empty() {
        let msg = if app.input.text.is_empty() {
            "type to search the vocabulary"
        } else {
            "no hits yet"
        };
        lines.push(Line::styled(msg, theme.dim));
    } else {
        let mut head = format!("  {} {:>7} {:>5}", pad("token", tw), "model", "list");
        if with_sampler {
            head.push_str(&format!(" {:>7}", "sampler"));
        }
        lines.push(Line::styled(head, theme.title));
    }
    let shown = app.candidates();
    for (i, h) in app.input.hits.iter().enumerate() {
        let sel = i == app.input.selected;
        let style = if sel { theme.selected } else { theme.text };
        let row = shown
            .iter()
            .position(|c| c.token.id == h.token.id)
            .map_or("—".to_string(), |r| format!("#{}", r + 1));
        let mut spans = vec![
            Span::styled(if sel { "▶ " } else { "  " }, theme.key),
            Span::styled(pad(&quoted_token(&h.token), tw), style),
            Span::styled(format!(" {:>7}", pct(h.prob)), style),
            Span::styled(format!(" {row:>5}"), theme.dim),
        ];
        if with_sampler {
            let sampled = if h.sampled_prob > 0.0 {
                pct(h.sampled_prob)
            } else {
                "cut".into()
            };
            spans.push(Span::styled(format!(" {sampled:>7}"), theme.dim));
        }
        if with_id {
            spans.push(Span::styled(format!("  id {}", h.token.id), theme.dim));
        }
        lines.push(Line::from(spans));
    }
    if !app.input.hits.is_empty() {
        lines.push(Line::styled(
            format!("list: its row among the {} shown", shown.len()),
            theme.dim,
        ));
    }
    let title = format!(" Search: {} ", fit(&app.input.text, 20));
    panel(frame, area, title, lines, Mode::Search, theme);
}
