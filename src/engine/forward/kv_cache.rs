//! The KV cache: pre-allocated key/value storage per layer that grows by doubling, appends in place and
//! truncates in O(1) for rewind.
//!
//! Teaching note: with the cache, a decode step feeds one token and reads every earlier key and value from
//! here; without it, every step re-feeds the whole sequence. Its size is
//! `2 (K and V) x layers x kv_heads x positions x head_dim x 4 bytes`.
//!
//! Storage is plain `f32`, position-major (`[position][kv_head][head_dim]`): a position's keys are exactly
//! one row of `W_k`'s output, so appending is one copy and growing keeps every offset. The attention
//! kernel reads it through `KvView`'s strides. Head-major runs (`[kv_head][position][head_dim]`) were
//! tried, for a decode step that streams one kv head at a time: no faster here (docs/PERFORMANCE.md).

use candle_core::Result;

/// Keys and values of one layer: `capacity` positions of `row` floats each.
#[derive(Default, Clone)]
struct LayerKv {
    k: Vec<f32>,
    v: Vec<f32>,
}

/// Keys and values of positions `0..len` of one layer, as the attention kernel reads them: position `j`,
/// kv head `g` starts at `g * head_stride + j * row_stride` in `k` and in `v`.
#[derive(Clone, Copy)]
pub struct KvView<'a> {
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub len: usize,
    pub row_stride: usize,
    pub head_stride: usize,
}

impl<'a> KvView<'a> {
    /// Keys and values stored position-major, `[position][kv_head][head_dim]` (as `W_k` and `W_v`
    /// write them), for every position they hold.
    pub fn position_major(k: &'a [f32], v: &'a [f32], n_kv_head: usize, head_dim: usize) -> Self {
        let row = n_kv_head * head_dim;
        assert!(k.len() == v.len() && k.len().is_multiple_of(row));
        Self {
            k,
            v,
            len: k.len() / row,
            row_stride: row,
            head_stride: head_dim,
        }
    }

    /// Where position `j`'s kv head `g` starts in `k` and `v`.
    pub fn at(&self, j: usize, g: usize) -> usize {
        g * self.head_stride + j * self.row_stride
    }
}

/// Keys and values for every layer, valid up to `len`.
pub struct KvCache {
    layers: Vec<LayerKv>,
    n_kv_head: usize,
    head_dim: usize,
    capacity: usize,
    max_len: usize,
    len: usize,
}

impl KvCache {
    pub fn new(n_layer: usize, n_kv_head: usize, head_dim: usize, max_len: usize) -> Self {
        Self {
            layers: vec![LayerKv::default(); n_layer],
            n_kv_head,
            head_dim,
            capacity: 0,
            max_len,
            len: 0,
        }
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of the valid part (what the cache costs at this length, f32).
    pub fn bytes(&self) -> usize {
        2 * self.layers.len() * self.n_kv_head * self.len * self.head_dim * 4
    }

    /// Forgets everything from position `len` on (rewind). Storage is kept.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Frees the storage too (KV cache off).
    pub fn release(&mut self) {
        self.len = 0;
        self.capacity = 0;
        self.layers.iter_mut().for_each(|l| *l = LayerKv::default());
    }

    /// Marks positions `..len` valid once every layer has appended.
    pub fn set_len(&mut self, len: usize) {
        self.len = len;
    }

    /// Floats per position per layer (`n_kv_head * head_dim`).
    fn row(&self) -> usize {
        self.n_kv_head * self.head_dim
    }

    /// Writes `k`, `v` (`[seq][n_kv_head * head_dim]`, row-major) at `index_pos` in `layer`'s storage and
    /// returns positions `0..index_pos + seq` of that layer.
    pub fn append(
        &mut self,
        layer: usize,
        index_pos: usize,
        k: &[f32],
        v: &[f32],
    ) -> Result<KvView<'_>> {
        let row = self.row();
        if k.len() != v.len() || !k.len().is_multiple_of(row) {
            candle_core::bail!(
                "KV append: {} keys, {} values, rows of {row}",
                k.len(),
                v.len()
            );
        }
        let end = index_pos + k.len() / row;
        if end > self.max_len {
            candle_core::bail!(
                "KV cache full: {end} positions > context length {}",
                self.max_len
            );
        }
        if end > self.capacity {
            self.grow(end);
        }
        let cap = self.capacity * row;
        let l = &mut self.layers[layer];
        if l.k.len() < cap {
            // First use of this layer since the storage was (re)sized; earlier positions were kept by `grow`.
            l.k.resize(cap, 0.0);
            l.v.resize(cap, 0.0);
        }
        l.k[index_pos * row..end * row].copy_from_slice(k);
        l.v[index_pos * row..end * row].copy_from_slice(v);
        Ok(self.view_of(layer, end))
    }

    /// Positions `0..len()` of `layer` (empty if the layer has stored nothing yet).
    pub fn view(&self, layer: usize) -> KvView<'_> {
        match self.layers[layer].k.is_empty() {
            true => KvView::position_major(&[], &[], self.n_kv_head, self.head_dim),
            false => self.view_of(layer, self.len),
        }
    }

    fn view_of(&self, layer: usize, len: usize) -> KvView<'_> {
        let l = &self.layers[layer];
        KvView {
            k: &l.k,
            v: &l.v,
            len,
            row_stride: self.row(),
            head_stride: self.head_dim,
        }
    }

    /// Doubles capacity (at least to `needed`, at most the context length). Position-major storage grows
    /// in place: valid entries keep their offsets.
    fn grow(&mut self, needed: usize) {
        let mut cap = self.capacity.max(256);
        while cap < needed {
            cap *= 2;
        }
        self.capacity = cap.min(self.max_len);
        let floats = self.capacity * self.row();
        for l in self.layers.iter_mut().filter(|l| !l.k.is_empty()) {
            l.k.resize(floats, 0.0);
            l.v.resize(floats, 0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends keep earlier positions across growth, and a rewind then append overwrites in place.
    #[test]
    fn append_grow_and_rewind() {
        let (n_kv, hd) = (2, 4);
        let row = n_kv * hd;
        let mut c = KvCache::new(1, n_kv, hd, 1024);
        let rows = |from: usize, n: usize| -> Vec<f32> {
            (from * row..(from + n) * row).map(|i| i as f32).collect()
        };
        // Position `j`'s kv head `g` as the view reads it, and as appended.
        let key = |view: &KvView, j: usize, g: usize| view.k[view.at(j, g)..][..hd].to_vec();
        let appended = |j: usize, g: usize| rows(j, 1)[g * hd..][..hd].to_vec();
        c.append(0, 0, &rows(0, 200), &rows(0, 200)).unwrap();
        c.set_len(200);
        let view = c.append(0, 200, &rows(200, 100), &rows(200, 100)).unwrap();
        assert_eq!(view.len, 300);
        for j in 0..300 {
            for g in 0..n_kv {
                assert_eq!(
                    key(&view, j, g),
                    appended(j, g),
                    "position {j} head {g} survives growth past 256"
                );
            }
        }
        c.set_len(300);
        c.truncate(10);
        let mut other = rows(10, 1);
        other[0] = -1.0;
        let view = c.append(0, 10, &other, &other).unwrap();
        assert_eq!(view.len, 11);
        assert_eq!(view.v[view.at(10, 0)], -1.0);
        assert_eq!(key(&view, 9, 1), appended(9, 1));
        assert!(
            c.append(0, 1020, &rows(0, 5), &rows(0, 5)).is_err(),
            "past the context"
        );
    }
}
