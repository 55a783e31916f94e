//! The attention matrix's geometry and cells: which query rows and key columns fit, the first key (the
//! "attention sink") kept apart when older keys are hidden, and what each cell draws.

use super::theme::Theme;
use crate::app::{App, HeadSel};
use crate::fmt::{fit, pad_left, visible};
use crate::protocol::{AttentionWindow, TokenRecord};
use ratatui::text::{Line, Span};

/// Marks the keys left out between the first key and the drawn window.
pub const GAP_MARK: &str = "┆";
/// A key the query cannot see because it comes after it (the causal mask).
pub const MASK_MARK: &str = "·";
/// A key the query cannot see because a sliding-window layer's window has passed it. A glyph of its
/// own, so the two reasons differ without colour.
pub const WINDOW_MARK: &str = "×";

/// How the matrix fits the panel. Rows are the newest queries that fit the height; columns are the
/// newest keys that fit the width, plus the very first key (position 0) drawn apart when it would
/// otherwise be left out.
pub struct Grid {
    /// Width of the query labels on the left (the `▶` mark and a space included).
    pub label_w: usize,
    /// Rows of key labels written downwards (0 when cells are wide enough to write them across).
    pub vertical_rows: usize,
    /// Width of one cell.
    pub cell: usize,
    /// Whether each cell prints its weight in % (from 4 columns on) rather than a shade.
    pub numbers: bool,
    /// The first window row (query) drawn.
    pub first_row: usize,
    /// The first window column (key) drawn; the ones before it are hidden.
    pub first_col: usize,
    /// The window (rows and columns run `..len`) and its first absolute position.
    pub len: usize,
    pub start: usize,
    /// Key 0 drawn as its own column, apart from the window's columns.
    pub sink: bool,
    /// Keys left out before the drawn columns: absolute positions `1..=hidden` behind the first key's
    /// column, or `0..hidden` when there is none.
    pub hidden: usize,
    /// Newer keys left out after the drawn columns, because the user scrolled the keys back.
    pub newer: usize,
    /// How far the key columns can scroll back within the window the report carries.
    pub max_scroll: usize,
}

impl Grid {
    /// Fits the matrix to `width` columns and `rows` lines of matrix (key labels included), its key
    /// columns scrolled `scroll` keys back from the newest (clamped to the window); `None` when not even
    /// one cell fits.
    pub fn fit(win: &AttentionWindow, width: usize, rows: usize, scroll: usize) -> Option<Grid> {
        let label_w = (width / 5).clamp(5, 12);
        let avail = width.saturating_sub(label_w);
        let (len, start) = (win.len, win.start);
        // Everything fits at the narrowest cell: no sink column needed. Without the first key's
        // weights (older data) there is no sink column to draw either.
        let all = start == 0 && len * 2 <= avail;
        let (n_cols, sink, gap) = if all {
            (len, false, 0)
        } else if start > 0 && !knows_first(win) {
            ((avail / 2).min(len), false, 0)
        } else {
            let n = (avail.saturating_sub(1) / 2).saturating_sub(1).min(len);
            let first_abs = start + len - n;
            (n, true, usize::from(first_abs > 1))
        };
        let cols_total = n_cols + usize::from(sink);
        if n_cols == 0 {
            return None;
        }
        let cell = ((avail - gap) / cols_total).clamp(2, 7);
        let vertical_rows = match cell {
            c if c >= 5 => 0,
            _ if rows >= 16 => 3,
            _ => 2,
        };
        let n_rows = len.min(rows.saturating_sub(vertical_rows.max(1)));
        if n_rows == 0 {
            return None;
        }
        // Scrolling back moves the window's columns to older keys; key 0 stays in its own column.
        let lowest = usize::from(sink && start == 0);
        let max_scroll = (len - n_cols).saturating_sub(lowest);
        let newer = scroll.min(max_scroll);
        let first_col = len - n_cols - newer;
        Some(Grid {
            label_w,
            vertical_rows,
            cell,
            numbers: cell >= 4,
            first_row: len - n_rows,
            first_col,
            len,
            start,
            sink,
            hidden: (start + first_col).saturating_sub(usize::from(sink)),
            newer,
            max_scroll,
        })
    }

