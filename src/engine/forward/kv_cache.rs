//! The KV cache: key/value storage per layer, reserved for the whole context at its first use but
//! resident only as far as a pass has written (or is about to: `prepare`, 64 KB ahead); appends in place
//! and truncates in O(1) for rewind.
//!
//! Teaching note: with the cache, a decode step feeds one token and reads every earlier key and value from
//! here; without it, every step re-feeds the whole sequence. Its size is
//! `2 (K and V) x layers x kv_heads x positions x head_dim x 4 bytes` (2 with an `f16` cache).
//!
//! Storage is plain `f32` (or `f16`, an option: `elem.rs`), position-major (`[position][kv_head][head_dim]`): a position's keys are exactly
//! one row of `W_k`'s output, so appending is one copy and every offset stays. The attention
//! kernel reads it through `KvView`'s strides. Head-major runs (`[kv_head][position][head_dim]`) were
//! tried, for a decode step that streams one kv head at a time: no faster here (docs/PERFORMANCE.md).

mod elem;

pub use elem::{KvElem, KvPrecision};

use candle_core::Result;
use half::f16;

/// Keys and values of one layer.
#[derive(Default)]
struct LayerKv {
    k: Region,
    v: Region,
}

/// Elements (all of one type) in address space reserved for the whole context by one anonymous
/// mapping, written from the start. The system backs a page with memory only when it is first written, so the cache costs what
/// it holds; and it never moves: no reallocation, no copy, every offset kept. (Reserved through the
/// heap instead, the space took freed pages the heap already held, and a 512-token prefill's peak
/// rose from 180 to 450 MiB.)
#[derive(Default)]
struct Region {
    map: Option<memmap2::MmapMut>,
    /// Bytes ever written (the mapping's front that is resident).
    len: usize,
    /// Bytes from the start the system was asked to back (`populate`), a whole number of pages.
    backed: usize,
}

/// Writes every page of `bytes` once, with the byte it holds: the system backs each as it is written.
fn touch_pages(bytes: &mut [u8]) {
    for at in (0..bytes.len()).step_by(4096) {
        bytes[at] = std::hint::black_box(bytes[at]);
    }
}

/// How far past a pass's last position `KvCache::prepare` backs each mapping: one request for 16
/// pages, where a decode step writing its new position into a fresh page took a fault for it.
const BACK_AHEAD: usize = 64 << 10;

impl Region {
    /// Room for `bytes` bytes, reserved on first use.
    fn reserve(&mut self, bytes: usize) -> Result<()> {
        if self.map.is_none() {
            let bytes = bytes.max(1);
            let map = memmap2::MmapMut::map_anon(bytes).map_err(|e| {
                candle_core::Error::Msg(format!(
                    "could not reserve {} MB of address space for the KV cache: {e}",
                    bytes >> 20
                ))
            })?;
            self.map = Some(map);
        }
        Ok(())
    }

    /// Has the system back the mapping to byte `bytes` and `BACK_AHEAD` bytes beyond, in one request
    /// (`MADV_POPULATE_WRITE`) rather than a page fault per page as they are written. Where the system
    /// refuses it (Linux before 5.14, other systems), each page is written once here instead, with the
    /// byte it holds.
    fn populate(&mut self, bytes: usize) {
        let Some(map) = &mut self.map else { return };
        if bytes <= self.backed {
            return;
        }
        let to = (bytes + BACK_AHEAD)
            .next_multiple_of(BACK_AHEAD)
            .min(map.len());
        #[cfg(target_os = "linux")]
        let asked = map.advise_range(
            memmap2::Advice::PopulateWrite,
            self.backed,
            to - self.backed,
        );
        #[cfg(not(target_os = "linux"))]
        let asked: std::io::Result<()> = Err(std::io::ErrorKind::Unsupported.into());
        if asked.is_err() {
            touch_pages(&mut map[self.backed..to]);
        }
        self.backed = to;
    }

    /// Writes `data`, each rounded to `E`, at element `at` (positions skipped over read as zeros).
    fn write<E: KvElem>(&mut self, at: usize, data: &[f32]) {
        let map = self.map.as_mut().expect("reserved before written");
        let elems: &mut [E] = bytemuck::cast_slice_mut(&mut map[..]);
        let to = &mut elems[at..at + data.len()];
        to.iter_mut()
            .zip(data)
            .for_each(|(e, &x)| *e = E::narrow(x));
        self.len = self.len.max((at + data.len()) * size_of::<E>());
    }

    /// The elements written so far.
    fn elems<E: KvElem>(&self) -> &[E] {
        match &self.map {
            Some(map) => bytemuck::cast_slice(&map[..self.len]),
            None => &[],
        }
    }
}

/// Keys and values of positions `0..len` of one layer, as the attention kernel reads them: position `j`,
/// kv head `g` starts at `g * head_stride + j * row_stride` in `k` and in `v`. Elements are `f32`, or
/// `f16` from an `f16` cache.
#[derive(Clone, Copy)]
pub struct KvView<'a, E = f32> {
    pub k: &'a [E],
    pub v: &'a [E],
    pub len: usize,
    pub row_stride: usize,
    pub head_stride: usize,
}

