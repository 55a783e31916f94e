//! The `trace` front end on the real model, run as the real binary.

use crate::support;

use serde_json::Value;
use std::process::Command;

fn trace(args: &[&str]) -> (Vec<Value>, String, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .arg("trace")
        .args(args)
        .env("NEXTTOKEN_MODEL", support::real_model())
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    (
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

#[test]
fn greedy_trace_has_a_prefill_line_and_one_line_per_step() {
    let (lines, err, ok) = trace(&[
        "--prompt",
        "The capital of France is",
        "--steps",
        "8",
        "--greedy",
    ]);
    assert!(ok, "{err}");
    assert_eq!(lines.len(), 9);
    assert_eq!(lines[0]["type"], "prefill");
    assert_eq!(lines[0]["tokens"], 5);
    let first = &lines[1];
    assert_eq!(first["type"], "step");
    assert_eq!(first["top_k"][0]["text"], " Paris");
    let p = first["top_k"][0]["prob"].as_f64().unwrap();
    assert!((p - 0.78).abs() < 0.03, "p(Paris) = {p}");
    assert_eq!(first["token"]["text"], " Paris");
    for (i, l) in lines[1..].iter().enumerate() {
        assert_eq!(l["step"], i);
        assert_eq!(l["tokens_fed"], 1);
        assert_eq!(l["kv_len"], 6 + i);
        assert_eq!(l["forward_passes"], 2 + i);
        assert!(l["draw"].is_null());
        assert_eq!(l["rank"], 0, "greedy always takes rank 0");
    }
}

#[test]
fn forcing_text_marks_it_and_shows_the_surprise() {
    let (lines, err, ok) = trace(&[
        "--prompt",
        "The capital of France is",
        "--steps",
        "3",
        "--greedy",
        "--force",
        "0: Rome",
    ]);
    assert!(ok, "{err}");
    let s0 = &lines[1];
    assert_eq!(s0["token"]["text"], " Rome");
    assert_eq!(s0["forced"], true);
    assert!(s0["prob"].as_f64().unwrap() < 0.05);
    assert!(s0["rank"].as_u64().unwrap() > 0);
    assert_eq!(lines[2]["forced"], false);
}

#[test]
fn attention_mean_rows_are_distributions_over_every_earlier_position() {
    let (lines, err, ok) = trace(&[
        "--prompt",
        "The capital of France is",
        "--steps",
        "2",
        "--greedy",
        "--attention",
        "mean",
    ]);
    assert!(ok, "{err}");
    let a = &lines[2]["attention"];
    assert_eq!(a["query_position"], 6);
    let layers = a["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 30);
    for l in layers {
        let row: Vec<f64> = l
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(row.len(), 7);
        assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-4);
    }
}

#[test]
fn without_the_kv_cache_each_step_rereads_the_sequence() {
    let (lines, err, ok) = trace(&[
        "--prompt",
        "The capital of France is",
        "--steps",
        "3",
        "--greedy",
        "--no-kv-cache",
    ]);
    assert!(ok, "{err}");
    let fed: Vec<u64> = lines[1..]
        .iter()
        .map(|l| l["tokens_fed"].as_u64().unwrap())
        .collect();
    assert_eq!(fed, vec![6, 7, 8]);
    assert_eq!(lines[1]["top_k"][0]["text"], " Paris");
}

#[test]
fn a_bad_model_path_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.gguf");
    std::fs::write(&junk, b"this is not a model").unwrap();
    for (path, says) in [
        (dir.path().join("missing.gguf"), "not found"),
        (junk, "not a GGUF file"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_nexttoken"))
            .args(["trace", "--steps", "1", "--model"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says) && err.contains("--model"), "{err}");
    }
}

#[test]
fn a_bad_force_spec_is_a_clear_error() {
    let (_, err, ok) = trace(&["--steps", "1", "--force", "x:7042"]);
    assert!(!ok);
    assert!(err.contains("not a step number"), "{err}");
}

/// `trace --draft`: the same step token ids as without it (greedy), plus one round line per round
/// with what was drafted, what was kept, p, q, min(1, p/q) and the costs; for a re-quantised draft
/// and an early-exit one.
#[test]
fn a_trace_with_a_draft_writes_the_plain_steps_and_a_line_per_round() {
    let base = ["--greedy", "--steps", "32", "--prompt", "1, 2, 3, 4, 5, 6,"];
    let ids = |lines: &[Value]| -> Vec<u64> {
        let steps = lines.iter().filter(|l| l["type"] == "step");
        steps.map(|l| l["token"]["id"].as_u64().unwrap()).collect()
    };
    let (plain, err, ok) = trace(&base);
    assert!(ok, "{err}");
    for draft in ["q2_k", "layers:20"] {
        let (lines, err, ok) = trace(&[&base[..], &["--draft", draft, "--draft-k", "4"]].concat());
        assert!(ok, "{err}");
        assert_eq!(ids(&lines), ids(&plain), "draft {draft}");
        let rounds: Vec<&Value> = lines.iter().filter(|l| l["type"] == "round").collect();
        assert!(!rounds.is_empty());
        let mut steps_after = 0;
        for r in &rounds {
            assert_eq!(r["draft"], draft);
            let drafted = r["drafted"].as_array().unwrap();
            let accepted = r["accepted"].as_u64().unwrap() as usize;
            assert!(drafted.len() <= 4 && accepted <= drafted.len());
            for key in ["p", "q", "accept_prob", "verdicts"] {
                assert_eq!(r[key].as_array().unwrap().len(), drafted.len(), "{key}");
            }
            for (i, a) in r["accept_prob"].as_array().unwrap().iter().enumerate() {
                let (p, q) = (r["p"][i].as_f64().unwrap(), r["q"][i].as_f64().unwrap());
                assert!((a.as_f64().unwrap() - (p / q).min(1.0)).abs() < 1e-6);
            }
            assert_eq!(r["tokens"].as_u64().unwrap() as usize, accepted + 1);
            assert!(
                r["draft_ms"].as_f64().unwrap() > 0.0 && r["verify_ms"].as_f64().unwrap() > 0.0
            );
            steps_after += accepted + 1;
        }
        // Every step but a lone last one came from a round.
        assert!(steps_after >= 31, "{steps_after}");
    }
}

#[test]
fn a_trace_refuses_a_draft_with_forced_tokens() {
    let (_, err, ok) = trace(&["--draft", "q4_0", "--force", "2:3"]);
    assert!(!ok && err.contains("--force"), "{err}");
}

/// A penalty reorders the candidates: `top_k` is then in the sampler's order, each with what the chain
/// left it, and `model_top` names the model's own first token (the raw argmax: likelier than every
/// listed one), which may be missing from the list. Without a penalty there is no `model_top`.
#[test]
fn a_penalty_that_moves_the_models_first_token_names_it() {
    let prompt = "I like cats. I like cats. I like cats. I like";
    let run = |extra: &[&str]| {
        let mut args = vec!["--prompt", prompt, "--steps", "4", "--greedy"];
        args.extend(extra);
        let (lines, err, ok) = trace(&args);
        assert!(ok, "{err}");
        lines
            .into_iter()
            .filter(|l| l["type"] == "step")
            .collect::<Vec<Value>>()
    };
    for step in run(&[]) {
        assert!(step.get("model_top").is_none_or(Value::is_null), "{step}");
    }
    let steps = run(&["--repeat-penalty", "1.5"]);
    let moved: Vec<&Value> = steps.iter().filter(|s| !s["model_top"].is_null()).collect();
    assert!(
        !moved.is_empty(),
        "a penalty of 1.5 moves the first token somewhere"
    );
    for s in moved {
        let top = &s["model_top"];
        assert_eq!(top["rank"], 0, "{s}");
        assert!(top["sampled_rank"].as_u64().unwrap() > 0, "{s}");
        let p = top["prob"].as_f64().unwrap();
        for c in s["top_k"].as_array().unwrap() {
            assert!(c["prob"].as_f64().unwrap() <= p, "{s}");
            assert!(c.get("sampled_prob").is_some(), "{c}");
        }
        // The greedy token is the sampler's first, not the model's.
        assert_ne!(s["token"]["id"], top["token"]["id"], "{s}");
        assert!(s["rank"].as_u64().unwrap() > 0, "{s}");
    }
}
