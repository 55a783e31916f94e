//! The attention window a report carries: rows shared with the session's tree, read and serialised as
//! one dense matrix.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Attention of the newest query rows over a window of recent positions, for every layer and head.
///
/// Each row is shared with the session's tree (`Arc`), not copied: a step's report costs one pointer
/// per row however many layers and heads the model has. Serialised (and compared) as the dense
/// matrix [`DenseWindow`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "DenseWindow", from = "DenseWindow")]
pub struct AttentionWindow {
    /// Absolute position of the first row and first column.
    pub start: usize,
    /// Number of positions in the window (rows and columns).
    pub len: usize,
    pub n_layer: usize,
    pub n_head: usize,
    rows: Vec<WindowRow>,
}

/// One query row of a window, at position `start + r`.
#[derive(Debug, Clone)]
pub struct WindowRow {
    /// `weights[(layer * n_head + head) * cols + i]`: the row's softmax weight on key
    /// `position + 1 - cols + i`, for its last `cols` keys (its own included).
    pub weights: Arc<Vec<f32>>,
    pub cols: usize,
    /// `first_key[layer * n_head + head]`: its weight on key 0, also when that lies before the
    /// window; empty when not known.
    pub first_key: Arc<Vec<f32>>,
}

/// An [`AttentionWindow`] as one dense matrix: its serialised form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DenseWindow {
    pub start: usize,
    pub len: usize,
    pub n_layer: usize,
    pub n_head: usize,
    /// `weights[((layer * n_head + head) * len + row) * len + col]`; exactly 0 above the diagonal. Rows are
    /// the real softmax rows restricted to the window, so they sum to at most 1: the rest of each row's
    /// weight falls on the `start` keys before the window.
    pub weights: Vec<f32>,
    /// Each row's weight on the very first key (position 0), `first_key[(layer * n_head + head) * len +
    /// row]`, also when it lies before the window: the first token is often an "attention sink" that
    /// takes much of the weight, and hiding it would hide the most striking pattern. Empty when unknown.
    pub first_key: Vec<f32>,
}

impl AttentionWindow {
    /// A window of `rows.len()` rows from position `start`.
    pub fn from_rows(start: usize, n_layer: usize, n_head: usize, rows: Vec<WindowRow>) -> Self {
        AttentionWindow {
            start,
            len: rows.len(),
            n_layer,
            n_head,
            rows,
        }
    }

    /// No window: nothing fed yet, or a model that reports no attention.
    pub fn none() -> Self {
        Self::from_rows(0, 0, 0, Vec::new())
    }

    /// Weight of window row `row` on window column `col` (0 above the diagonal).
    pub fn get(&self, layer: usize, head: usize, row: usize, col: usize) -> f32 {
        let Some(r) = self.rows.get(row).filter(|_| col <= row) else {
            return 0.0;
        };
        let (pos, key) = (self.start + row, self.start + col);
        let first_col = pos + 1 - r.cols.min(pos + 1);
        if r.cols == 0 || key < first_col {
            return 0.0;
        }
        let at = (layer * self.n_head + head) * r.cols + key - first_col;
        r.weights.get(at).copied().unwrap_or(0.0)
    }
    /// Mean over heads of one layer.
    pub fn mean_heads(&self, layer: usize, row: usize, col: usize) -> f32 {
        let s: f32 = (0..self.n_head).map(|h| self.get(layer, h, row, col)).sum();
        s / self.n_head as f32
    }
    /// Weight of one row on key 0 (0 when not known: see [`Self::knows_first`]).
    pub fn first(&self, layer: usize, head: usize, row: usize) -> f32 {
        let lh = layer * self.n_head + head;
        self.rows
            .get(row)
            .and_then(|r| r.first_key.get(lh).copied())
            .unwrap_or(0.0)
    }
    /// Weight of one row on the keys before the window (key 0 included): what the window hides.
    pub fn hidden(&self, layer: usize, head: usize, row: usize) -> f32 {
        let shown: f32 = (0..self.len).map(|c| self.get(layer, head, row, c)).sum();
        (1.0 - shown).max(0.0)
    }
    /// Whether any row carries weights (a served model reports none).
    pub fn has_weights(&self) -> bool {
        self.n_layer * self.n_head > 0 && self.rows.iter().any(|r| !r.weights.is_empty())
    }
    /// Whether every row carries its weight on key 0.
    pub fn knows_first(&self) -> bool {
        let heads = self.n_layer * self.n_head;
        self.rows.len() == self.len && self.rows.iter().all(|r| r.first_key.len() == heads)
    }
    /// Drops the weights on key 0 (as a window that never had them).
    pub fn forget_first_key(&mut self) {
        for r in &mut self.rows {
            r.first_key = Arc::new(Vec::new());
        }
    }
}

