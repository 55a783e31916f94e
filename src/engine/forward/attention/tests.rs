//! The attention kernels against the portable loops, and a decode step split over threads.

use super::*;

/// A decode step deep enough to split its heads over the decode threads gives the bits (outputs
/// and captured probabilities) of the same step on one thread.
#[test]
fn a_decode_step_split_over_threads_keeps_its_bits() {
    use crate::engine::forward::quant::decode_plan::with_small_rows_threads;
    let (n_head, n_kv_head, hd, index_pos) = (9, 3, 64, 300);
    let heads = Heads {
        n_head,
        n_kv_head,
        head_dim: hd,
        window: None,
    };
    let macs = 2 * n_head * hd * (index_pos + 1);
    assert!((DECODE_MIN_MACS..PARALLEL_MIN_MACS).contains(&macs));
    let vals = |n: usize, seed: u32| -> Vec<f32> {
        (0..n)
            .map(|i| ((i as u32).wrapping_mul(2246822519) ^ seed) as f32 / u32::MAX as f32 - 0.5)
            .collect()
    };
    let kv_len = index_pos + 1;
    let (k, v) = (
        vals(kv_len * n_kv_head * hd, 1),
        vals(kv_len * n_kv_head * hd, 2),
    );
    let kv = KvView::position_major(&k, &v, n_kv_head, hd);
    let q = vals(n_head * hd, 3);
    let step = |threads: usize| {
        let mut probs = Vec::new();
        let y =
            with_small_rows_threads(threads, || attend(&q, &kv, heads, index_pos, 1, &mut probs));
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        (bits(&y), bits(&probs))
    };
    let one = step(1);
    assert_eq!(one.1.len(), n_head * kv_len);
    assert_eq!(step(2), one);
}

/// Every kernel this CPU runs (AVX2, AVX-512) gives the portable loops' bits: outputs and captured
/// probabilities, for a prefill block, a decode row deep in the cache, head sizes with a tail (of
/// the 8-lane dots, of the 32- and 64-wide sums) and a sliding window; a kv group's three heads go
/// through the kernels that take three queries at once. A captured decode row (its scores normalised
/// where they are captured) gives the same bits, zeros before its window included.
#[test]
fn the_cpus_arithmetic_gives_the_portable_bits() {
    let vals = |n: usize, seed: u32| -> Vec<f32> {
        (0..n)
            .map(|i| ((i as u32).wrapping_mul(2654435761) ^ seed) as f32 / u32::MAX as f32 - 0.5)
            .collect()
    };
    let cases = [
        (64, 16, 0, None),
        (64, 1, 700, None),
        (24, 5, 37, None),
        (64, 16, 40, Some(9)),
        (40, 7, 3, None),
        (96, 3, 10, None),
        (64, 1, 40, Some(9)),
    ];
    for (hd, seq, index_pos, window) in cases {
        let heads = Heads {
            n_head: 6,
            n_kv_head: 2,
            head_dim: hd,
            window,
        };
        let kv_len = index_pos + seq;
        let (k, v) = (vals(kv_len * 2 * hd, 3), vals(kv_len * 2 * hd, 4));
        let kv = KvView::position_major(&k, &v, 2, hd);
        let q = vals(seq * 6 * hd, 5);
        let job = Job {
            q: &q,
            kv: &kv,
            heads,
            index_pos,
            cap_from: 0,
            scale: 0.125,
        };
        let portable = job.rows(Fused, 0..seq, 0..6, None);
        let mut kernels = vec![("best", job.run(0..seq, 0..6, None))];
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(avx2) = x86::Avx2::detect() {
                // SAFETY: `detect` found AVX2 and FMA.
                kernels.push(("avx2", unsafe { job.run_avx2(avx2, 0..seq, 0..6, None) }));
            }
            if let Some(avx512) = x86_512::Avx512::detect() {
                // SAFETY: `detect` found AVX-512F, AVX2 and FMA.
                kernels.push(("avx512", unsafe {
                    job.run_avx512(avx512, 0..seq, 0..6, None)
                }));
            }
        }
        if seq == 1 {
            // A captured decode row normalises its scores in their place in the captured rows.
            let mut captured = vec![f32::NAN; 3];
            let y = attend(&q, &kv, heads, index_pos, 1, &mut captured);
            assert!(
                captured[..3].iter().all(|x| x.is_nan()),
                "appended, not over"
            );
            let probs = captured.split_off(3);
            kernels.push(("in place", BlockOut { y, probs }));
        }
        let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        for (name, out) in kernels {
            let at = format!("{name}, hd {hd} seq {seq}");
            assert_eq!(bits(&out.y), bits(&portable.y), "outputs, {at}");
            assert_eq!(
                bits(&out.probs),
                bits(&portable.probs),
                "probabilities, {at}"
            );
        }
    }
}

