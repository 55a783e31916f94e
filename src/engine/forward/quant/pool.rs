//! Threads for the fast kernels: a small persistent pool whose caller never waits for an idle worker.
//!
//! Decode runs ~210 small matmuls per token, so waking threads must cost about a microsecond: idle
//! workers spin briefly on an epoch counter before sleeping. On a shared machine a worker can be
//! descheduled at any moment; a barrier that waits for every worker (candle's pool, ggml's) then
//! stalls for a whole time slice. Here items are claimed from a shared counter and the caller runs
//! them too, so it only ever waits for items a worker has actually started.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Condvar, Mutex, OnceLock};

/// Spins before an idle worker sleeps: ~50 µs here (a `pause` is ~25 ns on Zen 4). Enough to
/// catch back-to-back matmuls (q, k, v; gate, up), short enough not to steal the core from
/// candle's own threads (attention, norms) that run between matmuls.
const SPINS: u32 = 2_000;

/// 0 until `set_threads` is called; then the thread count the fast kernels use.
static THREADS: AtomicUsize = AtomicUsize::new(0);
static POOL: OnceLock<Pool> = OnceLock::new();

/// Sets the number of threads for candle (its gemm and its worker pool) and for the fast kernels.
///
/// candle sizes its pools from `RAYON_NUM_THREADS` / `CANDLE_NUM_THREADS` when first used, and this
/// pool is sized on its first matmul; so call this at start-up. Later calls still bound the fast
/// kernels and candle's gemm (which re-reads the variable on each matmul) but cannot add threads.
pub fn set_threads(n: usize) {
    let n = n.max(1);
    // Edition 2021: `set_var` is safe; it races only with threads reading the environment, and this
    // runs at start-up, before the engine thread exists.
    std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    std::env::set_var("CANDLE_NUM_THREADS", n.to_string());
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global();
    THREADS.store(n, SeqCst);
}

/// Threads the fast kernels use: `set_threads`' value, else candle's default (all cores, or
/// `RAYON_NUM_THREADS`), found once and kept: finding it reads the environment and asks the system
/// for the cores this process may use, and every matmul asks (a library user who never called
/// `set_threads` had SmolLM2 steps of 10.5 ms against 1.7).
pub fn threads() -> usize {
    match THREADS.load(SeqCst) {
        0 => {
            let n = candle_core::utils::get_num_threads().max(1);
            // A `set_threads` meanwhile wins.
            match THREADS.compare_exchange(0, n, SeqCst, SeqCst) {
                Ok(_) => n,
                Err(set) => set,
            }
        }
        n => n,
    }
}

/// Runs `f(i)` for every `i in 0..n_items` on up to `threads` threads (at most `threads()`), the
/// caller included.
pub fn parallel_for(n_items: usize, threads: usize, f: impl Fn(usize) + Sync) {
    let threads = threads.min(self::threads()).min(n_items);
    if threads <= 1 {
        return (0..n_items).for_each(f);
    }
    let pool = POOL.get_or_init(|| Pool::start(threads - 1));
    let _one_job_at_a_time = pool.call.lock().unwrap_or_else(|e| e.into_inner());
    let job = Job {
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        n_items,
        helpers: AtomicUsize::new(threads - 1),
        panicked: AtomicBool::new(false),
        f: &f,
    };
    let s = pool.shared;
    s.job.store(&job as *const Job as usize, SeqCst);
    s.open.store(true, SeqCst);
    s.epoch.fetch_add(1, SeqCst);
    if s.sleepers.load(SeqCst) > 0 {
        let _guard = s.lock.lock().unwrap_or_else(|e| e.into_inner());
        s.wake.notify_all();
    }
    job.run();
    while job.done.load(SeqCst) < n_items {
        std::hint::spin_loop();
    }
    // Close the job, then wait for workers that entered it to leave: after this, none reads `job`.
    s.open.store(false, SeqCst);
    while s.active.load(SeqCst) > 0 {
        std::hint::spin_loop();
    }
    assert!(!job.panicked.load(SeqCst), "a fast-matmul worker panicked");
}

struct Job<'a> {
    next: AtomicUsize,
    done: AtomicUsize,
    n_items: usize,
    /// Workers still allowed to join (`threads() - 1` when the pool is larger).
    helpers: AtomicUsize,
    panicked: AtomicBool,
    f: &'a (dyn Fn(usize) + Sync),
}

