//! The residual stream's own arithmetic on plain rows of f32: the RMS norm, and a branch joining the
//! stream fused with the norm that reads it next. No tensor is built: a decode step's layer runs
//! these, its matmuls and attention on slices (`model.rs`), where candle's ops cost ~25 allocations
//! and dispatches a layer.
//!
//! The norm is candle's `rms_norm` to the bit: per row, `sum2 = Σ x²` in order from the first element,
//! `m = √(sum2 / n + eps)`, `y = x / m · α`. The sum is one chain of dependent adds, so rows are taken
//! four at a time, four independent chains that the core runs side by side: the same bits as one row
//! after another, about four times the throughput for a prefill's rows.

use super::gate::OutPtr;
use super::quant::pool;

/// Rows per work item when a prefill's norm is split over the threads.
const ROWS_PER_ITEM: usize = 32;
/// Below this many elements a norm runs on the calling thread (the hand-off costs more).
const PARALLEL_MIN: usize = 1 << 16;

/// `out = rms_norm(x)` row by row (`x` and `out` are `[rows][alpha.len()]`).
pub fn rms_norm(x: &[f32], alpha: &[f32], eps: f32, out: &mut [f32]) {
    let n = alpha.len();
    assert!(n > 0 && x.len() == out.len() && x.len().is_multiple_of(n));
    for_row_parts_at(out, n, |at, out| {
        out.copy_from_slice(&x[at..at + out.len()]);
        norm_rows(out, alpha, eps);
    });
}

/// `x = rms_norm(x)` row by row.
pub fn rms_norm_in_place(x: &mut [f32], alpha: &[f32], eps: f32) {
    let n = alpha.len();
    assert!(n > 0 && x.len().is_multiple_of(n));
    for_row_parts_at(x, n, |_, x| norm_rows(x, alpha, eps));
}

/// `f` on `rows` (`[..][n]`) in parts of whole rows, on the pool's threads for a prefill's many rows
/// (`ROWS_PER_ITEM` rows an item), on the calling thread below `PARALLEL_MIN` elements. `f` gets each
/// part's offset (in elements) and the part.
pub(crate) fn for_row_parts_at(rows: &mut [f32], n: usize, f: impl Fn(usize, &mut [f32]) + Sync) {
    let len = rows.len();
    if len < PARALLEL_MIN {
        return f(0, rows);
    }
    let per = ROWS_PER_ITEM * n;
    let parts = OutPtr(rows.as_mut_ptr());
    pool::parallel_for(len.div_ceil(per), pool::threads(), |i| {
        let r = i * per..len.min((i + 1) * per);
        // SAFETY: each item owns the range `r` of `rows`, borrowed mutably until `parallel_for` has
        // joined every item.
        let part = unsafe { std::slice::from_raw_parts_mut(parts.at(r.start), r.len()) };
        f(r.start, part);
    });
}

/// A branch joins the stream, and the stream is normed for what reads it next:
/// `x += branch` (or `x += rms_norm(branch, post)` with a post-norm, Gemma 3's), then
/// `out = rms_norm(x, alpha)`. The adds are candle's `branch + x`, element by element.
pub fn join_and_norm(
    x: &mut [f32],
    branch: &mut [f32],
    post: Option<&[f32]>,
    eps: f32,
    alpha: &[f32],
    out: &mut [f32],
) {
    let n = alpha.len();
    assert!(n > 0 && x.len() == out.len() && x.len() == branch.len());
    assert!(x.len().is_multiple_of(n));
    if let Some(post) = post {
        rms_norm_in_place(branch, post, eps);
    }
    // Row by row, each part on one thread: the join, written `branch + x` (candle's operand order:
    // the same sum either way; a NaN's payload follows the first operand), then the norm of the
    // joined rows (a prefill's joins and copies had the other thread waiting).
    let xs = OutPtr(x.as_mut_ptr());
    let branch = &*branch;
    for_row_parts_at(out, n, |at, out| {
        // SAFETY: the part's range of `x` is this item's alone (the parts of `out` are disjoint, and
        // `x` is as long), and `x` is borrowed mutably until every item has joined.
        let x = unsafe { std::slice::from_raw_parts_mut(xs.at(at), out.len()) };
        add_into(x, &branch[at..at + out.len()]);
        out.copy_from_slice(x);
        norm_rows(out, alpha, eps);
    });
}

