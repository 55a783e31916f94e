//! RoPE and causal grouped-query attention over the KV cache, each query row computed on its own in one
//! fixed order, so a position's output never depends on how many rows share its forward pass.
//!
//! Why not a matmul: a gemm picks its kernel and blocking from the shapes it is given, so a 1-row decode
//! and a 512-row prefill add the same products in different orders, and candle's softmax sums a row
//! padded with masked zeros in lanes that shift with the padding. The differences are a few ulps, but
//! the next layer rounds its input to 8 bits, and a flipped rounding grows through 30 layers into visibly
//! different probabilities (up to 0.066 with the KV cache on and off before this kernel). Here, for query
//! `i` at position `pos` and each head, keys `j = 0..=pos` (the causal mask is the loop bound; a
//! sliding-window layer of window `w` starts the loop at `pos + 1 - w`, so its queries see the newest
//! `w` keys, themselves included, as llama.cpp masks Gemma 3's local layers):
//! - `s_j = dot(q, k_j) * (1/√d)`: 8 lanes of fused multiply-adds (element `e` into lane `e % 8`, in
//!   order), then lanes `l + l+4`, `+2`, `+1`;
//! - `p = softmax(s)` in f32: `max`, `e_j = exp(s_j - max)` with libm's bits (`expf.rs`), the sum in 32
//!   lanes over whole blocks of 32 then the rest in order, `p_j = e_j / sum`;
//! - `y = Σ_j p_j v_j`, each element a chain of fused multiply-adds in key order.
//!
//! That is exactly the arithmetic candle does for small shapes (gemm's AVX2 horizontal dot kernel and
//! its column gemv, candle's AVX2 `vec_sum`), so on such shapes the model keeps candle-transformers'
//! bits; for every shape it is one order, whatever the row count, block split or thread count.
//! Grouped-query attention reads kv head `h / (n_head / n_kv_head)` in place: no copies. The cache is
//! read through a `KvView`'s strides: its layout changes the order of reads, never a bit.

mod arith;
pub(crate) mod expf;
mod rope;
mod split;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86;
#[cfg(target_arch = "x86_64")]
mod x86_512;

pub use rope::Rope;

use super::kv_cache::{KvElem, KvView};
use super::prefetch;
use super::quant::decode_plan::small_rows_threads;
use super::quant::pool;
#[cfg(target_arch = "x86_64")]
use arith::Unfused;
use arith::{softmax, weighted_sums, Arith, Fused, Sums, L1_BLOCK_BYTES};
use std::ops::Range;

/// Query rows per work item when prefill runs on several threads.
const BLOCK_ROWS: usize = 16;
/// Keys a decode step's blocks hold, each block's keys (then values) asked for while the one before is
/// read. One query row does a few dozen operations per key: the step waits on memory (the weights it
/// streamed since the last step evicted the cache), and an L1-sized block of 20 SmolLM2 keys, read
/// kv head by kv head, is a strided pattern the hardware prefetcher follows poorly. At 2048 keys, one
/// Zen 5 thread under `--isa avx2` (`quick 1 attention-cold`): 200-235 us a layer at 20 keys without
/// prefetch, 190-200 with it, 131-133 at 8 keys with it, 164-175 at 8 without, 141-147 at 4.
const DECODE_BLOCK: usize = 8;
/// Below this many multiply-adds a pass runs on the calling thread (the hand-off costs more).
const PARALLEL_MIN_MACS: usize = 2 << 20;
/// A decode step's attention splits its heads from this many multiply-adds (SmolLM2: from position
/// ~60), on the threads its matmuls use: the pool's helper would otherwise wait through it.
const DECODE_MIN_MACS: usize = 64 << 10;

/// Head layout of one attention layer, and how far back its queries see.
#[derive(Debug, Clone, Copy)]
pub struct Heads {
    pub n_head: usize,
    pub n_kv_head: usize,
    pub head_dim: usize,
    /// A sliding-window layer's window (keys seen, the query's own included); `None`: all earlier keys.
    pub window: Option<usize>,
}

