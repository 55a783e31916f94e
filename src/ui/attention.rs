//! The attention panel: the causal mask as a matrix (queries × keys) with real weights as a heat map.

use super::fmt::{fit, pct, quoted, visible};
use super::theme::Theme;
use crate::app::{App, HeadSel};
use crate::protocol::{AttentionWindow, TokenRecord};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

/// Columns per matrix cell.
const CELL: usize = 2;

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let n_layer = app.n_layer();
    let which = match app.head {
        HeadSel::Mean => format!("mean of {} heads", app.n_head()),
        HeadSel::Head(h) => format!("head {}/{}", h + 1, app.n_head()),
    };
    let block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(
            format!(" Attention · layer {}/{n_layer} · {which} ", app.layer + 1),
            theme.title,
        ))
        .title_bottom(Line::styled(" [ ] layer · { } head ", theme.dim).right_aligned());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(session) = app.session.as_ref() else {
        return;
    };
    let lines = matrix_lines(app, &session.attention, &session.tokens, inner, theme);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The weight shown for one cell: the chosen head, or the mean over heads.
fn weight(app: &App, win: &AttentionWindow, row: usize, col: usize) -> f32 {
    let layer = app.layer.min(win.n_layer.saturating_sub(1));
    match app.head {
        HeadSel::Mean => win.mean_heads(layer, row, col),
        HeadSel::Head(h) => win.get(layer, h.min(win.n_head.saturating_sub(1)), row, col),
    }
}

fn label(tokens: &[TokenRecord], pos: usize) -> String {
    tokens
        .get(pos)
        .map(|t| visible(&t.token.text).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "␣".into())
}

fn matrix_lines(
    app: &App,
    win: &AttentionWindow,
    tokens: &[TokenRecord],
    area: Rect,
    theme: &Theme,
) -> Vec<Line<'static>> {
    if win.len == 0 || win.n_layer == 0 || win.weights.is_empty() {
        return vec![Line::styled("no attention yet", theme.dim)];
    }
    let width = area.width as usize;
    let label_w = (width / 4).clamp(5, 12);
    let header_rows: usize = if area.height >= 16 { 3 } else { 2 };
    // Room below the matrix: a legend, and (when tall) where the newest token looks.
    let extra = if area.height >= 14 { 3 } else { 1 };
    let max_cols = width.saturating_sub(label_w + 1) / CELL;
    let max_rows = (area.height as usize).saturating_sub(header_rows + extra);
    let n = win.len.min(max_cols).min(max_rows);
    if n == 0 {
        return vec![Line::styled("too small for the matrix", theme.dim)];
    }
    // The newest positions: the bottom-right corner of the window.
    let first = win.len - n;
    let mut lines = vec![];

    // Key labels, written downwards, one character per row.
    for r in 0..header_rows {
        let mut s = " ".repeat(label_w + 1);
        for c in first..win.len {
            let ch = label(tokens, win.start + c).chars().nth(r).unwrap_or(' ');
            let ch = if ch.to_string().width() == 1 { ch } else { '?' };
            s.push(ch);
            s.push(' ');
        }
        let style = if r == 0 { theme.text } else { theme.dim };
        lines.push(Line::styled(s, style));
    }

    for r in first..win.len {
        let newest = r == win.len - 1;
        let name = fit(&label(tokens, win.start + r), label_w - 1);
        let lab = format!(
            "{}{name:>w$} ",
            if newest { "▶" } else { " " },
            w = label_w - 1
        );
        let mut spans = vec![Span::styled(
            lab,
            if newest { theme.newest } else { theme.text },
        )];
        for c in first..win.len {
            if c > r {
                spans.push(Span::styled(" ·", theme.blocked));
            } else {
                let (glyph, style) = theme.heat(weight(app, win, r, c));
                spans.push(Span::styled(glyph, style));
            }
        }
        lines.push(Line::from(spans));
    }

    lines.push(Line::from(vec![
        Span::styled(" ░▒▓█", theme.heat(0.6).1),
        Span::styled(" weight  ", theme.dim),
        Span::styled("·", theme.blocked),
        Span::styled(" masked: the future", theme.dim),
    ]));
    if extra >= 3 {
        lines.push(Line::default());
        lines.push(top_attended(app, win, tokens, theme, width));
    }
    lines
}

/// "▶ " is" looks most at "The" 41% · …" for the newest row.
fn top_attended(
    app: &App,
    win: &AttentionWindow,
    tokens: &[TokenRecord],
    theme: &Theme,
    width: usize,
) -> Line<'static> {
    let row = win.len - 1;
    let mut cols: Vec<(usize, f32)> = (0..=row).map(|c| (c, weight(app, win, row, c))).collect();
    cols.sort_by(|a, b| b.1.total_cmp(&a.1));
    let query = tokens
        .get(win.start + row)
        .map(|t| quoted(&t.token.text))
        .unwrap_or_default();
    let tops: Vec<String> = cols
        .iter()
        .take(3)
        .map(|&(c, w)| {
            let t = tokens
                .get(win.start + c)
                .map(|t| t.token.text.as_str())
                .unwrap_or("");
            format!("{} {}", quoted(t), pct(w))
        })
        .collect();
    let text = format!("{query} looks most at {}", tops.join(" · "));
    Line::styled(fit(&format!(" {text}"), width), theme.newest)
}
