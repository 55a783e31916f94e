//! The KV cache: pre-allocated key/value storage per layer that grows by doubling, appends in place and
//! truncates in O(1) for rewind.
//!
//! Teaching note: with the cache, a decode step feeds one token and reads every earlier key and value from
//! here; without it, every step re-feeds the whole sequence. Its size is
//! `2 (K and V) x layers x kv_heads x positions x head_dim x 4 bytes`.

use candle_core::{DType, Device, Result, Tensor};

/// Keys and values for every layer, each `[n_kv_head, capacity, head_dim]`, valid up to `len`.
pub struct KvCache {
    layers: Vec<Option<(Tensor, Tensor)>>,
    n_kv_head: usize,
    head_dim: usize,
    capacity: usize,
    max_len: usize,
    len: usize,
}

impl KvCache {
    pub fn new(n_layer: usize, n_kv_head: usize, head_dim: usize, max_len: usize) -> Self {
        Self {
            layers: vec![None; n_layer],
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
        self.layers.iter_mut().for_each(|l| *l = None);
    }

    /// Marks positions `..len` valid once every layer has appended.
    pub fn set_len(&mut self, len: usize) {
        self.len = len;
    }

    /// Writes `k`, `v` (`[n_kv_head, seq, head_dim]`) at `index_pos` in `layer`'s storage and returns views
    /// of positions `0..index_pos + seq`.
    pub fn append(
        &mut self,
        layer: usize,
        index_pos: usize,
        k: &Tensor,
        v: &Tensor,
    ) -> Result<(Tensor, Tensor)> {
        let seq = k.dim(1)?;
        let end = index_pos + seq;
        if end > self.max_len {
            candle_core::bail!(
                "KV cache full: {end} positions > context length {}",
                self.max_len
            );
        }
        if end > self.capacity {
            self.grow(end, k.device())?;
        }
        let (kc, vc) = match &self.layers[layer] {
            Some(kv) => kv.clone(),
            None => {
                let shape = (self.n_kv_head, self.capacity, self.head_dim);
                let kv = (
                    Tensor::zeros(shape, DType::F32, k.device())?,
                    Tensor::zeros(shape, DType::F32, k.device())?,
                );
                self.layers[layer] = Some(kv.clone());
                kv
            }
        };
        kc.slice_set(&k.contiguous()?, 1, index_pos)?;
        vc.slice_set(&v.contiguous()?, 1, index_pos)?;
        Ok((kc.narrow(1, 0, end)?, vc.narrow(1, 0, end)?))
    }

    /// Doubles capacity (at least to `needed`, at most the context length), keeping valid entries.
    fn grow(&mut self, needed: usize, device: &Device) -> Result<()> {
        let mut cap = self.capacity.max(256);
        while cap < needed {
            cap *= 2;
        }
        let cap = cap.min(self.max_len);
        let shape = (self.n_kv_head, cap, self.head_dim);
        for slot in self.layers.iter_mut() {
            if let Some((k, v)) = slot.take() {
                let (nk, nv) = (
                    Tensor::zeros(shape, DType::F32, device)?,
                    Tensor::zeros(shape, DType::F32, device)?,
                );
                if self.len > 0 {
                    nk.slice_set(&k.narrow(1, 0, self.len)?.contiguous()?, 1, 0)?;
                    nv.slice_set(&v.narrow(1, 0, self.len)?.contiguous()?, 1, 0)?;
                }
                *slot = Some((nk, nv));
            }
        }
        self.capacity = cap;
        Ok(())
    }
}
