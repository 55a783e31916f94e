//! How a decode step's matmuls run, decided by timing the steps themselves: on one thread or all, and
//! whether the kernels ask for their weights ahead of reading them.
//!
//! A one-token matmul reads every weight once. Where one core already saturates memory bandwidth a
//! second thread gains nothing and a preempted helper can stall the step; where one core cannot (a
//! slower core, a faster memory system, AVX2-only kernels that are compute-bound) the second thread
//! pays. The kernels' software prefetch (`avx2::PREFETCH_AHEAD`) likewise: on Zen 5 it took a fifth
//! off a one-row matmul, where the hardware prefetcher alone left the core waiting; on Zen 4 the same
//! requests cost a decode step 9-18% (SmolLM2 `--isa avx2`: 4.1-4.2 against 3.8-3.9 ms on two threads,
//! 7.0 against 5.7 on one; Gemma 3 10.9 against 9.4; AVX-512 3.6 against 3.2), and a prefill reads
//! alike either way. Which holds differs between machines, and with the load on them, so a model does
//! not guess: over its first decode steps it takes each plan in turn, a few steps in a row (one thread
//! or all, prefetch on or off), keeps the fastest by median (all threads must win by `MARGIN` over
//! one, whose helper a busy machine can stall), and measures again every `RECHECK` steps. The TUI runs the first trial at load,
//! on passes of its own (`engine/machine.rs`), so the steps a class watches do not alternate.
//! A plan changes only who computes which output rows and what the CPU is asked to fetch early, never
//! a bit of the result.

use std::cell::Cell;

/// Decode steps timed per plan in a trial (in turn, so every plan sees the same machine).
const TRIALS: usize = 8;
/// All threads are kept only when their median step is at most this fraction of one thread's.
const MARGIN: f64 = 0.97;
/// Steps run with the choice before the next trial.
const RECHECK: usize = 512;
/// Steps in a row a trial gives one plan before the next, the first of them untimed: a step right
/// after a switch of plan does not run as the plan does in a row. On an Intel VM whose L3 held the
/// model, plans swapped step by step timed the prefetch 8% faster while 128 steps in a row ran 1.6x
/// faster with it (280 against 170 tok/s), and a trial in noise could drop it.
const RUN: usize = 4;

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

/// How one decode step runs its matmuls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Plan {
    /// Threads for its small-row matmuls: 1, or all.
    pub threads: usize,
    /// Whether the kernels ask for the weights ahead of the block they read (`prefetch::weights_ahead`).
    pub prefetch: bool,
}

/// The running decision for one model.
#[derive(Debug, Clone)]
pub struct DecodePlan {
    /// The plans a trial times, in the order it takes them.
    plans: Vec<Plan>,
    /// Step times (ms) of the current trial, one list per plan.
    times: Vec<Vec<f64>>,
    chosen: Plan,
    /// Steps left before the next trial (0: in a trial).
    until_trial: usize,
    /// Steps taken in the current trial.
    trial_step: usize,
}

impl DecodePlan {
    /// A decision among one thread and `all`, each with the prefetch on and off; until a trial has
    /// chosen, one thread with the prefetch on.
    pub fn new(all: usize) -> Self {
        let all = all.max(1);
        let threads: &[usize] = if all > 1 { &[1, all] } else { &[1] };
        let plans: Vec<Plan> = [true, false]
            .iter()
            .flat_map(|&prefetch| {
                threads
                    .iter()
                    .map(move |&threads| Plan { threads, prefetch })
            })
            .collect();
        DecodePlan {
            times: vec![Vec::new(); plans.len()],
            plans,
            chosen: Plan {
                threads: 1,
                prefetch: true,
            },
            until_trial: 0,
            trial_step: 0,
        }
    }

    /// The plan for a model of this one's shapes (an early exit of it, or it re-quantised: a
    /// speculative draft): this plan's choice, and its own trial `RECHECK` steps on, where a trial has
    /// chosen; else a new plan. The draft's first rounds then need not each take the losing plans in
    /// turn (a `q8_0` draft's first rounds ran 38-51 ms against 32 once settled).
    pub fn for_same_shapes(&self) -> DecodePlan {
        let all = self.plans.iter().map(|p| p.threads).max().unwrap_or(1);
        let mut plan = DecodePlan::new(all);
        if !self.in_trial() {
            plan.chosen = self.chosen;
            plan.until_trial = RECHECK;
        }
        plan
    }

