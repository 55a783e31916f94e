//! How many threads a decode step's matmuls use, decided by timing the steps themselves.
//!
//! A one-token matmul reads every weight once. Where one core already saturates memory bandwidth a
//! second thread gains nothing and a preempted helper can stall the step; where one core cannot (a
//! slower core, a faster memory system, AVX2-only kernels that are compute-bound) the second thread
//! pays. Which holds differs between machines of the same kind, and with the load on them, so a model
//! does not guess: it alternates one thread and all threads over its first decode steps, keeps the
//! faster (by median; all threads must win by `MARGIN`), and measures again every `RECHECK` steps.
//! The TUI runs the first trial at load, on passes of its own (`engine/machine.rs`), so the steps a
//! class watches do not alternate.
//! The threads change only who computes which output rows, never a bit of the result.

use std::cell::Cell;

/// Decode steps timed per candidate in a trial (alternating, so both see the same machine).
const TRIALS: usize = 8;
/// All threads are kept only when their median step is at most this fraction of one thread's.
const MARGIN: f64 = 0.97;
/// Steps run with the choice before the next trial.
const RECHECK: usize = 512;

thread_local! {
    /// Threads for small-row matmuls called from this thread (the engine thread running a forward), and
    /// for the sampler chain's whole-row passes (`sampler/passes.rs`, set by the session).
    static SMALL_ROWS: Cell<usize> = const { Cell::new(1) };
}

/// Threads for a matmul of few rows, or a sampler chain, on this thread (set by the running forward
/// pass and by the session around its chain; 1 otherwise).
pub fn small_rows_threads() -> usize {
    SMALL_ROWS.with(Cell::get)
}

/// Runs `f` with small-row matmuls on `threads` threads, restoring the previous count after.
pub fn with_small_rows_threads<T>(threads: usize, f: impl FnOnce() -> T) -> T {
    let before = SMALL_ROWS.with(|c| c.replace(threads.max(1)));
    let out = f();
    SMALL_ROWS.with(|c| c.set(before));
    out
}

/// The running decision for one model.
#[derive(Debug, Clone)]
pub struct DecodeThreads {
    all: usize,
    /// Step times (ms) of the current trial: one thread, all threads.
    one: Vec<f64>,
    many: Vec<f64>,
    chosen: usize,
    /// Steps left before the next trial (0: in a trial).
    until_trial: usize,
}

impl DecodeThreads {
    /// A decision among 1 and `all` threads; with one thread available there is nothing to decide.
    pub fn new(all: usize) -> Self {
        DecodeThreads {
            all: all.max(1),
            one: Vec::new(),
            many: Vec::new(),
            chosen: 1,
            until_trial: if all > 1 { 0 } else { usize::MAX },
        }
    }

    /// Threads for the next decode step.
    pub fn next(&self) -> usize {
        if self.until_trial > 0 {
            self.chosen
        } else if self.one.len() <= self.many.len() {
            1
        } else {
            self.all
        }
    }

    /// The decision in force (what the trials last chose).
    pub fn chosen(&self) -> usize {
        self.chosen
    }

    /// Whether the steps are in a trial now: the next ones alternate their thread counts.
    pub fn in_trial(&self) -> bool {
        self.until_trial == 0
    }

    /// Records that a decode step ran on `threads` threads in `ms`.
    pub fn record(&mut self, threads: usize, ms: f64) {
        if self.until_trial > 0 {
            self.until_trial = self.until_trial.saturating_sub(1);
            return;
        }
        match threads {
            1 => self.one.push(ms),
            t if t == self.all => self.many.push(ms),
            _ => return,
        }
        if self.one.len() >= TRIALS && self.many.len() >= TRIALS {
            let (one, many) = (median(&mut self.one), median(&mut self.many));
            self.chosen = if many <= one * MARGIN { self.all } else { 1 };
            self.one.clear();
            self.many.clear();
            self.until_trial = RECHECK;
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `steps` decode steps whose time depends on the thread count; returns the choices made.
    fn run(d: &mut DecodeThreads, steps: usize, ms: impl Fn(usize) -> f64) -> Vec<usize> {
        (0..steps)
            .map(|_| {
                let t = d.next();
                d.record(t, ms(t));
                d.chosen()
            })
            .collect()
    }

    #[test]
    fn keeps_one_thread_unless_all_threads_are_clearly_faster() {
        let mut d = DecodeThreads::new(2);
        let choices = run(&mut d, 2 * TRIALS, |t| if t == 1 { 6.0 } else { 5.9 });
        assert_eq!(
            *choices.last().unwrap(),
            1,
            "1.7% faster is within the margin"
        );
        let mut d = DecodeThreads::new(2);
        assert_eq!(
            run(&mut d, 2 * TRIALS, |t| if t == 1 { 6.0 } else { 4.5 }).last(),
            Some(&2)
        );
    }

    #[test]
    fn trials_alternate_and_the_choice_is_measured_again_later() {
        let mut d = DecodeThreads::new(4);
        let tried: Vec<usize> = (0..2 * TRIALS)
            .map(|_| {
                let t = d.next();
                d.record(t, if t == 1 { 9.0 } else { 5.0 });
                t
            })
            .collect();
        assert_eq!(tried.iter().filter(|&&t| t == 1).count(), TRIALS);
        assert_eq!(tried.iter().filter(|&&t| t == 4).count(), TRIALS);
        assert_eq!(d.chosen(), 4);
        // The machine changes: after RECHECK steps the next trial finds one thread faster.
        run(&mut d, RECHECK, |_| 5.0);
        assert_eq!(d.chosen(), 4, "no trial before RECHECK steps");
        let after = run(&mut d, 2 * TRIALS, |t| if t == 1 { 5.0 } else { 8.0 });
        assert_eq!(after.last(), Some(&1));
    }

    #[test]
    fn one_thread_has_nothing_to_decide() {
        let mut d = DecodeThreads::new(1);
        assert!(run(&mut d, 100, |_| 1.0).iter().all(|&t| t == 1));
        assert_eq!(d.next(), 1);
    }

    #[test]
    fn the_thread_count_is_scoped_to_the_call() {
        assert_eq!(small_rows_threads(), 1);
        let inner = with_small_rows_threads(3, small_rows_threads);
        assert_eq!((inner, small_rows_threads()), (3, 1));
    }
}

#[cfg(test)]
mod bits {
    use super::with_small_rows_threads;
    use crate::engine::forward::quant::{Isa, QMatrix};
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    /// A one-row matmul gives the same bits on one thread and on all of them (each output row is
    /// computed whole by one thread), so the decision can never change a distribution.
    #[test]
    fn one_row_gives_the_same_bits_on_any_thread_count() {
        let (n, k) = (512, 256);
        let w = Tensor::randn(0f32, 1.0, (n, k), &Device::Cpu).unwrap();
        for dtype in [GgmlDType::Q4_1, GgmlDType::Q8_0, GgmlDType::Q4K] {
            let q = QTensor::quantize(&w, dtype).unwrap();
            let m = QMatrix::from_qtensor(&q).unwrap().expect("a tiled format");
            let x: Vec<f32> = (0..k).map(|i| (i as f32 * 0.37).sin()).collect();
            let isa = Isa::best();
            let one = with_small_rows_threads(1, || m.matmul(&x, 1, isa));
            let all =
                with_small_rows_threads(crate::engine::forward::quant::threads().max(2), || {
                    m.matmul(&x, 1, isa)
                });
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&one), bits(&all), "{dtype:?}");
        }
    }
}