impl From<DenseWindow> for AttentionWindow {
    fn from(d: DenseWindow) -> Self {
        let heads = d.n_layer * d.n_head;
        let dense = d.weights.len() == heads * d.len * d.len;
        let firsts = d.first_key.len() == heads * d.len;
        let rows = (0..d.len)
            .map(|r| {
                let cols = r + 1;
                let weights = if dense {
                    (0..heads)
                        .flat_map(|lh| {
                            d.weights[(lh * d.len + r) * d.len..][..cols]
                                .iter()
                                .copied()
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                let first_key = if firsts {
                    (0..heads).map(|lh| d.first_key[lh * d.len + r]).collect()
                } else {
                    Vec::new()
                };
                WindowRow {
                    weights: Arc::new(weights),
                    cols: if dense { cols } else { 0 },
                    first_key: Arc::new(first_key),
                }
            })
            .collect();
        AttentionWindow::from_rows(d.start, d.n_layer, d.n_head, rows)
    }
}

impl From<AttentionWindow> for DenseWindow {
    fn from(w: AttentionWindow) -> Self {
        let (heads, len) = (w.n_layer * w.n_head, w.len);
        let weights = if w.has_weights() {
            let at = |i: usize| (i / (len * len), i / len % len, i % len);
            (0..heads * len * len)
                .map(|i| {
                    let (lh, r, c) = at(i);
                    w.get(lh / w.n_head.max(1), lh % w.n_head.max(1), r, c)
                })
                .collect()
        } else {
            Vec::new()
        };
        let first_key = if w.knows_first() {
            (0..heads * len)
                .map(|i| w.first(i / len / w.n_head, i / len % w.n_head, i % len))
                .collect()
        } else {
            Vec::new()
        };
        DenseWindow {
            start: w.start,
            len,
            n_layer: w.n_layer,
            n_head: w.n_head,
            weights,
            first_key,
        }
    }
}

/// Two windows are equal when they show the same weights (and agree on knowing key 0's).
impl PartialEq for AttentionWindow {
    fn eq(&self, o: &Self) -> bool {
        let shape = |w: &Self| {
            (
                w.start,
                w.len,
                w.n_layer,
                w.n_head,
                w.has_weights(),
                w.knows_first(),
            )
        };
        let (heads, len) = (self.n_layer * self.n_head, self.len);
        let cells = |f: &dyn Fn(usize, usize, usize, usize) -> bool| {
            (0..heads).all(|lh| {
                let (l, h) = (lh / self.n_head, lh % self.n_head);
                (0..len).all(|r| (0..len).all(|c| f(l, h, r, c)))
            })
        };
        shape(self) == shape(o)
            && cells(&|l, h, r, c| self.get(l, h, r, c) == o.get(l, h, r, c))
            && cells(&|l, h, r, _| self.first(l, h, r) == o.first(l, h, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window built from shared rows reads, serialises and round-trips as its dense matrix.
    #[test]
    fn shared_rows_read_and_serialise_as_the_dense_matrix() {
        // 2 layers x 1 head; rows at positions 3..6 keep their last 3 keys each (position 3 keeps 1..=3).
        let (start, n_layer, n_head, cols) = (3, 2, 1, 3);
        let rows: Vec<WindowRow> = (0..3)
            .map(|r| WindowRow {
                weights: Arc::new((0..n_layer * cols).map(|i| (r * 10 + i) as f32).collect()),
                cols,
                first_key: Arc::new(vec![0.5 + r as f32, 0.25]),
            })
            .collect();
        let w = AttentionWindow::from_rows(start, n_layer, n_head, rows);
        // Row 1 (position 4) keeps keys 2, 3, 4: window columns 0 and 1 are keys 3 and 4.
        assert_eq!(w.get(0, 0, 1, 0), 11.0);
        assert_eq!(w.get(1, 0, 1, 1), 15.0);
        assert_eq!(w.get(0, 0, 1, 2), 0.0, "above the diagonal");
        assert_eq!(w.first(1, 0, 2), 0.25);
        assert!(w.has_weights() && w.knows_first());
        let dense = DenseWindow::from(w.clone());
        assert_eq!(dense.weights.len(), n_layer * 9);
        assert_eq!(dense.weights[(3 + 1) * 3 + 1], 15.0);
        let json = serde_json::to_string(&w).unwrap();
        assert_eq!(json, serde_json::to_string(&dense).unwrap());
        let back: AttentionWindow = serde_json::from_str(&json).unwrap();
        assert_eq!(back, w);
        let mut forgot = w.clone();
        forgot.forget_first_key();
        assert!(!forgot.knows_first() && forgot != w);
        assert!(!AttentionWindow::none().has_weights());
    }
}