impl<'a, E> KvView<'a, E> {
    /// Keys and values stored position-major, `[position][kv_head][head_dim]` (as `W_k` and `W_v`
    /// write them), for every position they hold.
    pub fn position_major(k: &'a [E], v: &'a [E], n_kv_head: usize, head_dim: usize) -> Self {
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

/// A layer's view in the cache's own element type.
#[derive(Clone, Copy)]
pub enum Stored<'a> {
    F32(KvView<'a, f32>),
    F16(KvView<'a, f16>),
}

impl Stored<'_> {
    /// Positions held.
    pub fn len(&self) -> usize {
        match self {
            Stored::F32(v) => v.len,
            Stored::F16(v) => v.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Position `j`'s key (`value: false`) or value for kv head `g`, as `f32`.
    pub fn read(&self, j: usize, g: usize, value: bool, head_dim: usize) -> Vec<f32> {
        fn widened<E: KvElem>(
            v: &KvView<E>,
            j: usize,
            g: usize,
            value: bool,
            n: usize,
        ) -> Vec<f32> {
            let x = if value { v.v } else { v.k };
            x[v.at(j, g)..][..n].iter().map(|e| e.widen()).collect()
        }
        match self {
            Stored::F32(v) => widened(v, j, g, value, head_dim),
            Stored::F16(v) => widened(v, j, g, value, head_dim),
        }
    }
}

/// Keys and values for every layer, valid up to `len`.
pub struct KvCache {
    layers: Vec<LayerKv>,
    n_kv_head: usize,
    head_dim: usize,
    max_len: usize,
    len: usize,
    precision: KvPrecision,
}

impl KvCache {
    pub fn new(n_layer: usize, n_kv_head: usize, head_dim: usize, max_len: usize) -> Self {
        Self {
            layers: (0..n_layer).map(|_| LayerKv::default()).collect(),
            n_kv_head,
            head_dim,
            max_len,
            len: 0,
            precision: KvPrecision::F32,
        }
    }

    /// The same cache, empty, storing `precision`'s elements.
    pub fn with_precision(mut self, precision: KvPrecision) -> Self {
        self.set_precision(precision);
        self
    }

    /// Empties the cache (its storage freed) and stores `precision`'s elements from now on.
    pub fn set_precision(&mut self, precision: KvPrecision) {
        self.release();
        self.precision = precision;
    }

    pub fn precision(&self) -> KvPrecision {
        self.precision
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of the valid part (what the cache costs at this length).
    pub fn bytes(&self) -> usize {
        self.bytes_at(self.len)
    }

    /// Bytes the cache holds at `positions` positions.
    pub fn bytes_at(&self, positions: usize) -> usize {
        2 * self.layers.len() * positions * self.row() * self.precision.bytes()
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
        self.layers.iter_mut().for_each(|l| *l = LayerKv::default());
    }

    /// Marks positions `..len` valid once every layer has appended.
    pub fn set_len(&mut self, len: usize) {
        self.len = len;
    }

    /// Elements per position per layer (`n_kv_head * head_dim`).
    fn row(&self) -> usize {
        self.n_kv_head * self.head_dim
    }

    /// Reserves every layer's storage and has it backed up to position `end` (and a little beyond), so a
    /// pass that appends up to `end` writes memory that is already there. A pass calls this before its
    /// clock starts: providing the cache's memory is the system's work, not the model's (llama.cpp
    /// provides its whole cache when the context is created). Without it a 512-token SmolLM2 prompt
    /// took ~5,800 page faults inside its timed pass, and each decode step ~10.
    pub fn prepare(&mut self, end: usize) -> Result<()> {
        let row_bytes = self.row() * self.precision.bytes();
        let end = end.min(self.max_len);
        for l in &mut self.layers {
            for r in [&mut l.k, &mut l.v] {
                r.reserve(self.max_len * row_bytes)?;
                r.populate(end * row_bytes);
            }
        }
        Ok(())
    }

    /// Writes `k`, `v` (`[seq][n_kv_head * head_dim]`, row-major; rounded to `f16` by an `f16` cache)
    /// at `index_pos` in `layer`'s storage and returns positions `0..index_pos + seq` of that layer.
    pub fn append(
        &mut self,
        layer: usize,
        index_pos: usize,
        k: &[f32],
        v: &[f32],
    ) -> Result<Stored<'_>> {
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
        let max_bytes = self.max_len * row * self.precision.bytes();
        let l = &mut self.layers[layer];
        l.k.reserve(max_bytes)?;
        l.v.reserve(max_bytes)?;
        let at = index_pos * row;
        match self.precision {
            KvPrecision::F32 => (l.k.write::<f32>(at, k), l.v.write::<f32>(at, v)),
            KvPrecision::F16 => (l.k.write::<f16>(at, k), l.v.write::<f16>(at, v)),
        };
        Ok(self.view_of(layer, end))
    }

    /// Positions `0..len()` of `layer` (empty if the layer has stored nothing yet).
    pub fn view(&self, layer: usize) -> Stored<'_> {
        match self.layers[layer].k.len {
            0 => self.view_of(layer, 0),
            _ => self.view_of(layer, self.len),
        }
    }

    fn view_of(&self, layer: usize, len: usize) -> Stored<'_> {
        fn typed<E: KvElem>(l: &LayerKv, len: usize, row: usize, hd: usize) -> KvView<'_, E> {
            KvView {
                k: l.k.elems(),
                v: l.v.elems(),
                len,
                row_stride: row,
                head_stride: hd,
            }
        }
        let (l, row, hd) = (&self.layers[layer], self.row(), self.head_dim);
        match self.precision {
            KvPrecision::F32 => Stored::F32(typed(l, len, row, hd)),
            KvPrecision::F16 => Stored::F16(typed(l, len, row, hd)),
        }
    }
}

#[cfg(test)]
mod tests;