/// `x = branch + x`, element by element (candle's operand order).
#[allow(clippy::assign_op_pattern)]
fn add_into(x: &mut [f32], branch: &[f32]) {
    for (x, b) in x.iter_mut().zip(branch) {
        *x = *b + *x;
    }
}

/// The norm of whole rows in place, four at a time while four remain.
fn norm_rows(x: &mut [f32], alpha: &[f32], eps: f32) {
    let n = alpha.len();
    let mut quads = x.chunks_exact_mut(4 * n);
    for x in &mut quads {
        let mut sum2 = [0f32; 4];
        for e in 0..n {
            for (r, s) in sum2.iter_mut().enumerate() {
                let v = x[r * n + e];
                *s += v * v;
            }
        }
        for (row, s) in x.chunks_exact_mut(n).zip(sum2) {
            scale_row(row, alpha, eps, s);
        }
    }
    for row in quads.into_remainder().chunks_exact_mut(n) {
        let sum2: f32 = row.iter().map(|&v| v * v).sum();
        scale_row(row, alpha, eps, sum2);
    }
}

#[inline(always)]
fn scale_row(row: &mut [f32], alpha: &[f32], eps: f32, sum2: f32) {
    let m = (sum2 / alpha.len() as f32 + eps).sqrt();
    for (v, &a) in row.iter_mut().zip(alpha) {
        *v = *v / m * a;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor};

    fn candle_norm(x: &[f32], alpha: &[f32], eps: f32) -> Vec<f32> {
        let n = alpha.len();
        let xs = Tensor::from_slice(x, (x.len() / n, n), &Device::Cpu).unwrap();
        let a = Tensor::from_slice(alpha, n, &Device::Cpu).unwrap();
        candle_nn::ops::rms_norm(&xs, &a, eps)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap()
    }

    /// Deterministic values spanning several magnitudes, signs and a few exact zeros.
    fn values(len: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).max(1);
        (0..len)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                if i % 97 == 0 {
                    return 0.0;
                }
                let unit = (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
                unit * [1e-3f32, 1.0, 37.0, 4e3][(s % 4) as usize]
            })
            .collect()
    }

    #[test]
    fn the_norm_is_candles_bits_for_any_row_count() {
        // Row counts around the four-row groups, and past the threaded size (576 x 200 > 2^16).
        for (rows, n) in [(1, 576), (3, 576), (4, 64), (7, 640), (33, 576), (200, 576)] {
            let x = values(rows * n, rows as u32);
            let alpha = values(n, 7);
            let want = candle_norm(&x, &alpha, 1e-5);
            let mut got = vec![0f32; x.len()];
            rms_norm(&x, &alpha, 1e-5, &mut got);
            assert_eq!(bits(&got), bits(&want), "{rows} rows of {n}");
        }
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|f| f.to_bits()).collect()
    }

    /// Past the threaded size (300 x 576 > 2^16) the rows are joined and normed in parts on the
    /// pool's threads: the same bits.
    #[test]
    fn a_post_normed_join_is_candles_norm_then_add() {
        for (rows, n) in [(5, 64), (300, 576)] {
            let (x0, branch0, post, alpha) = (
                values(rows * n, 1),
                values(rows * n, 2),
                values(n, 3),
                values(n, 4),
            );
            let want_x: Vec<f32> = candle_norm(&branch0, &post, 1e-6)
                .iter()
                .zip(&x0)
                .map(|(b, x)| b + x)
                .collect();
            let want_out = candle_norm(&want_x, &alpha, 1e-6);
            let (mut x, mut branch, mut out) = (x0.clone(), branch0.clone(), vec![0f32; rows * n]);
            join_and_norm(&mut x, &mut branch, Some(&post), 1e-6, &alpha, &mut out);
            assert_eq!(bits(&x), bits(&want_x), "{rows} rows");
            assert_eq!(bits(&out), bits(&want_out), "{rows} rows");
            // Without a post-norm the branch is added as it is.
            let (mut x, mut branch) = (x0.clone(), branch0.clone());
            join_and_norm(&mut x, &mut branch, None, 1e-6, &alpha, &mut out);
            let plain: Vec<f32> = branch0.iter().zip(&x0).map(|(b, x)| b + x).collect();
            assert_eq!(bits(&x), bits(&plain), "{rows} rows");
            assert_eq!(
                bits(&out),
                bits(&candle_norm(&plain, &alpha, 1e-6)),
                "{rows} rows"
            );
        }
    }
}
