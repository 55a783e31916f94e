//! The chain's passes over the whole vocabulary, run side by side.
//!
//! One pass (its halves side by side) finds the raw row's largest logit and each block's largest. Then three passes are
//! independent of each other: the raw row's normaliser and entropy, the penalised and tempered rows'
//! normalisers, and the sorted prefix of the best ids, which reads only the blocks whose maxima can
//! hold one. The two normalisers are each a pass over 49k (Gemma: 262k) logits, the chain's whole
//! cost, so the three run as one job on the threads a decode step's matmuls use
//! (`decode_plan::small_rows_threads`, set by the session around its chain): a step pays for the
//! longest, not the sum. Each pass computes what it computed alone, in the same order, so the threads
//! change no bit of the result.

use super::best::{block_maxima, max_of, top_n_in_blocks, BLOCK};
use super::row::{lse_entropy_from, lse_scaled_from};
use crate::engine::forward::quant::decode_plan::small_rows_threads;
use crate::engine::forward::quant::pool::parallel_for;
use crate::protocol::SamplerSettings;
use std::sync::OnceLock;

/// Below this many logits a row is one job on the calling thread: waking a helper would cost more
/// than the passes.
const SIDE_BY_SIDE_FROM: usize = 16_384;

/// What the whole-vocabulary passes found.
pub(super) struct RowPasses {
    /// log-sum-exp and entropy (nats) of the raw logits.
    pub lse: f32,
    pub entropy: f32,
    /// log-sum-exp of the penalised row; `None` when there is none (the raw `lse` stands).
    pub lse_pen: Option<f32>,
    /// log-sum-exp of the penalised row over the temperature; `None` at temperature 1 (`lse_pen`).
    pub lse_t: Option<f32>,
    /// The best ids of the penalised row, best first: as many as the cut-offs need and `shown_n`.
    pub sorted: Vec<u32>,
}

impl RowPasses {
    /// Runs the passes over `logits` and, when a penalty changed it, the `penalised` row, at the
    /// temperature `t` (already 1 where the setting means greedy).
    pub fn run(
        logits: &[f32],
        penalised: Option<&[f32]>,
        t: f32,
        s: &SamplerSettings,
        shown_n: usize,
    ) -> RowPasses {
        Self::run_beside((logits, None), penalised, t, s, shown_n, &|| {})
    }

    /// `run`, and `beside` once, as the first item of the passes' job: work of the caller's that
    /// needs none of their results runs on one thread while the other takes the two normalisers
    /// (`Session::commit`'s bookkeeping; on one thread, before the passes). `known`: the row's
    /// `block_maxima`, when its pass found them.
    pub fn run_beside(
        (logits, known): (&[f32], Option<&[f32]>),
        penalised: Option<&[f32]>,
        t: f32,
        s: &SamplerSettings,
        shown_n: usize,
        beside: &(dyn Fn() + Sync),
    ) -> RowPasses {
        let threads = if logits.len() >= SIDE_BY_SIDE_FROM {
            small_rows_threads()
        } else {
            1
        };
        // One pass for the max and each block's max; the best ids then read only the blocks that
        // can hold them (a penalised row has its own maxima, found in the same job).
        let found;
        let maxima = match known {
            Some(m) => {
                assert_eq!(
                    m.len(),
                    logits.len().div_ceil(BLOCK),
                    "a block maximum a block"
                );
                m
            }
            None => {
                found = maxima_side_by_side(logits, threads);
                &found[..]
            }
        };
        let max = max_of(maxima);
        let base = penalised.unwrap_or(logits);
        let n = sorted_needed(base, t, s).max(shown_n);
        let (raw, norms, best) = (OnceLock::new(), OnceLock::new(), OnceLock::new());
        // The longest item first: on two threads, `beside` (~25 µs in a step) and then the sorted
        // prefix on one, the two normalisers (~17 µs each) on the other.
        parallel_for(4, threads, |item| match item {
            0 => beside(),
            1 => put(&raw, lse_entropy_from(logits, max)),
            2 => put(&norms, normalisers(logits, max, penalised, t)),
            _ => put(
                &best,
                match penalised {
                    None => top_n_in_blocks(logits, maxima, n),
                    Some(row) => top_n_in_blocks(row, &block_maxima(row), n),
                },
            ),
        });
        let sorted = best.into_inner().expect("every pass ran");
        let (lse, entropy) = raw.into_inner().expect("every pass ran");
        let (lse_pen, lse_t) = norms.into_inner().expect("every pass ran");
        RowPasses {
            lse,
            entropy,
            lse_pen,
            lse_t,
            sorted,
        }
    }
}

