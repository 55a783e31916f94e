//! Threads for the fast kernels: candle's persistent spinning worker pool, shared with candle's own ops.
//!
//! Waking a spinning pool costs about a microsecond, against tens for rayon or a scoped spawn: that
//! matters for decode, which runs ~210 small matmuls per token.

use std::sync::atomic::{AtomicUsize, Ordering};

/// 0 until `set_threads` is called: then use every thread of candle's pool.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Sets the number of threads for candle (its gemm and its worker pool) and for the fast kernels.
///
/// candle sizes its pools from `RAYON_NUM_THREADS` / `CANDLE_NUM_THREADS` when first used, so call
/// this at start-up, before the first tensor op; later calls still bound the fast kernels and candle's
/// gemm (which re-reads the variable on each matmul) but cannot grow or shrink candle's worker pool.
pub fn set_threads(n: usize) {
    let n = n.max(1);
    // Edition 2021: `set_var` is safe; it races only with threads reading the environment, and this
    // runs at start-up, before the engine thread exists.
    std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    std::env::set_var("CANDLE_NUM_THREADS", n.to_string());
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global();
    THREADS.store(n, Ordering::Relaxed);
}

/// Threads the fast kernels use: `set_threads`' value, else all of candle's pool (all cores by default).
pub fn threads() -> usize {
    let pool = candle_core::utils::barrier_pool().n_workers() + 1;
    match THREADS.load(Ordering::Relaxed) {
        0 => pool,
        n => n.min(pool),
    }
}

/// Runs `f(i)` for every `i in 0..n_items`, spread over `threads()` threads; items are taken
/// dynamically, in order, so a thread slowed by another process does not hold up the rest.
pub fn parallel_for(n_items: usize, f: impl Fn(usize) + Sync) {
    let threads = threads().min(n_items);
    if threads <= 1 {
        (0..n_items).for_each(f);
        return;
    }
    let pool = candle_core::utils::barrier_pool();
    let main = pool.n_workers(); // the calling thread's id; workers are 0..main
    let next = AtomicUsize::new(0);
    pool.execute(|tid| {
        if tid != main && tid + 1 >= threads {
            return;
        }
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n_items {
                break;
            }
            f(i);
        }
    });
}