    /// Lines the matrix takes: key labels, then one per query row.
    pub fn height(&self) -> usize {
        self.vertical_rows.max(1) + self.len - self.first_row
    }

    /// The gap marker's column, when keys are hidden between the sink and the window.
    fn gap(&self) -> bool {
        self.sink && self.hidden > 0
    }

    /// Absolute positions of the drawn key columns, left to right, `None` at the gap marker.
    fn keys(&self) -> Vec<Option<usize>> {
        let mut keys = vec![];
        if self.sink {
            keys.push(Some(0));
        }
        if self.gap() {
            keys.push(None);
        }
        keys.extend((self.first_col..self.len - self.newer).map(|c| Some(self.start + c)));
        keys
    }
}

/// The layer and the head (or the mean of heads, `None`) the panel shows.
pub fn focus(app: &App, win: &AttentionWindow) -> (usize, Option<usize>) {
    let layer = app.focus.layer.min(win.n_layer.saturating_sub(1));
    match app.focus.head {
        HeadSel::Mean => (layer, None),
        HeadSel::Head(h) => (layer, Some(h.min(win.n_head.saturating_sub(1)))),
    }
}

/// `f` for the focused head, or its mean over the layer's heads.
fn over_heads(app: &App, win: &AttentionWindow, f: impl Fn(usize, usize) -> f32) -> f32 {
    match focus(app, win) {
        (layer, Some(h)) => f(layer, h),
        (layer, None) => (0..win.n_head).map(|h| f(layer, h)).sum::<f32>() / win.n_head as f32,
    }
}

/// Whether the window carries every row's weight on key 0 (`first_key`).
pub fn knows_first(win: &AttentionWindow) -> bool {
    win.knows_first()
}

/// The weight window row `row` puts on absolute key `key`: a key of the window, or key 0 before it
/// (only asked for when [`knows_first`]).
pub fn weight(app: &App, win: &AttentionWindow, row: usize, key: usize) -> f32 {
    if key >= win.start {
        over_heads(app, win, |l, h| win.get(l, h, row, key - win.start))
    } else {
        over_heads(app, win, |l, h| win.first(l, h, row))
    }
}

/// The weight window row `row` puts on the keys the grid leaves out (neither drawn nor masked).
pub fn hidden_weight(app: &App, g: &Grid, win: &AttentionWindow, row: usize) -> f32 {
    let drawn: f32 = g
        .keys()
        .into_iter()
        .flatten()
        .filter(|&k| k <= win.start + row)
        .map(|k| weight(app, win, row, k))
        .sum();
    (1.0 - drawn).max(0.0)
}

/// A token's label: its visible text without surrounding spaces, `␣` for a blank token.
pub fn label(tokens: &[TokenRecord], pos: usize) -> String {
    tokens
        .get(pos)
        .map(|t| visible(&t.token.text).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "␣".into())
}

/// The key (column) labels: across, cut to the cell, when cells are wide; else written downwards, one
/// character per row. Widths are display widths, so an emoji keeps its column.
pub fn key_labels(g: &Grid, tokens: &[TokenRecord], theme: &Theme) -> Vec<Line<'static>> {
    let rows = g.vertical_rows.max(1);
    (0..rows)
        .map(|r| {
            let mut spans = vec![Span::raw(" ".repeat(g.label_w))];
            for key in g.keys() {
                let Some(key) = key else {
                    spans.push(Span::styled(GAP_MARK, theme.dim));
                    continue;
                };
                let text = if g.vertical_rows == 0 {
                    pad_left(&fit(&label(tokens, key), g.cell - 1), g.cell)
                } else {
                    let ch: String = label(tokens, key).chars().nth(r).into_iter().collect();
                    if g.numbers {
                        pad_left(&ch, g.cell)
                    } else {
                        format!("{} ", pad_left(&ch, g.cell - 1))
                    }
                };
                spans.push(Span::raw(text));
            }
            let style = if r == 0 { theme.text } else { theme.dim };
            Line::from(spans).style(style)
        })
        .collect()
}

