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
//! Grouped-query attention reads kv head `h / (n_head / n_kv_head)` in place: no copies.

pub(crate) mod expf;
mod rope;
#[cfg(target_arch = "x86_64")]
pub(crate) mod x86;

pub use rope::Rope;

use super::kv_cache::KvView;
use super::quant::pool;
use std::sync::OnceLock;

/// Query rows per work item when prefill runs on several threads.
const BLOCK_ROWS: usize = 16;
/// Below this many multiply-adds a pass runs on the calling thread (the hand-off costs more).
const PARALLEL_MIN_MACS: usize = 2 << 20;

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
pub fn attend(
    q: &[f32],
    kv: &KvView,
    heads: Heads,
    index_pos: usize,
    capture: usize,
    captured: &mut Vec<f32>,
) -> Vec<f32> {
    let width = heads.n_head * heads.head_dim;
    let seq = q.len() / width;
    let kv_len = index_pos + seq;
    assert_eq!(kv.k.len(), kv_len * heads.n_kv_head * heads.head_dim);
    assert_eq!(kv.v.len(), kv.k.len());
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
    let threads = if blocks > 1 && macs >= PARALLEL_MIN_MACS {
        pool::threads()
    } else {
        1
    };
    if threads == 1 {
        let out = job.run(0..seq);
        captured.extend_from_slice(&out.probs);
        return out.y;
    }
    // Later rows see more keys: hand out the costliest blocks first so the threads finish together.
    let slots: Vec<OnceLock<BlockOut>> = (0..blocks).map(|_| OnceLock::new()).collect();
    pool::parallel_for(blocks, threads, |item| {
        let b = blocks - 1 - item;
        let _ = slots[b].set(job.run(b * BLOCK_ROWS..seq.min((b + 1) * BLOCK_ROWS)));
    });
    let outs: Vec<BlockOut> = slots
        .into_iter()
        .map(|s| s.into_inner().expect("every block ran"))
        .collect();
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

struct Job<'a> {
    q: &'a [f32],
    kv: &'a KvView<'a>,
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

/// The kernel's arithmetic: portable loops, or (`x86::Avx2`) intrinsics for the two hottest ones that
/// give the same bits.
trait Arith: Copy {
    /// Multiply-adds are fused (one rounding, as gemm and glibc's FMA build do) wherever the CPU has FMA.
    const FUSED: bool;
    fn mul_add(a: f32, b: f32, c: f32) -> f32;
    fn mul_add64(a: f64, b: f64, c: f64) -> f64;

    /// `s[j] = dot(q, k_j) * scale` for `j < s.len()`, key `j` at `k[j * stride..][..q.len()]`.
    #[inline(always)]
    fn scores(self, q: &[f32], k: &[f32], stride: usize, scale: f32, s: &mut [f32]) {
        for (j, sj) in s.iter_mut().enumerate() {
            *sj = dot::<Self>(q, &k[j * stride..][..q.len()]) * scale;
        }
    }

    /// `x = exp(x - max)` in place, libm's bits (`expf`).
    #[inline(always)]
    fn exps(self, s: &mut [f32], max: f32) {
        s.iter_mut().for_each(|x| *x = expf::exp::<Self>(*x - max));
    }
}

/// Portable loops with fused multiply-adds (`mul_add`, one instruction where the CPU has FMA).
#[derive(Clone, Copy)]
struct Fused;
impl Arith for Fused {
    const FUSED: bool = true;
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
    #[inline(always)]
    fn mul_add64(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
}

/// x86 without FMA only (pre-2013 CPUs), where `mul_add` is a slow library call: plain `a * b + c`.
/// Different bits from `Fused`, but the same on every pass, so the cache still changes nothing.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Unfused;
#[cfg(target_arch = "x86_64")]
impl Arith for Unfused {
    const FUSED: bool = false;
    #[inline(always)]
    fn mul_add(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
    #[inline(always)]
    fn mul_add64(a: f64, b: f64, c: f64) -> f64 {
        a * b + c
    }
}

impl Job<'_> {
    /// Rows `rows` of the pass, with the best arithmetic this CPU has.
    fn run(&self, rows: std::ops::Range<usize>) -> BlockOut {
        #[cfg(target_arch = "x86_64")]
        {
            match x86::Avx2::detect() {
                // SAFETY: `detect` found AVX2 and FMA.
                Some(avx2) => unsafe { self.run_avx2(avx2, rows) },
                None => self.rows(Unfused, rows),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.rows(Fused, rows)
    }

    /// `rows` compiled with AVX2 and FMA, so its portable loops vectorise with them too.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn run_avx2(&self, avx2: x86::Avx2, rows: std::ops::Range<usize>) -> BlockOut {
        self.rows(avx2, rows)
    }

    #[inline(always)]
    fn rows<A: Arith>(&self, arith: A, rows: std::ops::Range<usize>) -> BlockOut {
        let Heads {
            n_head,
            n_kv_head,
            head_dim: hd,
            window,
        } = self.heads;
        let n_rep = n_head / n_kv_head;
        let kv_len = self.kv.k.len() / (n_kv_head * hd);
        let first_cap = self.cap_from.max(rows.start);
        let cap_rows = rows.end.saturating_sub(first_cap);
        let mut y = vec![0f32; rows.len() * n_head * hd];
        let mut probs = vec![0f32; n_head * cap_rows * kv_len];
        let mut p = vec![0f32; kv_len];
        let exp_ok = expf::matches_libm::<A>();
        for (r, i) in rows.clone().enumerate() {
            let n = self.index_pos + i + 1; // keys up to this row's own position
            let first = window.map_or(0, |w| n.saturating_sub(w)); // the first key it may see
            for h in 0..n_head {
                let g = h / n_rep;
                let q = &self.q[(i * n_head + h) * hd..][..hd];
                let p = &mut p[first..n];
                let stride = n_kv_head * hd;
                let at = first * stride + g * hd;
                arith.scores(q, &self.kv.k[at..], stride, self.scale, p);
                softmax(arith, p, exp_ok);
                let out = &mut y[(r * n_head + h) * hd..][..hd];
                weighted_sum::<A>(p, self.kv.v, (stride, at), out);
                if i >= first_cap {
                    let row = &mut probs[(h * cap_rows + i - first_cap) * kv_len..];
                    row[first..n].copy_from_slice(p);
                }
            }
        }
        BlockOut { y, probs }
    }
}

/// `Σ a_e b_e` as gemm's horizontal kernel computes it: element `e` into lane `e % 8` by fused
/// multiply-add in order, then lanes `l + l+4`, `+2`, `+1`.
#[inline(always)]
fn dot<A: Arith>(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ac, at) = a.as_chunks::<8>();
    let (bc, bt) = b.as_chunks::<8>();
    for (x, y) in ac.iter().zip(bc) {
        for l in 0..8 {
            acc[l] = A::mul_add(x[l], y[l], acc[l]);
        }
    }
    if !at.is_empty() {
        // gemm loads the tail with zeros past its end and adds all 8 lanes
        let (mut x, mut y) = ([0f32; 8], [0f32; 8]);
        x[..at.len()].copy_from_slice(at);
        y[..bt.len()].copy_from_slice(bt);
        for l in 0..8 {
            acc[l] = A::mul_add(x[l], y[l], acc[l]);
        }
    }
    let acc: [f32; 4] = std::array::from_fn(|l| acc[l] + acc[l + 4]);
    (acc[0] + acc[2]) + (acc[1] + acc[3])
}

/// In place: `p_j = exp(s_j - max) / sum`, the sum in candle's `vec_sum` order: whole blocks of 32 in
/// 32 lanes, the lanes folded `(l, l+8, l+16, l+24)`, then `l + l+4`, pairs, and the rest in order.
/// `exp` is libm's, through the vectorisable copy when `exp_ok` (it gives libm's bits here).
#[inline(always)]
fn softmax<A: Arith>(arith: A, s: &mut [f32], exp_ok: bool) {
    let max = s.iter().fold(s[0], |m, &x| m.max(x));
    if exp_ok {
        arith.exps(s, max);
    } else {
        s.iter_mut().for_each(|x| *x = (*x - max).exp());
    }
    let (blocks, rest) = s.as_chunks::<32>();
    let mut lanes = [0f32; 32];
    for b in blocks {
        for l in 0..32 {
            lanes[l] += b[l];
        }
    }
    let x: [f32; 8] =
        std::array::from_fn(|l| (lanes[l] + lanes[l + 8]) + (lanes[l + 16] + lanes[l + 24]));
    let t: [f32; 4] = std::array::from_fn(|l| x[l] + x[l + 4]);
    let sum = rest
        .iter()
        .fold((t[0] + t[1]) + (t[2] + t[3]), |a, &e| a + e);
    s.iter_mut().for_each(|x| *x /= sum);
}

/// `out = Σ_j p_j v_j`, where `v_j` is `v[j * stride + offset..][..out.len()]`: each element a chain of
/// multiply-adds in key order (the chunking below only groups elements, never reorders one's sum).
#[inline(always)]
fn weighted_sum<A: Arith>(p: &[f32], v: &[f32], (stride, offset): (usize, usize), out: &mut [f32]) {
    const W: usize = 64; // a head of 64 stays in registers
    let (chunks, tail) = out.as_chunks_mut::<W>();
    for (c, o) in chunks.iter_mut().enumerate() {
        let mut acc = [0f32; W];
        for (j, &pj) in p.iter().enumerate() {
            let vr: &[f32; W] = v[j * stride + offset + c * W..][..W].try_into().unwrap();
            for e in 0..W {
                acc[e] = A::mul_add(pj, vr[e], acc[e]);
            }
        }
        *o = acc;
    }
    let done = chunks.len() * W;
    for (j, &pj) in p.iter().enumerate() {
        let vr = &v[j * stride + offset + done..][..tail.len()];
        for (o, x) in tail.iter_mut().zip(vr) {
            *o = A::mul_add(pj, *x, *o);
        }
    }
}
