//! The real model against the exact model (`tests/reference/exact/`: the same GGUF weights, every
//! activation in float64, no 8-bit rounding; provenance in `tests/reference/README.md`).
//!
//! An 8-bit engine cannot match the exact model bit for bit: rounding every quantised matmul's input to
//! 8 bits moves each probability by up to a few hundredths. The reference README's yardstick is 0.03 at
//! the first position. Along the teacher-forced walk single positions are noisy: 8-bit engines that
//! differ only in how they round one f16 scale land 0.07 to 0.13 from the exact model at their worst
//! position over 295 positions (`docs/NUMERICS.md`), while their averages agree. So the walk is held to
//! the yardstick on average, and its worst step to just above that spread.

use crate::support;

use nexttoken::engine::forward::kv_cache::KvPrecision;
use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::session::{Choice, Session, SessionOptions};
use nexttoken::protocol::SamplerSettings;

/// The README's tolerance at the first position.
const FIRST_TOL: f32 = 0.03;
/// With an `f16` cache, every key and value rounded once more: the README's spread between two 8-bit
/// engines (0.045). Measured: P2's first position 0.035 (0.0285 with the `f32` cache; llama.cpp, whose
/// cache is `f16`, 0.023), P1 0.003, P3 0.013; the walks' means 0.013, 0.025, 0.006.
const FIRST_TOL_F16: f32 = 0.045;
/// Along the walk: the mean over steps of each step's largest gap, and the largest gap of any step.
const WALK_MEAN_TOL: f32 = 0.03;
const WALK_MAX_TOL: f32 = 0.15;

fn session(kv_precision: KvPrecision) -> Session {
    let settings = SamplerSettings {
        greedy: true,
        ..SamplerSettings::default()
    };
    let path = support::real_model();
    load_session(
        &path,
        &LoadOptions::default(),
        settings,
        SessionOptions {
            kv_precision,
            ..SessionOptions::default()
        },
        &mut |_| {},
    )
    .unwrap()
    .0
}

/// Largest |p_ours - p_exact| over a list of `[id, text, p]`.
fn max_diff(s: &mut Session, top: &serde_json::Value) -> f32 {
    top.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let id = e[0].as_u64().unwrap() as u32;
            let want = e[2].as_f64().unwrap() as f32;
            (s.candidate(id).unwrap().prob - want).abs()
        })
        .fold(0.0, f32::max)
}

/// The walk's distances from the exact model: the first position's, and each step's.
fn walk(name: &str, kv: KvPrecision) -> (f32, Vec<f32>) {
    let r = support::reference(&format!("exact/{name}"));
    let mut s = session(kv);
    s.prefill_ids(&support::ids(&r["prompt_ids"])).unwrap();
    let first = max_diff(&mut s, &r["first_top20"]);
    // Teacher forcing along llama.cpp's greedy path, as the reference did.
    let steps = r["per_step_top5"].as_array().unwrap();
    let mut walk = Vec::with_capacity(steps.len());
    for st in steps {
        walk.push(max_diff(&mut s, &st["top5"]));
        s.step(Choice::Force(st["forced_id"].as_u64().unwrap() as u32))
            .unwrap();
    }
    (first, walk)
}

fn check(name: &str) {
    check_with(name, KvPrecision::F32);
}

/// The walk's distances, once each is held to its tolerance.
fn check_with(name: &str, kv: KvPrecision) -> Vec<f32> {
    let (first, walk) = walk(name, kv);
    let worst = walk.iter().cloned().fold(0.0, f32::max);
    let mean = walk.iter().sum::<f32>() / walk.len() as f32;
    eprintln!("{name} ({kv:?} cache): first position max |dp| over the exact top-20 {first:.4}");
    eprintln!("{name}: walk max |dp| over the exact top-5, per step {walk:.3?}; mean {mean:.4}");
    let first_tol = match kv {
        KvPrecision::F32 => FIRST_TOL,
        KvPrecision::F16 => FIRST_TOL_F16,
    };
    assert!(
        first <= first_tol,
        "{name}: {first} from the exact model at the first position"
    );
    assert!(
        mean <= WALK_MEAN_TOL,
        "{name}: {mean} from the exact model on average"
    );
    assert!(
        worst <= WALK_MAX_TOL,
        "{name}: {worst} from the exact model at one step"
    );
    walk
}

#[test]
fn p1_capital_of_france() {
    check("P1");
}

#[test]
fn p2_once_upon_a_time() {
    check("P2");
}

#[test]
fn p3_counting() {
    check("P3");
}

/// An `f16` cache (one more rounding of every key and value, as llama.cpp's cache does) stays within
/// the same distances of the exact model as the `f32` cache, on every reference prompt; its distance
/// is printed beside the `f32` cache's.
#[test]
fn an_f16_cache_stays_as_close_to_the_exact_model() {
    for name in ["P1", "P2", "P3"] {
        let (f16, f32) = (
            check_with(name, KvPrecision::F16),
            walk(name, KvPrecision::F32).1,
        );
        let mean = |w: &[f32]| w.iter().sum::<f32>() / w.len() as f32;
        eprintln!(
            "{name}: mean walk |dp| f16 cache {:.4}, f32 cache {:.4}",
            mean(&f16),
            mean(&f32)
        );
        assert_ne!(f16, f32, "{name}: the f16 cache changed some probability");
    }
}
