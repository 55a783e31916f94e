//! The kernel's arithmetic, shared by its portable and x86 forms: the `Arith` operations, one key's
//! dot product, the softmax in candle's summation order, and the probability-weighted sums of values,
//! each in the one fixed order that keeps a position's bits whatever pass computes it.

use super::expf;
use crate::engine::forward::kv_cache::KvElem;
use crate::engine::forward::prefetch;
use std::ops::Range;

/// The kernel's arithmetic: portable loops, or (`x86::Avx2`) intrinsics for the two hottest ones that
/// give the same bits.
pub(super) trait Arith: Copy {
    /// Multiply-adds are fused (one rounding, as gemm and glibc's FMA build do) wherever the CPU has FMA.
    const FUSED: bool;
    /// Queries whose weighted sums one pass over a block of values serves (those that read one kv
    /// head over the same keys): each keeps its own chains, but their multiply-adds interleave, so a
    /// CPU with registers to spare hides each chain's latency.
    const SUMS_TOGETHER: usize = 1;
    /// Elements of a head each query's chains cover in one pass over a block of values (they stay in
    /// registers): `SUMS_TOGETHER` queries of this many must fit the CPU's vector registers.
    const SUMS_WIDTH: usize = 64;
    fn mul_add(a: f32, b: f32, c: f32) -> f32;
    fn mul_add64(a: f64, b: f64, c: f64) -> f64;

    /// `s[j] = dot(q, k_j) * scale` for `j < s.len()`, key `j` at `k[j * stride..][..q.len()]`.
    #[inline(always)]
    fn scores<E: KvElem>(self, q: &[f32], k: &[E], stride: usize, scale: f32, s: &mut [f32]) {
        for (j, sj) in s.iter_mut().enumerate() {
            *sj = dot::<Self, E>(q, &k[j * stride..][..q.len()]) * scale;
        }
    }

    /// `scores` for three queries over the same keys (a kv group's heads of one row).
    #[inline(always)]
    fn scores3<E: KvElem>(
        self,
        q: [&[f32]; 3],
        k: &[E],
        stride: usize,
        scale: f32,
        s: [&mut [f32]; 3],
    ) {
        for (q, s) in q.into_iter().zip(s) {
            self.scores(q, k, stride, scale, s);
        }
    }

    /// `chains` for `N` queries 32 elements wide (where `SUMS_WIDTH` is 32).
    #[inline(always)]
    fn chains32<E: KvElem, const N: usize>(
        self,
        p: [&[f32]; N],
        v: &[E],
        stride: usize,
        out: [&mut [f32; 32]; N],
    ) {
        chains::<Self, E, 32, N>(p, v, stride, out)
    }

    /// `x = exp(x - max)` in place, libm's bits (`expf`).
    #[inline(always)]
    fn exps(self, s: &mut [f32], max: f32) {
        s.iter_mut().for_each(|x| *x = expf::exp::<Self>(*x - max));
    }
}

/// Portable loops with fused multiply-adds (`mul_add`, one instruction where the CPU has FMA).
#[derive(Clone, Copy)]
pub(super) struct Fused;
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
pub(super) struct Unfused;
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

/// Bytes of keys or values a block brings into L1 for all of a group's queries.
pub(super) const L1_BLOCK_BYTES: usize = 16 << 10;

/// The queries' probabilities (query `qi`'s over keys `spans[qi]` at `p[qi * kv_len..]`), where each
/// reads its values (`v_at`: where its kv head's first value starts) and writes its output (`y_at`).
pub(super) struct Sums<'a> {
    pub(super) p: &'a [f32],
    pub(super) kv_len: usize,
    pub(super) spans: &'a [Range<usize>],
    pub(super) v_at: &'a dyn Fn(usize) -> usize,
    pub(super) y_at: &'a dyn Fn(usize) -> usize,
}

/// `y[y_at(qi)..][..hd] = Σ_j p_qi,j v_j` for each query, where `v_j` starts `j * stride` floats on
/// from `v_at(qi)` (`n_kv` heads size the blocks; a decode step's blocks are `decode_block` keys, the
/// next block's values asked for ahead): 64 elements of the head at a time, a block of keys at a time,
/// so that block of values stays in L1 across the queries, and up to `A::SUMS_TOGETHER` queries that
/// read one kv head over the same keys (a row's heads of one group) in one pass. Each element is one
/// chain of multiply-adds in key order, from zero (a block's partial sum is stored and picked up again,
/// which changes no bit).
#[inline(always)]
pub(super) fn weighted_sums<A: Arith, E: KvElem>(
    arith: A,
    q: &Sums,
    v: (&[E], usize, usize),
    hd: (usize, Option<usize>),
    y: &mut [f32],
) {
    match A::SUMS_WIDTH {
        32 => sums_of_width::<A, E, 32>(arith, q, v, hd, y),
        _ => sums_of_width::<A, E, 64>(arith, q, v, hd, y),
    }
}