    /// Steps a whole trial takes at most: every plan in runs of `RUN` until each has `TRIALS` timings.
    #[cfg(test)]
    fn trial_len(&self) -> usize {
        self.plans.len() * RUN * TRIALS.div_ceil(RUN - 1)
    }

    /// The plan for the next decode step: the chosen one, or in a trial each plan for `RUN` steps in
    /// turn.
    pub fn next(&self) -> Plan {
        if self.until_trial > 0 {
            return self.chosen;
        }
        self.plans[(self.trial_step / RUN) % self.plans.len()]
    }

    /// The decision in force (what the trials last chose).
    pub fn chosen(&self) -> Plan {
        self.chosen
    }

    /// Whether the steps are in a trial now: the next ones take each plan in turn.
    pub fn in_trial(&self) -> bool {
        self.until_trial == 0
    }

    /// Records that a decode step ran on `plan` in `ms`.
    pub fn record(&mut self, plan: Plan, ms: f64) {
        if self.until_trial > 0 {
            self.until_trial = self.until_trial.saturating_sub(1);
            return;
        }
        let Some(i) = self.plans.iter().position(|p| *p == plan) else {
            return;
        };
        let first_of_run = self.trial_step.is_multiple_of(RUN);
        self.trial_step += 1;
        if first_of_run {
            return;
        }
        self.times[i].push(ms);
        if self.times.iter().all(|t| t.len() >= TRIALS) {
            let medians: Vec<f64> = self.times.iter_mut().map(|t| median(t)).collect();
            self.chosen = self.decide(&medians);
            self.times.iter_mut().for_each(Vec::clear);
            self.until_trial = RECHECK;
            self.trial_step = 0;
        }
    }