/// An `f16` cache gives, on every kernel this CPU runs, the bits of an `f32` cache holding its
/// values (each key and value rounded to `f16`): the rounding on the way in is the only difference
/// between the two. Prefill blocks, decode rows deep in the cache (split over two threads, their
/// scores captured in place), head sizes with tails, a sliding window, and kv groups of one, two
/// and three heads on a thread (the weighted sums' one-, two- and three-query kernels).
#[test]
fn an_f16_cache_gives_the_bits_of_its_values_held_in_f32() {
    use crate::engine::forward::kv_cache::KvElem;
    use crate::engine::forward::quant::decode_plan::with_small_rows_threads;
    use half::f16;
    let vals = |n: usize, seed: u32| -> Vec<f32> {
        (0..n)
            .map(|i| {
                ((i as u32).wrapping_mul(2654435761) ^ seed) as f32 / u32::MAX as f32 * 6.0 - 3.0
            })
            .collect()
    };
    let cases = [
        (64, 16, 0, None, 3),
        (64, 1, 700, None, 3),
        (64, 1, 300, None, 2),
        (64, 1, 300, None, 1),
        (24, 5, 37, None, 3),
        (64, 16, 40, Some(9), 3),
        (256, 1, 200, None, 4),
        (40, 7, 3, None, 3),
    ];
    for (hd, seq, index_pos, window, n_rep) in cases {
        let heads = Heads {
            n_head: 2 * n_rep,
            n_kv_head: 2,
            head_dim: hd,
            window,
        };
        let kv_len = index_pos + seq;
        let (k, v) = (vals(kv_len * 2 * hd, 3), vals(kv_len * 2 * hd, 4));
        let (k16, v16): (Vec<f16>, Vec<f16>) = (
            k.iter().map(|&x| f16::narrow(x)).collect(),
            v.iter().map(|&x| f16::narrow(x)).collect(),
        );
        let (k32, v32): (Vec<f32>, Vec<f32>) = (
            k16.iter().map(|x| x.widen()).collect(),
            v16.iter().map(|x| x.widen()).collect(),
        );
        assert_ne!(k32, k, "the keys are rounded");
        let half = KvView::position_major(&k16, &v16, 2, hd);
        let full = KvView::position_major(&k32, &v32, 2, hd);
        let q = vals(seq * heads.n_head * hd, 5);
        let bits = |x: &[f32]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        for threads in [1, 2] {
            let run = |kv: &dyn Fn(&mut Vec<f32>) -> Vec<f32>| {
                let mut probs = Vec::new();
                let y = with_small_rows_threads(threads, || kv(&mut probs));
                (bits(&y), bits(&probs))
            };
            let a = run(&|p| attend(&q, &half, heads, index_pos, seq.min(3), p));
            let b = run(&|p| attend(&q, &full, heads, index_pos, seq.min(3), p));
            assert_eq!(
                a, b,
                "hd {hd} seq {seq} at {index_pos}, {n_rep} a group, {threads} threads"
            );
        }
    }
}