/// `weighted_sums` with each query's chains `W` elements wide.
#[inline(always)]
fn sums_of_width<A: Arith, E: KvElem, const W: usize>(
    arith: A,
    q: &Sums,
    (v, stride, n_kv): (&[E], usize, usize),
    (hd, decode_block): (usize, Option<usize>),
    y: &mut [f32],
) {
    let keys = decode_block.unwrap_or((L1_BLOCK_BYTES / (4 * W * n_kv)).max(1));
    let lo = q.spans.iter().map(|s| s.start).min().unwrap_or(0);
    let hi = q.spans.iter().map(|s| s.end).max().unwrap_or(0);
    // Where each kv head a decode step's queries read starts, to ask for the next block's values.
    let mut heads: Vec<usize> = match decode_block {
        Some(_) => (0..q.spans.len()).map(|qi| (q.v_at)(qi)).collect(),
        None => Vec::new(),
    };
    heads.dedup();
    for c0 in (0..hd).step_by(W) {
        let w = W.min(hd - c0);
        for j0 in (lo..hi).step_by(keys) {
            let j1 = hi.min(j0 + keys);
            if decode_block.is_some() {
                for j in j1..hi.min(j1 + keys) {
                    heads
                        .iter()
                        .for_each(|&at| prefetch::floats(v, j * stride + at + c0, w));
                }
            }
            let mut qi = 0;
            while qi < q.spans.len() {
                let s = &q.spans[qi];
                let (a, b) = (s.start.max(j0), s.end.min(j1));
                // The queries from `qi` on that read the same values over the same keys.
                let same = |n: &usize| q.spans[*n] == *s && (q.v_at)(*n) == (q.v_at)(qi);
                let together = (qi..q.spans.len().min(qi + A::SUMS_TOGETHER))
                    .take_while(same)
                    .count();
                let first = qi;
                qi += together;
                if a >= b {
                    continue;
                }
                let p = |n: usize| &q.p[(first + n) * q.kv_len..][a..b];
                let v = &v[a * stride + (q.v_at)(first) + c0..];
                let at = |n: usize| (q.y_at)(first + n) + c0;
                match together {
                    _ if w < W => (0..together)
                        .for_each(|n| chain_any::<A, E>(p(n), v, stride, &mut y[at(n)..][..w])),
                    3 => chains_into::<A, E, W, 3>(arith, y, at, p, v, stride),
                    2 => chains_into::<A, E, W, 2>(arith, y, at, p, v, stride),
                    _ => chains_into::<A, E, W, 1>(arith, y, at, p, v, stride),
                }
            }
        }
    }
}

/// `chains` for queries `0..N` of a run, whose outputs start at `y[at(n)..]`: the CPU's own
/// (`Arith::chains32`) where a query's chains are 32 wide.
#[inline(always)]
fn chains_into<'p, A: Arith, E: KvElem, const W: usize, const N: usize>(
    arith: A,
    y: &mut [f32],
    at: impl Fn(usize) -> usize,
    p: impl Fn(usize) -> &'p [f32],
    v: &[E],
    stride: usize,
) {
    let outs = outputs::<N>(y, at, W);
    let p = std::array::from_fn(p);
    if W == 32 {
        arith.chains32(p, v, stride, outs.map(|o| o.try_into().unwrap()));
    } else {
        let outs = outs.map(|o| <&mut [f32; W]>::try_from(o).unwrap());
        chains::<A, E, W, N>(p, v, stride, outs);
    }
}

/// The `w` outputs of each of `N` queries, query `n`'s from `y[at(n)..]`.
#[inline(always)]
fn outputs<const N: usize>(
    y: &mut [f32],
    at: impl Fn(usize) -> usize,
    w: usize,
) -> [&mut [f32]; N] {
    y.get_disjoint_mut(std::array::from_fn::<_, N, _>(|n| at(n)..at(n) + w))
        .expect("each query owns its output")
}

/// For each of `N` queries, `out[e] += p_j · v_j[e]` by multiply-add, for each `j` in order
/// (`v_j = v[j * stride..]`), in registers: the queries share each load of `v_j`.
#[inline(always)]
fn chains<A: Arith, E: KvElem, const W: usize, const N: usize>(
    p: [&[f32]; N],
    v: &[E],
    stride: usize,
    out: [&mut [f32; W]; N],
) {
    let mut acc: [[f32; W]; N] = std::array::from_fn(|n| *out[n]);
    for j in 0..p[0].len() {
        let vr: &[E; W] = v[j * stride..][..W].try_into().unwrap();
        for n in 0..N {
            let pj = p[n][j];
            for e in 0..W {
                acc[n][e] = A::mul_add(pj, vr[e].widen(), acc[n][e]);
            }
        }
    }
    for (o, a) in out.into_iter().zip(acc) {
        *o = a;
    }
}

/// `chain` for a head's last, narrower piece.
#[inline(always)]
fn chain_any<A: Arith, E: KvElem>(p: &[f32], v: &[E], stride: usize, out: &mut [f32]) {
    for (j, &pj) in p.iter().enumerate() {
        for (o, x) in out.iter_mut().zip(&v[j * stride..]) {
            *o = A::mul_add(pj, x.widen(), *o);
        }
    }
}

/// `Σ a_e b_e` as gemm's horizontal kernel computes it: element `e` into lane `e % 8` by fused
/// multiply-add in order, then lanes `l + l+4`, `+2`, `+1`.
#[inline(always)]
fn dot<A: Arith, E: KvElem>(a: &[f32], b: &[E]) -> f32 {
    let mut acc = [0f32; 8];
    let (ac, at) = a.as_chunks::<8>();
    let (bc, bt) = b.as_chunks::<8>();
    for (x, y) in ac.iter().zip(bc) {
        for l in 0..8 {
            acc[l] = A::mul_add(x[l], y[l].widen(), acc[l]);
        }
    }
    if !at.is_empty() {
        // gemm loads the tail with zeros past its end and adds all 8 lanes
        let (mut x, mut y) = ([0f32; 8], [0f32; 8]);
        x[..at.len()].copy_from_slice(at);
        y.iter_mut().zip(bt).for_each(|(y, b)| *y = b.widen());
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
pub(super) fn softmax<A: Arith>(arith: A, s: &mut [f32], exp_ok: bool) {
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
