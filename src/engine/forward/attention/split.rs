//! A pass's attention on several threads: a decode row's heads split over them, or a prefill's
//! blocks of rows handed out, costliest first. Each part computes what it would alone.

use super::{pool, BlockOut, Job, BLOCK_ROWS};
use crate::engine::forward::kv_cache::KvElem;
use std::sync::{Mutex, OnceLock};

/// A block's outputs, `[row][head][hd]`, and the parts that made them (their probabilities, when not
/// written in place).
pub(super) struct SplitOut {
    pub(super) rows: Vec<f32>,
    pub(super) parts: Vec<BlockOut>,
}

impl<E: KvElem> Job<'_, E> {
    /// Handles one block of rows (a decode step) on several threads (or one): its heads are split. A
    /// part's probabilities are `[its heads][row][kv_len]`, so the parts follow each other: into
    /// `scores` (one row), in place, when given; its outputs are `[row][its heads][hd]`, interleaved
    /// back row by row.
    pub(super) fn split_heads(
        &self,
        seq: usize,
        threads: usize,
        scores: Option<&mut [f32]>,
    ) -> SplitOut {
        let n_head = self.heads.n_head;
        let parts = threads.min(n_head).max(1);
        let bounds = |t: usize| n_head * t / parts..n_head * (t + 1) / parts;
        // Each part's own run of `scores`, behind an uncontended lock (the pool's job is `Fn`).
        let mut places: Vec<Mutex<Option<&mut [f32]>>> = Vec::with_capacity(parts);
        match scores {
            Some(mut rest) => {
                let kv_len = self.kv.len;
                for t in 0..parts {
                    let (mine, after) = rest.split_at_mut(bounds(t).len() * kv_len);
                    places.push(Mutex::new(Some(mine)));
                    rest = after;
                }
            }
            None => places.extend((0..parts).map(|_| Mutex::new(None))),
        }
        let part = |t: usize| {
            let into = places[t].lock().expect("no part panics").take();
            self.run(0..seq, bounds(t), into)
        };
        let outs: Vec<BlockOut> = if parts == 1 {
            vec![part(0)]
        } else {
            let slots: Vec<OnceLock<BlockOut>> = (0..parts).map(|_| OnceLock::new()).collect();
            pool::parallel_for(parts, parts, |t| {
                let _ = slots[t].set(part(t));
            });
            slots
                .into_iter()
                .map(|s| s.into_inner().expect("every part ran"))
                .collect()
        };
        let mut rows = Vec::with_capacity(seq * n_head * self.heads.head_dim);
        for r in 0..seq {
            for o in &outs {
                let w = o.y.len() / seq;
                rows.extend_from_slice(&o.y[r * w..][..w]);
            }
        }
        SplitOut { rows, parts: outs }
    }

    /// Handles several blocks of rows, a block at a time, on one thread too: a block's scores
    /// (`[query][kv_len]`) stay in cache, where a 512-row pass's would take 9 MB of fresh pages a layer.
    pub(super) fn split_rows(
        &self,
        seq: usize,
        threads: usize,
        captured: &mut Vec<f32>,
    ) -> Vec<f32> {
        let heads = self.heads;
        let width = heads.n_head * heads.head_dim;
        let blocks = seq.div_ceil(BLOCK_ROWS);
        let block = |b: usize| {
            self.run(
                b * BLOCK_ROWS..seq.min((b + 1) * BLOCK_ROWS),
                0..heads.n_head,
                None,
            )
        };
        let outs: Vec<BlockOut> = if threads == 1 {
            (0..blocks).map(block).collect()
        } else {
            // Later rows see more keys: hand out the costliest blocks first so the threads finish together.
            let slots: Vec<OnceLock<BlockOut>> = (0..blocks).map(|_| OnceLock::new()).collect();
            pool::parallel_for(blocks, threads, |item| {
                let b = blocks - 1 - item;
                let _ = slots[b].set(block(b));
            });
            slots
                .into_iter()
                .map(|s| s.into_inner().expect("every block ran"))
                .collect()
        };
        let mut y = Vec::with_capacity(seq * width);
        outs.iter().for_each(|o| y.extend_from_slice(&o.y));
        // Each block holds `[head][its captured rows][kv_len]`; the layer wants `[head][row][kv_len]`.
        for h in 0..heads.n_head {
            for o in &outs {
                let n = o.probs.len() / heads.n_head;
                captured.extend_from_slice(&o.probs[h * n..(h + 1) * n]);
            }
        }
        y
    }
}
