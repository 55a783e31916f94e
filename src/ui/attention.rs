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

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let n_layer = app.n_layer();
    let title = if n_layer == 0 {
        " Attention ".to_string()
    } else {
        let which = match app.head {
            HeadSel::Mean => "head mean".to_string(),
            HeadSel::Head(h) => format!("head {}/{}", h + 1, app.n_head()),
        };
        format!(" Attention · layer {}/{n_layer} · {which} ", app.layer + 1)
    };
    let block = Block::bordered()
        .border_style(theme.border)
        .title(Span::styled(title, theme.title))
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
    let (width, height) = (area.width as usize, area.height as usize);
    let label_w = (width / 5).clamp(5, 12);
    let vertical_rows: usize = if height >= 16 { 3 } else { 2 };
    let max_cols = width.saturating_sub(label_w + 1) / 2;
    let n = win
        .len
        .min(max_cols)
        .min(height.saturating_sub(vertical_rows + 1));
    if n == 0 {
        return vec![Line::styled("too small for the matrix", theme.dim)];
    }
    // Wider cells when there is room: from 4 columns on, each cell prints its weight in %.
    let cell = (width.saturating_sub(label_w + 1) / n).clamp(2, 7);
    let numbers = cell >= 4;
    // The newest positions: the bottom-right corner of the window.
    let first = win.len - n;
    let mut lines = vec![];

    if cell >= 5 {
        // Key labels across, cut to the cell.
        let mut s = " ".repeat(label_w + 1);
        for c in first..win.len {
            s.push_str(&format!(
                "{:>w$}",
                fit(&label(tokens, win.start + c), cell - 1),
                w = cell
            ));
        }
        lines.push(Line::styled(s, theme.text));
    } else {
        // Key labels written downwards, one character per row.
        for r in 0..vertical_rows {
            let mut s = " ".repeat(label_w + 1);
            for c in first..win.len {
                let ch = label(tokens, win.start + c).chars().nth(r).unwrap_or(' ');
                let ch = if ch.to_string().width() == 1 { ch } else { '?' };
                if numbers {
                    s.push_str(&format!("{:>w$}", ch, w = cell));
                } else {
                    s.push_str(&format!("{:>w$} ", ch, w = cell - 1));
                }
            }
            lines.push(Line::styled(s, if r == 0 { theme.text } else { theme.dim }));
        }
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
            // Every cell ends where its column label ends; glyph cells keep a gap column.
            spans.push(if c > r && numbers {
                Span::styled(format!("{:>w$}", "·", w = cell), theme.blocked)
            } else if c > r {
                Span::styled(format!("{:>w$} ", "·", w = cell - 1), theme.blocked)
            } else if numbers {
                let w = weight(app, win, r, c);
                let text = format!("{:>w$}", (w * 100.0).round() as u32, w = cell - 1);
                Span::styled(format!(" {text}"), theme.heat_cell(w))
            } else {
                let (glyph, style) = theme.heat(weight(app, win, r, c));
                let g = glyph.chars().next().unwrap_or(' ');
                let body: String = std::iter::repeat_n(g, cell.max(3) - 1).collect();
                if cell >= 3 {
                    Span::styled(format!("{body} "), style)
                } else {
                    Span::styled(format!("{g}{g}"), style)
                }
            });
        }
        lines.push(Line::from(spans));
    }

    lines.push(if numbers {
        Line::from(vec![
            Span::styled(" weights in %  ", theme.dim),
            Span::styled("·", theme.blocked),
            Span::styled(" = masked (future)", theme.dim),
        ])
    } else {
        Line::from(vec![
            Span::styled(" ░▒▓█", theme.heat(0.6).1),
            Span::styled(" weight  ", theme.dim),
            Span::styled("·", theme.blocked),
            Span::styled(" = masked (future)", theme.dim),
        ])
    });
    if lines.len() + 2 <= height {
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
