//! What one forward pass is asked for and what it gives back: the options, the captured attention
//! rows and the output (`model.rs` runs the pass).

/// What one forward call should return besides the last position's logits.
#[derive(Debug, Clone, Copy, Default)]
pub struct ForwardOptions {
    /// Attention rows to capture, counted from the last fed position backwards (0 = none).
    pub capture_rows: usize,
    /// Return logits for every fed position, not just the last (teacher forcing, golden tests).
    pub all_logits: bool,
    /// The logit lens: also return, for the last position, the final norm and the output head applied
    /// to every layer's residual stream (30 extra output-head products: on demand only).
    pub lens: bool,
}

/// Attention probabilities of some query rows: `data[((layer * n_head + head) * rows + r) * kv_len + col]`.
/// Row `r` is absolute query position `first_row + r`; columns are key positions `0..kv_len`.
#[derive(Debug, Clone, Default)]
pub struct AttentionRows {
    pub first_row: usize,
    pub rows: usize,
    pub kv_len: usize,
    pub data: Vec<f32>,
}

impl AttentionRows {
    /// The rows of query positions below `end`, over the keys below `end`: what a pass that stopped at
    /// `end` would have captured (a speculative check's rows for the tokens it kept).
    pub fn below(&self, end: usize) -> AttentionRows {
        let rows = end.saturating_sub(self.first_row).min(self.rows);
        let kv_len = end.min(self.kv_len);
        if self.rows == 0 || (rows == self.rows && kv_len == self.kv_len) {
            return self.clone();
        }
        let heads = self.data.len() / (self.rows * self.kv_len);
        let mut data = Vec::with_capacity(heads * rows * kv_len);
        for lh in 0..heads {
            for r in 0..rows {
                let base = (lh * self.rows + r) * self.kv_len;
                data.extend_from_slice(&self.data[base..base + kv_len]);
            }
        }
        AttentionRows {
            first_row: self.first_row,
            rows,
            kv_len,
            data,
        }
    }
}

pub struct ForwardOutput {
    /// `[positions, vocab]` row-major: one row (the last position) unless `all_logits`.
    pub logits: Vec<f32>,
    pub attention: AttentionRows,
    /// With `lens`: `lens[layer]` is the logits row the last position would give if the model stopped
    /// after that layer. The last layer's row is the model's own logits.
    pub lens: Vec<Vec<f32>>,
    /// The largest logit of each block of the sampler's `BLOCK` in the (one) row, found by the output
    /// head's items while their runs of it were still in cache (the sampler's `block_maxima`, the same
    /// bits); empty with `all_logits` or from a served model.
    pub block_maxima: Vec<f32>,
    pub ms: f64,
}