    /// The fastest plan by median, where all threads must beat the best single-thread plan by `MARGIN`.
    fn decide(&self, medians: &[f64]) -> Plan {
        let best = |threads: usize| {
            (0..self.plans.len())
                .filter(|&i| self.plans[i].threads == threads)
                .min_by(|&a, &b| medians[a].total_cmp(&medians[b]))
        };
        let one = best(1).expect("one thread is always a plan");
        let all = self.plans.iter().map(|p| p.threads).max().unwrap_or(1);
        match best(all) {
            Some(many) if all > 1 && medians[many] <= medians[one] * MARGIN => self.plans[many],
            _ => self.plans[one],
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

    /// Feeds `steps` decode steps whose time depends on the plan; returns the choices made.
    fn run(d: &mut DecodePlan, steps: usize, mut ms: impl FnMut(Plan) -> f64) -> Vec<Plan> {
        (0..steps)
            .map(|_| {
                let p = d.next();
                d.record(p, ms(p));
                d.chosen()
            })
            .collect()
    }

    fn plan(threads: usize, prefetch: bool) -> Plan {
        Plan { threads, prefetch }
    }

    #[test]
    fn keeps_one_thread_unless_all_threads_are_clearly_faster() {
        let mut d = DecodePlan::new(2);
        let by_threads = |p: Plan| if p.threads == 1 { 6.0 } else { 5.9 };
        let n = d.trial_len();
        let choices = run(&mut d, n, by_threads);
        assert_eq!(
            choices.last().unwrap().threads,
            1,
            "1.7% faster is within the margin"
        );
        let mut d = DecodePlan::new(2);
        let choices = run(&mut d, n, |p| if p.threads == 1 { 6.0 } else { 4.5 });
        assert_eq!(choices.last().unwrap().threads, 2);
    }

    /// The prefetch is kept or dropped by the timings alone, on one thread and on all.
    #[test]
    fn the_prefetch_is_dropped_where_the_steps_run_faster_without_it() {
        for all in [1, 2] {
            let mut d = DecodePlan::new(all);
            let n = d.trial_len();
            let choices = run(&mut d, n, |p| if p.prefetch { 4.2 } else { 3.8 });
            assert_eq!(*choices.last().unwrap(), plan(1, false), "{all} thread(s)");
            let mut d = DecodePlan::new(all);
            let choices = run(&mut d, n, |p| if p.prefetch { 4.7 } else { 5.9 });
            assert_eq!(*choices.last().unwrap(), plan(1, true), "{all} thread(s)");
        }
        let mut d = DecodePlan::new(2);
        let both = |p: Plan| match (p.threads, p.prefetch) {
            (1, true) => 7.0,
            (1, false) => 5.7,
            (_, true) => 4.2,
            (_, false) => 3.8,
        };
        let n = d.trial_len();
        assert_eq!(*run(&mut d, n, both).last().unwrap(), plan(2, false));
    }

    #[test]
    fn trials_take_each_plan_in_turn_and_the_choice_is_measured_again_later() {
        let mut d = DecodePlan::new(4);
        let n = d.trial_len();
        let tried: Vec<Plan> = (0..n)
            .map(|_| {
                let p = d.next();
                d.record(p, if p.threads == 1 { 9.0 } else { 5.0 });
                p
            })
            .collect();
        for p in [plan(1, true), plan(4, true), plan(1, false), plan(4, false)] {
            let steps = tried.iter().filter(|&&t| t == p).count();
            assert!(steps >= TRIALS * RUN / (RUN - 1), "{p:?}: {steps}");
        }
        // In turn, in runs: each `RUN` steps in a row take one plan, and the next run the next plan
        // (the last run ends early, when its plan has its timings).
        for (i, c) in tried[..n - RUN].chunks(RUN).enumerate() {
            assert!(c.iter().all(|&p| p == d.plans[i % 4]), "run {i}: {c:?}");
        }
        // The first step of each run is not timed: a step that ran slow only because the plan had
        // just changed decides nothing.
        let mut d = DecodePlan::new(2);
        run(&mut d, RUN, |_| 1.0);
        assert_eq!(d.times[0].len(), RUN - 1);
        assert!(d.times[1].is_empty());
        let mut d = DecodePlan::new(4);
        run(&mut d, n, |p| if p.threads == 1 { 9.0 } else { 5.0 });
        assert_eq!(d.chosen().threads, 4);
        // The machine changes: after RECHECK steps the next trial finds one thread faster.
        run(&mut d, RECHECK, |_| 5.0);
        assert_eq!(d.chosen().threads, 4, "no trial before RECHECK steps");
        let after = run(&mut d, n, |p| if p.threads == 1 { 5.0 } else { 8.0 });
        assert_eq!(after.last().unwrap().threads, 1);
    }

    #[test]
    fn a_model_of_the_same_shapes_starts_from_the_choice_made() {
        let mut d = DecodePlan::new(2);
        assert!(
            d.for_same_shapes().in_trial(),
            "nothing chosen yet: a trial of its own"
        );
        // All threads with the prefetch off win this trial.
        let steps = d.trial_len();
        run(&mut d, steps, |p| match (p.threads, p.prefetch) {
            (2, false) => 1.0,
            _ => 3.0,
        });
        assert!(!d.in_trial());
        let e = d.for_same_shapes();
        assert!(!e.in_trial());
        assert_eq!(e.next(), plan(2, false));
        assert_eq!(e.chosen(), d.chosen());
    }

    #[test]
    fn one_thread_decides_only_the_prefetch() {
        let mut d = DecodePlan::new(1);
        assert!(run(&mut d, 100, |_| 1.0).iter().all(|p| p.threads == 1));
        assert_eq!(d.next().threads, 1);
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
    use crate::engine::forward::prefetch::with_weights_ahead;
    use crate::engine::forward::quant::{Isa, QMatrix};
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    /// A one-row matmul gives the same bits on one thread and on all of them (each output row is
    /// computed whole by one thread), and with the weight prefetch on or off, so the plan can never
    /// change a distribution.
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
            // Nor does the weight prefetch, on any ISA this CPU has.
            for isa in Isa::all() {
                let on = with_weights_ahead(true, || m.matmul(&x, 1, isa));
                let off = with_weights_ahead(false, || m.matmul(&x, 1, isa));
                assert_eq!(bits(&on), bits(&off), "{dtype:?} {isa:?}");
            }
        }
    }
}