/// `block_maxima(logits)`, its two halves (split between blocks) on two threads when `threads` allows:
/// the row comes fresh from the output head, and this pass is the first to read it.
fn maxima_side_by_side(logits: &[f32], threads: usize) -> Vec<f32> {
    if threads < 2 {
        return block_maxima(logits);
    }
    let split = logits.len().div_ceil(BLOCK) / 2 * BLOCK;
    let halves: [OnceLock<Vec<f32>>; 2] = Default::default();
    parallel_for(2, threads, |h| {
        let half = if h == 0 {
            &logits[..split]
        } else {
            &logits[split..]
        };
        put(&halves[h], block_maxima(half));
    });
    let [mut first, second] = halves.map(|h| h.into_inner().expect("both halves ran"));
    first.extend(second);
    first
}

/// Stores one pass's result (each pass runs exactly once, so the cell is empty).
fn put<T>(cell: &OnceLock<T>, value: T) {
    let _ = cell.set(value);
}

/// The penalised row's log-sum-exp and its log-sum-exp over `t`, each `None` where it equals one
/// already known (the raw row's; the penalised row's at `t = 1`). `max` is the raw row's.
fn normalisers(
    logits: &[f32],
    max: f32,
    penalised: Option<&[f32]>,
    t: f32,
) -> (Option<f32>, Option<f32>) {
    match penalised {
        None => (None, (t != 1.0).then(|| lse_scaled_from(logits, t, max))),
        Some(row) => {
            let max = max_of(row);
            let lse_pen = lse_scaled_from(row, 1.0, max);
            let lse_t = (t != 1.0).then(|| lse_scaled_from(row, t, max));
            (Some(lse_pen), lse_t)
        }
    }
}

/// The ranks of `prefix`, the best ids of `values` best first (`top_n`'s order), read off the prefix:
/// the values larger than one are the prefix's before its first equal. `None` if one is NaN (a NaN
/// counts as larger than nothing, so `ranks_of` is the rule there).
pub(super) fn prefix_ranks(values: &[f32], prefix: &[u32]) -> Option<Vec<usize>> {
    let v: Vec<f32> = prefix.iter().map(|&i| values[i as usize]).collect();
    if v.iter().any(|x| x.is_nan()) {
        return None;
    }
    let mut ranks: Vec<usize> = Vec::with_capacity(v.len());
    for k in 0..v.len() {
        let tied = k > 0 && v[k] == v[k - 1];
        ranks.push(if tied { ranks[k - 1] } else { k });
    }
    Some(ranks)
}

/// The number of top-k survivors, `k` (the vocabulary when top-k is off).
pub(super) fn top_k_len(vocab: usize, s: &SamplerSettings) -> usize {
    if s.top_k > 0 {
        s.top_k.min(vocab)
    } else {
        vocab
    }
}