/// One pass's attention: `q` is `[seq][n_head * head_dim]` (after RoPE) for positions `index_pos..`,
/// `kv` holds positions `0..index_pos + seq`. Returns `[seq][n_head * head_dim]`. The probabilities of
/// the last `capture` rows are appended to `captured` as `[head][row][kv_len]`, zero past each row's
/// position (the causal mask) and before its window (a sliding-window layer).
pub fn attend<E: KvElem>(
    q: &[f32],
    kv: &KvView<E>,
    heads: Heads,
    index_pos: usize,
    capture: usize,
    captured: &mut Vec<f32>,
) -> Vec<f32> {
    let width = heads.n_head * heads.head_dim;
    let seq = q.len() / width;
    let kv_len = index_pos + seq;
    assert_eq!(kv.len, kv_len);
    assert!(
        kv.k.len() == kv.v.len()
            && kv.k.len() >= kv.at(kv_len - 1, heads.n_kv_head - 1) + heads.head_dim
    );
    let job = Job {
        q,
        kv,
        heads,
        index_pos,
        cap_from: seq - capture.min(seq),
        // candle's `att / √d` is `att * (1/√d) as f32`
        scale: (1.0 / (heads.head_dim as f64).sqrt()) as f32,
    };
    let blocks = seq.div_ceil(BLOCK_ROWS);
    let macs = 2 * heads.n_head * heads.head_dim * seq * (index_pos + seq.div_ceil(2));
    let threads = match macs {
        _ if macs >= PARALLEL_MIN_MACS => pool::threads(),
        _ if seq == 1 && macs >= DECODE_MIN_MACS => small_rows_threads().min(pool::threads()),
        _ => 1,
    };
    if seq == 1 && capture > 0 {
        // A captured decode row: its scores are computed, normalised and read in their place in
        // `captured` (`[head][kv_len]`, the layout of a query's scores), never copied.
        let at = captured.len();
        captured.resize(at + heads.n_head * kv_len, 0.0);
        return job.split_heads(1, threads, Some(&mut captured[at..])).rows;
    }
    if blocks == 1 && (threads == 1 || heads.n_head == 1) {
        let out = job.run(0..seq, 0..heads.n_head, None);
        captured.extend_from_slice(&out.probs);
        return out.y;
    }
    if blocks == 1 {
        let y = job.split_heads(seq, threads, None);
        y.parts
            .iter()
            .for_each(|o| captured.extend_from_slice(&o.probs));
        return y.rows;
    }
    job.split_rows(seq, threads, captured)
}

struct Job<'a, E> {
    q: &'a [f32],
    kv: &'a KvView<'a, E>,
    heads: Heads,
    index_pos: usize,
    /// First row (within the pass) whose probabilities are captured.
    cap_from: usize,
    scale: f32,
}

/// A block's output rows, and its captured probabilities as `[head][captured row][kv_len]`.
struct BlockOut {
    y: Vec<f32>,
    probs: Vec<f32>,
}

