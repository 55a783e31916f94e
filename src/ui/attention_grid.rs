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
        if n_cols == 0 {
            return None;
        }
        // Scrolling back moves the window's columns to older keys; key 0 stays in its own column, and
        // the newer keys left out get a gap column of their own on the right, which may cost a key
        // column. The scroll's range is the scrolled layout's, so every press moves one key.
        let lowest = usize::from(sink && start == 0);
        let sink_w = 2 * usize::from(sink);
        let scrolled_cols = n_cols - usize::from(n_cols * 2 + sink_w + gap + 1 > avail);
        let max_scroll = match (len - n_cols).saturating_sub(lowest) {
            0 => 0,
            _ => (len - scrolled_cols).saturating_sub(lowest),
        };
        let newer = scroll.min(max_scroll);
        let (n_cols, right) = match newer {
            0 => (n_cols, 0),
            _ => (scrolled_cols, 1),
        };
        if n_cols == 0 {
            return None;
        }
        let cell = ((avail - gap - right) / (n_cols + usize::from(sink))).clamp(2, 7);
        let vertical_rows = match cell {
            c if c >= 5 => 0,
            _ if rows >= 16 => 3,
            _ => 2,
        };
        let n_rows = len.min(rows.saturating_sub(vertical_rows.max(1)));
        if n_rows == 0 {
            return None;
        }
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

    /// The drawn columns, left to right.
    pub fn columns(&self) -> Vec<Column> {
        let mut cols = vec![];
        if self.sink {
            cols.push(Column::Key(0));
        }
        if self.gap() {
            cols.push(Column::Older);
        }
        let last = self.len - self.newer;
        cols.extend((self.first_col..last).map(|c| Column::Key(self.start + c)));
        if self.newer > 0 {
            cols.push(Column::Newer);
        }
        cols
    }

    /// Absolute positions of the newer keys left out (scrolled past on the right).
    pub fn newer_keys(&self) -> std::ops::Range<usize> {
        self.start + self.len - self.newer..self.start + self.len
    }

    /// Whether absolute key `key` has a column of its own.
    pub fn draws(&self, key: usize) -> bool {
        self.columns().contains(&Column::Key(key))
    }
}

/// A column of the matrix: a key, or a gap standing for the keys left out before the window's drawn
/// columns (older) or after them (newer, when the keys are scrolled back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    Key(usize),
    Older,
    Newer,
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
        .columns()
        .into_iter()
        .filter_map(|c| match c {
            Column::Key(k) => Some(k),
            _ => None,
        })
        .filter(|&k| k <= win.start + row)
        .map(|k| weight(app, win, row, k))
        .sum();
    (1.0 - drawn).max(0.0)
}

/// The weight window row `row` puts on the newer keys left out (those it can see); `None` when it can
/// see none of them (they are all in its future).
pub fn newer_weight(app: &App, g: &Grid, win: &AttentionWindow, row: usize) -> Option<f32> {
    let pos = win.start + row;
    let keys = g.newer_keys();
    (keys.start <= pos).then(|| {
        (keys.start..keys.end.min(pos + 1))
            .map(|k| weight(app, win, row, k))
            .sum()
    })
}

/// The weight window row `row` puts on the older keys left out: what the drawn and the newer hidden
/// keys leave of its whole (the window carries no weights for keys before it but key 0).
pub fn older_weight(app: &App, g: &Grid, win: &AttentionWindow, row: usize) -> f32 {
    let newer = newer_weight(app, g, win, row).unwrap_or(0.0);
    (hidden_weight(app, g, win, row) - newer).max(0.0)
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
            for col in g.columns() {
                let Column::Key(key) = col else {
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

/// One query row: its token's label (marked when it is the newest), then a cell per column; in the
/// newer keys' gap, a row that can see none of them (all in its future) shows the mask's `·`.
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
    for col in g.columns() {
        spans.push(match col {
            Column::Older => gap_cell(older_weight(app, g, win, r), theme),
            Column::Newer => match newer_weight(app, g, win, r) {
                Some(w) => gap_cell(w, theme),
                None => Span::styled(MASK_MARK, theme.blocked),
            },
            Column::Key(k) => cell(app, g, win, r, k, theme),
        });
    }
    Line::from(spans)
}

/// A gap column's cell for a row that puts weight `w` on the keys the gap stands for: where that is at
/// least a quarter, its dark shade (`▓` or `█`), so a row that looks mostly at a hidden key is not
/// drawn as looking at nothing (at 80x24 the attention lesson's `paper` row had shown only blanks, its
/// 97% on a hidden key); else the gap mark, which a light shade would hide among the cells beside it.
fn gap_cell(w: f32, theme: &Theme) -> Span<'static> {
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
