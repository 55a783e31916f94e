//! A/B: model B beside model A at the same step. Re-quantising at load (the report of which types the
//! matrices got, the fallback for rows that are not a multiple of 256), model B's own KV cache against a
//! fresh read, and `nexttoken compare --requant-b / --model-b` on the real model: B = A gives zero
//! divergence everywhere, 2-bit weights diverge far more than f32 ones, and a model with another
//! vocabulary is refused with the reason.

use crate::support;

use nexttoken::engine::forward::linear::MatmulPath;
use nexttoken::engine::forward::model::Model;
use nexttoken::engine::gguf::GgufFile;
use nexttoken::engine::requant::Requant;
use nexttoken::engine::twin::{Twin, TwinSpec};
use serde_json::Value;
use std::process::Command;

fn compare(args: &[&str]) -> (Vec<Value>, String, bool) {
    let o = Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .arg("compare")
        .args(args)
        .env("NEXTTOKEN_MODEL", support::real_model())
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (
        lines,
        String::from_utf8_lossy(&o.stderr).into(),
        o.status.success(),
    )
}

/// The tiny model's rows are 32 wide: the K-quants fall back to Q4_0 on every matrix, and say so.
#[test]
fn requantising_reports_the_types_and_the_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let path = support::tiny::write(dir.path());
    let mut g = GgufFile::open(&path).unwrap();
    let (_, report) = Model::load_requantized(&mut g, MatmulPath::Fast, Requant::Q2K).unwrap();
    let matrices = 7 * support::tiny::N_LAYER + 1;
    assert_eq!(report.counts.get("q4_0"), Some(&matrices), "{report:?}");
    assert!(report
        .summary(Requant::Q2K)
        .contains("(rows not a multiple of 256)"));
    let mut g = GgufFile::open(&path).unwrap();
    let (_, report) = Model::load_requantized(&mut g, MatmulPath::Fast, Requant::Exact).unwrap();
    assert_eq!(
        report.summary(Requant::Exact),
        format!("f32 on {matrices} matrices")
    );
}

/// Model B keeps its own cache: reading on from an earlier ask, or back after a rewind, gives the bits
/// of a fresh model B reading the whole path at once.
#[test]
fn model_b_reads_on_from_its_cache_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = support::tiny::write(dir.path());
    let spec = TwinSpec::Requant(Requant::Q8_0);
    let ids: Vec<u32> = vec![5, 17, 200, 33, 90, 256, 12, 40];
    let mut b = Twin::load(&path, &spec, MatmulPath::Fast).unwrap();
    b.logits_after(&ids[..3]).unwrap();
    b.logits_after(&ids[..6]).unwrap();
    let on = b.logits_after(&ids).unwrap().to_vec();
    let back = b.logits_after(&ids[..5]).unwrap().to_vec();
    let mut fresh = Twin::load(&path, &spec, MatmulPath::Fast).unwrap();
    assert_eq!(on, fresh.logits_after(&ids).unwrap());
    let mut fresh = Twin::load(&path, &spec, MatmulPath::Fast).unwrap();
    assert_eq!(back, fresh.logits_after(&ids[..5]).unwrap());
}

fn summary(lines: &[Value]) -> &Value {
    lines
        .last()
        .filter(|l| l["type"] == "summary")
        .expect("a summary line")
}

/// Step lines carry both top-k lists, the divergences and the running flip count; the summary's
/// counts are the steps'. Two-bit weights diverge from the file's far more than the same weights in
/// f32 do.
#[test]
fn compare_requant_b_counts_flips_and_divergence() {
    let args = |r: &'static str| {
        let a = [
            "--prompt",
            "The capital of France is",
            "--steps",
            "8",
            "--greedy",
            "--requant-b",
            r,
        ];
        compare(&a)
    };
    let (q2, err, ok) = args("q2_k");
    assert!(ok, "{err}");
    let steps: Vec<&Value> = q2.iter().filter(|l| l["type"] == "step").collect();
    assert_eq!(steps.len(), 8);
    for s in &steps {
        assert_eq!(s["a"]["top"].as_array().unwrap().len(), 5);
        assert_eq!(s["b"]["top"].as_array().unwrap().len(), 5);
        let same = s["a"]["top"][0]["id"] == s["b"]["top"][0]["id"];
        assert_eq!(s["same_top1"], same);
        assert!(s["js"].as_f64().unwrap() <= std::f64::consts::LN_2);
    }
    let flips = steps.iter().filter(|s| s["same_top1"] == false).count();
    let sum = summary(&q2);
    assert_eq!(sum["top1_flips"], flips);
    assert_eq!(steps.last().unwrap()["top1_flips"], flips);
    let mean: f64 = steps.iter().map(|s| s["js"].as_f64().unwrap()).sum::<f64>() / 8.0;
    assert!((sum["mean_js"].as_f64().unwrap() - mean).abs() < 1e-12);
    assert!(
        sum["b_detail"].as_str().unwrap().contains("q2_k on"),
        "{sum}"
    );
    let (exact, err, ok) = args("exact");
    assert!(ok, "{err}");
    let exact_js = summary(&exact)["mean_js"].as_f64().unwrap();
    eprintln!("mean JS: q2_k {mean:.4}, exact {exact_js:.5}");
    assert!(
        mean > 10.0 * exact_js,
        "q2_k {mean} against exact {exact_js}"
    );
}

/// Model B the same file as model A: the same numbers at every step.
#[test]
fn the_same_model_as_b_agrees_everywhere() {
    let model = support::real_model();
    let m = model.to_str().unwrap();
    let (lines, err, ok) = compare(&[
        "--prompt",
        "Once upon a time",
        "--steps",
        "6",
        "--model-b",
        m,
    ]);
    assert!(ok, "{err}");
    for s in lines.iter().filter(|l| l["type"] == "step") {
        // The logits are the same bits (KL exactly 0); JS's mixture leaves float64 round-off.
        assert_eq!(
            (s["kl_ab"].as_f64(), s["kl_ba"].as_f64()),
            (Some(0.0), Some(0.0)),
            "{s}"
        );
        assert!(s["js"].as_f64().unwrap() < 1e-12, "{s}");
        assert_eq!(s["a"], s["b"]);
    }
    assert_eq!(summary(&lines)["top1_flips"], 0);
}

#[test]
fn a_model_with_another_vocabulary_is_refused_with_the_reason() {
    let gemma = support::gemma_model();
    let g = gemma.to_str().unwrap();
    let (_, err, ok) = compare(&["--prompt", "hi", "--steps", "2", "--model-b", g]);
    assert!(!ok);
    assert!(
        err.contains("another vocabulary") && err.contains("--requant-b"),
        "{err}"
    );
    let (_, err, ok) = compare(&["--prompt", "hi", "--requant-b", "q5_k"]);
    assert!(!ok);
    assert!(err.contains("q8_0, q4_0, q3_k, q2_k, exact"), "{err}");
}