/// How much of the sorted order the cut-offs need, so that only a short prefix is ever sorted.
fn sorted_needed(base: &[f32], t: f32, s: &SamplerSettings) -> usize {
    let vocab = base.len();
    let k = top_k_len(vocab, s);
    if k < vocab {
        k
    } else if s.top_p < 1.0 {
        // A first guess; `top_p_len` sorts further when the mass is spread wider.
        512.min(vocab)
    } else if s.min_p > 0.0 {
        // p_i >= min_p * p_max  <=>  base_i >= base_max + t ln(min_p)
        let floor = max_of(base) + t * s.min_p.ln();
        base.iter().filter(|&&l| l >= floor).count()
    } else {
        vocab
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::forward::quant::decode_plan::with_small_rows_threads;
    use crate::engine::sampler::best::top_n;
    use crate::engine::sampler::row::{lse_entropy, lse_scaled};

    /// A logits row with ties, a NaN and a few far-out tokens, from a seed.
    fn row(len: usize, seed: u64) -> Vec<f32> {
        let mut z = seed | 1;
        (0..len)
            .map(|i| {
                z ^= z << 13;
                z ^= z >> 7;
                z ^= z << 17;
                match i % 997 {
                    5 => f32::NAN,
                    7 => 9.0,
                    _ => ((z >> 40) % 4096) as f32 / 256.0 - 8.0,
                }
            })
            .collect()
    }

    /// Found in two halves, the block maxima are the whole row's, block for block, whatever the
    /// number of blocks (odd, even, a short last one, a single one).
    #[test]
    fn maxima_in_halves_are_the_rows() {
        for len in [1, 31, 32, 33, 95, 96, 97, 5000, SIDE_BY_SIDE_FROM + 7] {
            let r = row(len, len as u64);
            let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
            let whole = bits(block_maxima(&r));
            assert_eq!(bits(maxima_side_by_side(&r, 2)), whole, "len {len}");
            assert_eq!(bits(maxima_side_by_side(&r, 1)), whole, "len {len}");
        }
    }

    /// Side by side or one after another, the passes give the bits each gives alone.
    #[test]
    fn threads_change_no_bit() {
        let logits = row(SIDE_BY_SIDE_FROM * 3, 11);
        let logits: Vec<f32> = logits
            .iter()
            .map(|x| if x.is_nan() { -3.0 } else { *x })
            .collect();
        let penalised: Vec<f32> = logits.iter().map(|x| x * 0.9 - 0.25).collect();
        let s = SamplerSettings::default();
        let bits = |x: f32| x.to_bits();
        for pen in [None, Some(penalised.as_slice())] {
            for t in [1.0, 0.7] {
                let run = |threads| {
                    with_small_rows_threads(threads, || RowPasses::run(&logits, pen, t, &s, 10))
                };
                let (one, two) = (run(1), run(2));
                let (lse, entropy) = lse_entropy(&logits);
                let base = pen.unwrap_or(&logits);
                for p in [&one, &two] {
                    assert_eq!((bits(p.lse), bits(p.entropy)), (bits(lse), bits(entropy)));
                    assert_eq!(p.lse_pen.map(bits), pen.map(|b| bits(lse_scaled(b, 1.0))));
                    let lse_t = (t != 1.0).then(|| bits(lse_scaled(base, t)));
                    assert_eq!(p.lse_t.map(bits), lse_t);
                    assert_eq!(p.sorted, top_n(base, s.top_k));
                }
            }
        }
    }

    /// `run_beside` runs its side job exactly once, on one thread or two, on a row long enough for
    /// two threads and on a short one, and its passes are `run`'s to the bit, with the row's block
    /// maxima given (as a pass finds them) or found.
    #[test]
    fn a_side_job_runs_once_and_changes_no_bit() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let s = SamplerSettings::default();
        for len in [SIDE_BY_SIDE_FROM * 2, 100] {
            let logits: Vec<f32> = row(len, 5)
                .iter()
                .map(|x| if x.is_nan() { -1.0 } else { *x })
                .collect();
            for threads in [1, 2] {
                let runs = AtomicUsize::new(0);
                let side = || {
                    runs.fetch_add(1, SeqCst);
                };
                let maxima = block_maxima(&logits);
                let (plain, beside, known) = with_small_rows_threads(threads, || {
                    (
                        RowPasses::run(&logits, None, 0.8, &s, 10),
                        RowPasses::run_beside((&logits, None), None, 0.8, &s, 10, &side),
                        RowPasses::run_beside((&logits, Some(&maxima)), None, 0.8, &s, 10, &|| {}),
                    )
                });
                assert_eq!(runs.load(SeqCst), 1, "{threads} threads, {len} logits");
                let bits = |p: &RowPasses| {
                    (
                        p.lse.to_bits(),
                        p.entropy.to_bits(),
                        p.lse_t.map(f32::to_bits),
                    )
                };
                assert_eq!(bits(&beside), bits(&plain));
                assert_eq!(beside.sorted, plain.sorted);
                assert_eq!(bits(&known), bits(&plain));
                assert_eq!(known.sorted, plain.sorted);
            }
        }
    }

    /// Read off the best prefix, ranks are `ranks_of`'s: ties (values on a 1/256 grid, infinities,
    /// 0 and -0) share one; a NaN leaves it to `ranks_of`.
    #[test]
    fn prefix_ranks_are_ranks_of() {
        use crate::engine::sampler::best::ranks_of;
        for (len, seed) in [(9, 3), (100, 5), (5000, 7)] {
            let r: Vec<f32> = row(len, seed)
                .iter()
                .enumerate()
                .map(|(i, x)| match i % 31 {
                    _ if x.is_nan() => 0.0,
                    3 => f32::INFINITY,
                    4 => -0.0,
                    _ => *x,
                })
                .collect();
            for n in [1, 2, 10, 40, len] {
                let best = top_n(&r, n);
                assert_eq!(
                    prefix_ranks(&r, &best),
                    Some(ranks_of(&r, &best)),
                    "len {len}, n {n}"
                );
            }
            let mut with_nan = r.clone();
            with_nan[1] = f32::NAN;
            let best = top_n(&with_nan, 5);
            let ranks =
                prefix_ranks(&with_nan, &best).unwrap_or_else(|| ranks_of(&with_nan, &best));
            assert_eq!(ranks, ranks_of(&with_nan, &best));
            assert_eq!(
                prefix_ranks(&with_nan, &[1, 0]),
                None,
                "a NaN in the prefix"
            );
        }
    }
}