/// One query row: its token's label (marked when it is the newest), then a cell per key.
pub fn query_row(
    app: &App,
    g: &Grid,
    win: &AttentionWindow,
    tokens: &[TokenRecord],
    r: usize,
    theme: &Theme,
) -> Line<'static> {
    let newest = r == g.len - 1;
    let name = pad_left(&label(tokens, win.start + r), g.label_w - 2);
    let lab = format!("{}{name} ", if newest { "▶" } else { " " });
    let mut spans = vec![Span::styled(
        lab,
        if newest { theme.newest } else { theme.text },
    )];
    for key in g.keys() {
        spans.push(match key {
            None => gap_cell(app, g, win, r, theme),
            Some(k) => cell(app, g, win, r, k, theme),
        });
    }
    Line::from(spans)
}

/// The gap column of query row `r`: where the row puts at least a quarter of its weight on the keys
/// the gap stands for, that weight's dark shade (`▓` or `█`), so a row that looks mostly at a hidden
/// key is not drawn as looking at nothing (at 80x24 the attention lesson's `paper` row had shown only
/// blanks, its 97% on a hidden key); else the gap mark, which a light shade would hide among the
/// cells beside it.
fn gap_cell(app: &App, g: &Grid, win: &AttentionWindow, r: usize, theme: &Theme) -> Span<'static> {
    let w = hidden_weight(app, g, win, r);
    let (glyph, style) = theme.heat(w);
    match glyph.chars().next() {
        Some(c) if w >= GAP_SHADED => Span::styled(c.to_string(), style),
        _ => Span::styled(GAP_MARK, theme.dim),
    }
}

/// The hidden weight from which the gap column is shaded: the dark shades' first step.
const GAP_SHADED: f32 = 0.25;

/// Why the query of window row `r` cannot see absolute key `key`, as the cell's mark: [`MASK_MARK`]
/// for a key after it (the model cannot look ahead), [`WINDOW_MARK`] for a key older than a
/// sliding-window layer's window; `None` when it sees it.
fn masked(app: &App, win: &AttentionWindow, r: usize, key: usize) -> Option<&'static str> {
    let pos = win.start + r;
    let window = app.model.as_ref().and_then(|m| m.window(focus(app, win).0));
    if key > pos {
        Some(MASK_MARK)
    } else if window.is_some_and(|w| pos - key >= w) {
        Some(WINDOW_MARK)
    } else {
        None
    }
}

/// One cell. Every cell ends where its column label ends; glyph cells keep a gap column. A key the
/// query cannot see shows why: `·` after it, `×` outside the layer's window.
fn cell(
    app: &App,
    g: &Grid,
    win: &AttentionWindow,
    r: usize,
    key: usize,
    theme: &Theme,
) -> Span<'static> {
    let cell = g.cell;
    if let Some(mark) = masked(app, win, r, key) {
        let dot = if g.numbers {
            pad_left(mark, cell)
        } else {
            format!("{} ", pad_left(mark, cell - 1))
        };
        return Span::styled(dot, theme.blocked);
    }
    let w = weight(app, win, r, key);
    if g.numbers {
        let text = pad_left(&((w * 100.0).round() as u32).to_string(), cell - 1);
        return Span::styled(format!(" {text}"), theme.heat_cell(w));
    }
    let (glyph, style) = theme.heat(w);
    let g1 = glyph.chars().next().unwrap_or(' ');
    let body: String = std::iter::repeat_n(g1, cell.max(3) - 1).collect();
    if cell >= 3 {
        Span::styled(format!("{body} "), style)
    } else {
        Span::styled(format!("{g1}{g1}"), style)
    }
}
