//! The help overlay (`?`), generated from the keymap table so it always matches what keys do.

use super::theme::Theme;
use crate::app::keymap::{self, Binding, Mode, Scope, KEYMAP};
use crate::app::layout::centered;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use ratatui::Frame;

/// Width of the key column.
const KEY_W: usize = 9;

pub fn draw(frame: &mut Frame, area: Rect, theme: &Theme) {
    let rows: Vec<&Binding> = KEYMAP
        .iter()
        .filter(|b| b.scope == Scope::In(Mode::Normal))
        .chain(KEYMAP.iter().filter(|b| b.scope == Scope::Global))
        .collect();
    // Two columns whenever they fit: the whole table stays on one screen at 80x24.
    let columns = if area.width >= 70 { 2 } else { 1 };
    let per_col = rows.len().div_ceil(columns);
    let col_w = (area.width.saturating_sub(4) as usize / columns).min(42);
    let width = (col_w * columns + 2) as u16;
    let height = (per_col + 6) as u16;
    let popup = centered(area, width, height);
    let block = Block::bordered()
        .border_style(theme.title)
        .title(Span::styled(" Help: keys ", theme.title))
        .title_bottom(Line::styled(" ? or esc closes ", theme.dim).right_aligned());
    let mut lines = vec![
        Line::styled(
            " One forward pass, one token. Step it, or choose for it.",
            theme.text,
        ),
        Line::default(),
    ];
    for r in 0..per_col {
        let mut spans = vec![];
        for c in 0..columns {
            if let Some(b) = rows.get(c * per_col + r) {
                spans.extend(entry(b, col_w, theme));
            }
        }
        lines.push(Line::from(spans));
    }
    lines.push(Line::default());
    lines.push(Line::styled(
        format!(
            " In a panel ({}, {}, {}) its keys show at its foot.",
            Mode::Sampler.title(),
            Mode::Branches.title(),
            Mode::Search.title()
        ),
        theme.dim,
    ));
    frame.render_widget(Clear, popup);
    let p = Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false });
    frame.render_widget(p.block(block), popup);
}

fn entry(b: &Binding, col_w: usize, theme: &Theme) -> Vec<Span<'static>> {
    let keys = super::fmt::pad(&format!(" {}", b.keys_label()), KEY_W);
    let help = super::fmt::pad(b.help, col_w.saturating_sub(KEY_W + 1));
    vec![
        Span::styled(keys, theme.key),
        Span::raw(" "),
        Span::styled(help, theme.text),
    ]
}

/// Hint lines for a panel: the first key of each of its bindings and what it does, wrapped at
/// binding boundaries to `width`.
pub fn panel_hints(mode: Mode, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![];
    let mut spans: Vec<Span> = vec![];
    let mut used = 0;
    for b in keymap::bindings(mode) {
        let key = b.keys.first().map(|k| k.label()).unwrap_or_default();
        let w = key.chars().count() + b.help.chars().count() + 2;
        if used + w > width && !spans.is_empty() {
            lines.push(Line::from(std::mem::take(&mut spans)));
            used = 0;
        }
        used += w;
        spans.push(Span::styled(key, theme.key));
        spans.push(Span::styled(format!(" {} ", b.help), theme.dim));
    }
    lines.push(Line::from(spans));
    lines
}