impl<E: KvElem> Job<'_, E> {
    /// Rows `rows` of the pass for heads `heads`, with the best arithmetic this CPU has; a decode
    /// row's scores `into` the given place (see `rows`). An `f16` cache's values are read by the
    /// AVX2 kernels, which widen them 8 at a time (the AVX-512 build's sums would widen one by one).
    fn run(&self, rows: Range<usize>, heads: Range<usize>, into: Option<&mut [f32]>) -> BlockOut {
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(avx512) = x86_512::Avx512::detect().filter(|_| E::WIDEN_IS_FREE) {
                // SAFETY: `detect` found AVX-512F, AVX2 and FMA.
                return unsafe { self.run_avx512(avx512, rows, heads, into) };
            }
            match x86::Avx2::detect() {
                // SAFETY: `detect` found AVX2 and FMA.
                Some(avx2) => unsafe { self.run_avx2(avx2, rows, heads, into) },
                None => self.rows(Unfused, rows, heads, into),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.rows(Fused, rows, heads, into)
    }

    /// `rows` compiled with AVX-512F too, so the weighted sums' chains take 16 lanes a register (each
    /// output element is still its own chain in key order).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    fn run_avx512(
        &self,
        avx512: x86_512::Avx512,
        rows: Range<usize>,
        heads: Range<usize>,
        into: Option<&mut [f32]>,
    ) -> BlockOut {
        self.rows(avx512, rows, heads, into)
    }

    /// `rows` compiled with AVX2 and FMA, so its portable loops vectorise with them too.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn run_avx2(
        &self,
        avx2: x86::Avx2,
        rows: Range<usize>,
        heads: Range<usize>,
        into: Option<&mut [f32]>,
    ) -> BlockOut {
        self.rows(avx2, rows, heads, into)
    }

    /// Rows `rows` for heads `hs`, as `[row][head][hd]` (outputs) and `[head][captured row][kv_len]`
    /// (probabilities), heads counted from `hs.start`. A block of keys at a time (of every kv head),
    /// for every (row, head) of the block: each key and value is brought into L1 once for all the
    /// queries that read it (a 3x to 64x cut in cache traffic; each head's run is streamed in order). The
    /// blocking only regroups work: each score is still one key's dot product, and each output element
    /// one chain of multiply-adds in key order.
    /// With `into` (one row, zeroed, `[head][kv_len]`), the scores are normalised there and read
    /// from there: they are the probabilities, and the block returns none of its own.
    #[inline(always)]
    fn rows<A: Arith>(
        &self,
        arith: A,
        rows: Range<usize>,
        hs: Range<usize>,
        into: Option<&mut [f32]>,
    ) -> BlockOut {
        let Heads {
            n_head,
            n_kv_head,
            head_dim: hd,
            window,
        } = self.heads;
        let n_rep = n_head / n_kv_head;
        let (kv, kv_len) = (self.kv, self.kv.len);
        let stride = kv.row_stride;
        let first_cap = self.cap_from.max(rows.start);
        let cap_rows = match into {
            Some(_) => 0,
            None => rows.end.saturating_sub(first_cap),
        };
        let nh = hs.len();
        let mut y = vec![0f32; rows.len() * nh * hd];
        let mut probs = vec![0f32; nh * cap_rows * kv_len];
        let exp_ok = expf::matches_libm::<A>();
        // The keys a row sees: up to its own position, from the start of its window.
        let span = |i: usize| {
            let n = self.index_pos + i + 1;
            window.map_or(0, |w| n.saturating_sub(w))..n
        };
        let keys = span(rows.start).start..span(rows.end - 1).end;
        // Query `qi`'s probabilities at `p[qi * kv_len..]`.
        let queries = queries_by_group(&rows, &hs, n_rep);
        let spans: Vec<_> = queries.iter().map(|&(i, _)| span(i)).collect();
        let mut own = Vec::new();
        let p: &mut [f32] = match into {
            Some(scores) => scores,
            None => {
                own.resize(queries.len() * kv_len, 0f32);
                &mut own
            }
        };
        assert_eq!(p.len(), queries.len() * kv_len);
        let decode = rows.len() == 1;
        self.score_blocks(arith, (&queries, &spans), keys, decode, p);
        for (qi, (&(i, h), s)) in queries.iter().zip(&spans).enumerate() {
            let ps = &mut p[qi * kv_len..][s.clone()];
            softmax(arith, ps, exp_ok);
            if cap_rows > 0 && i >= first_cap {
                let at = ((h - hs.start) * cap_rows + i - first_cap) * kv_len;
                probs[at..][s.clone()].copy_from_slice(ps);
            }
        }
        let sums = Sums {
            p,
            kv_len,
            spans: &spans,
            v_at: &|qi| kv.at(0, queries[qi].1 / n_rep),
            y_at: &|qi| {
                let (i, h) = queries[qi];
                ((i - rows.start) * nh + h - hs.start) * hd
            },
        };
        let block = decode.then_some(DECODE_BLOCK);
        weighted_sums(arith, &sums, (kv.v, stride, n_kv_head), (hd, block), &mut y);
        BlockOut { y, probs }
    }

    /// Every query's scores over its keys (of `keys`), into `p` (query `qi`'s at `p[qi * kv_len..]`):
    /// a block of keys (of every kv head) at a time, read once for all the queries. A decode step's
    /// keys come from memory: small blocks, the next one asked for ahead (`DECODE_BLOCK`).
    #[inline(always)]
    fn score_blocks<A: Arith>(
        &self,
        arith: A,
        (queries, spans): (&[(usize, usize)], &[Range<usize>]),
        keys: Range<usize>,
        decode: bool,
        p: &mut [f32],
    ) {
        let (n_head, hd) = (self.heads.n_head, self.heads.head_dim);
        let n_rep = n_head / self.heads.n_kv_head;
        let kv = self.kv;
        let score_block = match decode {
            true => DECODE_BLOCK,
            false => (L1_BLOCK_BYTES / (4 * self.heads.n_kv_head * hd)).max(4) / 4 * 4,
        };
        // The kv heads the queries read (a kv group's queries are neighbours).
        let kv_heads = match (queries.first(), queries.last()) {
            (Some(a), Some(b)) => a.1 / n_rep..b.1 / n_rep + 1,
            _ => 0..0,
        };
        for j0 in keys.clone().step_by(score_block) {
            let j1 = keys.end.min(j0 + score_block);
            if decode {
                for j in j1..keys.end.min(j1 + score_block) {
                    (kv_heads.clone()).for_each(|g| prefetch::floats(kv.k, kv.at(j, g), hd));
                }
            }
            let q_of = |qi: usize| {
                let (i, h) = queries[qi];
                &self.q[(i * n_head + h) * hd..][..hd]
            };
            let mut qi = 0;
            while qi < queries.len() {
                let (s, g) = (&spans[qi], queries[qi].1 / n_rep);
                // Three queries of one kv head over the same keys (a row's heads of a group) share
                // each key's loads.
                let three = qi + 3 <= queries.len()
                    && (1..3).all(|n| spans[qi + n] == *s && queries[qi + n].1 / n_rep == g);
                let (a, b) = (s.start.max(j0), s.end.min(j1));
                let n = if three { 3 } else { 1 };
                if a < b {
                    let k = &kv.k[kv.at(a, g)..];
                    if three {
                        let outs = p
                            .get_disjoint_mut(std::array::from_fn(|n| {
                                (qi + n) * kv.len + a..(qi + n) * kv.len + b
                            }))
                            .expect("each query owns its scores");
                        let q = std::array::from_fn(|n| q_of(qi + n));
                        arith.scores3(q, k, kv.row_stride, self.scale, outs);
                    } else {
                        let out = &mut p[qi * kv.len..][a..b];
                        arith.scores(q_of(qi), k, kv.row_stride, self.scale, out);
                    }
                }
                qi += n;
            }
        }
    }
}

/// The queries (row, head) of `rows` and heads `hs`, a kv group's heads together (`n_rep` heads share
/// a kv head): the order the attention's blocks read them in.
fn queries_by_group(rows: &Range<usize>, hs: &Range<usize>, n_rep: usize) -> Vec<(usize, usize)> {
    (hs.start / n_rep..hs.end.div_ceil(n_rep))
        .flat_map(|g| {
            let group = hs.start.max(g * n_rep)..hs.end.min((g + 1) * n_rep);
            rows.clone()
                .flat_map(move |i| group.clone().map(move |h| (i, h)))
        })
        .collect()
}

#[cfg(test)]
mod tests;
