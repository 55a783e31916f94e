//! The KV cache: pre-allocated key/value storage per layer that grows by doubling, appends in place and
//! truncates in O(1) for rewind.
//!
//! Teaching note: with the cache, a decode step feeds one token and reads every earlier key and value from
//! here; without it, every step re-feeds the whole sequence. Its size is
//! `2 (K and V) x layers x kv_heads x positions x head_dim x 4 bytes`.
//!
//! Storage is plain `f32`, position-major (`[position][kv_head][head_dim]`): a position's keys are exactly
//! one row of `W_k`'s output, so appending is one copy, and the attention kernel reads key rows in place.

use candle_core::Result;

/// Keys and values of one layer: `capacity` positions of `row` floats each.
#[derive(Default, Clone)]
struct LayerKv {
    k: Vec<f32>,
    v: Vec<f32>,
}

/// Keys and values of positions `0..len` of one layer, as the attention kernel reads them: position `j`,
/// kv head `g` starts at `(j * n_kv_head + g) * head_dim`.
pub struct KvView<'a> {
    pub k: &'a [f32],
    pub v: &'a [f32],
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
        Ok(KvView {
            k: &l.k[..end * row],
            v: &l.v[..end * row],
        })
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
        c.append(0, 0, &rows(0, 200), &rows(0, 200)).unwrap();
        c.set_len(200);
        let view = c.append(0, 200, &rows(200, 100), &rows(200, 100)).unwrap();
        assert_eq!(
            view.k,
            &rows(0, 300)[..],
            "positions survive growth past 256"
        );
        c.set_len(300);
        c.truncate(10);
        let mut other = rows(10, 1);
        other[0] = -1.0;
        let view = c.append(0, 10, &other, &other).unwrap();
        assert_eq!(view.k.len(), 11 * row);
        assert_eq!(view.v[10 * row], -1.0);
        assert!(
            c.append(0, 1020, &rows(0, 5), &rows(0, 5)).is_err(),
            "past the context"
        );
    }
}