impl Job<'_> {
    fn run(&self) {
        loop {
            let i = self.next.fetch_add(1, SeqCst);
            if i >= self.n_items {
                return;
            }
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.f)(i)));
            if ok.is_err() {
                self.panicked.store(true, SeqCst);
            }
            self.done.fetch_add(1, SeqCst);
        }
    }
}

struct Pool {
    shared: &'static Shared,
    call: Mutex<()>,
}

struct Shared {
    /// Bumped for each job: what idle workers watch.
    epoch: AtomicUsize,
    /// The job at `job` may be entered.
    open: AtomicBool,
    /// Address of the caller's `Job`, valid while `open` (and while a worker is counted in `active`).
    job: AtomicUsize,
    /// Workers inside the current job.
    active: AtomicUsize,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Pool {
    fn start(workers: usize) -> Pool {
        let shared: &'static Shared = Box::leak(Box::new(Shared {
            epoch: AtomicUsize::new(0),
            open: AtomicBool::new(false),
            job: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }));
        for w in 0..workers {
            std::thread::Builder::new()
                .name(format!("nexttoken-mm-{w}"))
                .spawn(move || shared.work())
                .expect("spawn a fast-matmul worker thread");
        }
        Pool {
            shared,
            call: Mutex::new(()),
        }
    }
}

impl Shared {
    fn work(&self) {
        let mut seen = self.epoch.load(SeqCst);
        loop {
            seen = self.wait_for_epoch_after(seen);
            // Register first, then check `open` (both SeqCst): either the caller sees us in `active`
            // and waits, or we see the job closed and never touch it.
            self.active.fetch_add(1, SeqCst);
            if self.open.load(SeqCst) {
                // SAFETY: `open` and our `active` count keep the caller inside `parallel_for`, so the
                // `Job` on its stack outlives this borrow (see the close-then-wait there).
                let job = unsafe { &*(self.job.load(SeqCst) as *const Job) };
                if job
                    .helpers
                    .fetch_update(SeqCst, SeqCst, |h| h.checked_sub(1))
                    .is_ok()
                {
                    job.run();
                }
            }
            self.active.fetch_sub(1, SeqCst);
        }
    }

    fn wait_for_epoch_after(&self, seen: usize) -> usize {
        for _ in 0..SPINS {
            let now = self.epoch.load(SeqCst);
            if now != seen {
                return now;
            }
            std::hint::spin_loop();
        }
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, SeqCst);
        // Checked under the lock after counting ourselves: the caller bumps `epoch` before reading
        // `sleepers`, so either we see the new epoch here or it sees us and notifies.
        while self.epoch.load(SeqCst) == seen {
            guard = self.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
        self.sleepers.fetch_sub(1, SeqCst);
        self.epoch.load(SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without `set_threads`, the default is found on the first ask and kept: an environment changed
    /// since is not read again (it was, on every matmul).
    #[test]
    fn the_default_thread_count_is_found_once() {
        let first = threads();
        let before = std::env::var_os("RAYON_NUM_THREADS");
        std::env::set_var("RAYON_NUM_THREADS", (first + 5).to_string());
        let again = threads();
        match before {
            Some(v) => std::env::set_var("RAYON_NUM_THREADS", v),
            None => std::env::remove_var("RAYON_NUM_THREADS"),
        }
        assert_eq!(again, first);
    }

    /// Every item runs exactly once, for many small jobs back to back (workers spinning, sleeping,
    /// joining late) and from several callers at once.
    #[test]
    fn every_item_runs_once() {
        let callers: Vec<_> = (0..3)
            .map(|caller| {
                std::thread::spawn(move || {
                    for round in 0..2000usize {
                        let n = (round * 7 + caller) % 50;
                        let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
                        parallel_for(n, threads(), |i| {
                            hits[i].fetch_add(1, SeqCst);
                        });
                        assert!(hits.iter().all(|h| h.load(SeqCst) == 1), "round {round}");
                        if round % 500 == 0 {
                            // let idle workers fall asleep, so the next job must wake them
                            std::thread::sleep(std::time::Duration::from_millis(5));
                        }
                    }
                })
            })
            .collect();
        for c in callers {
            c.join().unwrap();
        }
    }
}
