//! The lab's measurements: loops at the tip, repeated n-grams, divergences between distributions, and
//! two paths compared on the real model (exposure bias and teacher forcing), headless included.

use crate::support;

use nexttoken::analysis::divergence::{js, kl};
use nexttoken::analysis::{repeated_ngrams, tip_cycle, Cycle, Divergence, LogProbs};
use nexttoken::engine::forward::linear::MatmulPath;
use nexttoken::engine::forward::model::{ForwardOptions, Model};
use nexttoken::engine::gguf::GgufFile;
use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::session::{Choice, Session, SessionOptions};
use nexttoken::protocol::{SamplerSettings, Source};
use serde_json::Value;
use std::process::Command;

// ---- cycles at the tip -------------------------------------------------------------------------

#[test]
fn period_one_loop() {
    let t = [5, 6, 7, 9, 9, 9, 9];
    assert_eq!(
        tip_cycle(&t),
        Some(Cycle {
            period: 1,
            repeats: 4.0,
            since_position: 3
        })
    );
}

#[test]
fn period_seven_loop_with_a_partial_copy() {
    let unit = [10, 11, 12, 13, 14, 15, 16];
    // Lead-in, then the tail of one copy (3 tokens), then two whole copies.
    let mut t = vec![1, 2, 3, 14, 15, 16];
    t.extend(unit);
    t.extend(unit);
    let c = tip_cycle(&t).expect("a loop");
    assert_eq!(c.period, 7);
    assert_eq!(c.since_position, 3);
    assert!((c.repeats - 17.0 / 7.0).abs() < 1e-12, "{}", c.repeats);
    assert_eq!(c.span(), 17);
}

#[test]
fn a_near_miss_is_not_a_loop() {
    // Two copies of a unit but for one token: no period fits the tip.
    let t = [1, 2, 3, 4, 5, 1, 2, 3, 9, 5];
    assert_eq!(tip_cycle(&t), None);
    // One copy and a half is not two copies.
    assert_eq!(tip_cycle(&[7, 8, 9, 1, 2, 3, 1, 2]), None);
    assert_eq!(tip_cycle(&[]), None);
    assert_eq!(tip_cycle(&[4]), None);
}

#[test]
fn a_loop_that_breaks_is_gone_and_a_new_one_is_measured_from_its_own_start() {
    let mut t = vec![1, 2, 3, 1, 2, 3, 1, 2, 3];
    assert_eq!(tip_cycle(&t).unwrap().period, 3);
    t.push(8);
    assert_eq!(tip_cycle(&t), None, "the loop broke");
    t.extend([8, 8]);
    assert_eq!(
        tip_cycle(&t),
        Some(Cycle {
            period: 1,
            repeats: 3.0,
            since_position: 9
        })
    );
}

#[test]
fn the_longest_repeat_wins_over_a_short_period_inside_it() {
    // A period-4 loop whose unit ends in a doubled token: at the tip "9 9" is also period 1, but
    // the period-4 repeat spans more.
    let unit = [3, 4, 9, 9];
    let t: Vec<u32> = unit.iter().cycle().take(12).copied().collect();
    let c = tip_cycle(&t).unwrap();
    assert_eq!((c.period, c.since_position), (4, 0));
    // ABABAB is period 2, not 4 (both span six tokens: the smaller unit wins).
    assert_eq!(tip_cycle(&[1, 2, 1, 2, 1, 2]).unwrap().period, 2);
}

#[test]
fn repeated_trigrams_are_marked_from_the_generated_start() {
    // prompt: 1 2 3 4 | generated: 5 1 2 3 6 7 5 1
    let t = [1, 2, 3, 4, 5, 1, 2, 3, 6, 7, 5, 1];
    let mask = repeated_ngrams(&t, 3, 4);
    let marked: Vec<usize> = (0..t.len()).filter(|&i| mask[i]).collect();
    // "1 2 3" repeats the prompt's; "7 5 1"/"5 1 2"... "5 1 2" occurs once, "5 1" at the end is a
    // bigram only.
    assert_eq!(marked, vec![5, 6, 7]);
    assert!(repeated_ngrams(&t, 0, 0).iter().all(|m| !m));
    assert!(
        !repeated_ngrams(&t, 3, 0)[0],
        "a first occurrence is not a repeat"
    );
}

// ---- divergences -------------------------------------------------------------------------------

fn lp(p: &[f64]) -> LogProbs {
    LogProbs(p.iter().map(|x| x.ln()).collect())
}

#[test]
fn divergences_on_hand_computed_distributions() {
    let p = lp(&[0.5, 0.5]);
    let q = lp(&[0.9, 0.1]);
    assert_eq!(kl(&p, &p), 0.0);
    assert_eq!(js(&q, &q), 0.0);
    // 0.5 ln(0.5/0.9) + 0.5 ln(0.5/0.1)
    let want = 0.5 * (0.5f64 / 0.9).ln() + 0.5 * (0.5f64 / 0.1).ln();
    assert!((kl(&p, &q) - want).abs() < 1e-12);
    let want_qp = 0.9 * (0.9f64 / 0.5).ln() + 0.1 * (0.1f64 / 0.5).ln();
    assert!((kl(&q, &p) - want_qp).abs() < 1e-12);
    // JS by its definition, through the mixture.
    let m = [0.7, 0.3];
    let want_js = 0.5 * (0.5 * (0.5f64 / m[0]).ln() + 0.5 * (0.5f64 / m[1]).ln())
        + 0.5 * (0.9 * (0.9f64 / m[0]).ln() + 0.1 * (0.1f64 / m[1]).ln());
    assert!((js(&p, &q) - want_js).abs() < 1e-12);
    assert_eq!(js(&p, &q), js(&q, &p), "JS is symmetric");
    // Disjoint supports: JS reaches ln 2.
    let a = LogProbs(vec![0.0, f64::NEG_INFINITY]);
    let b = LogProbs(vec![f64::NEG_INFINITY, 0.0]);
    assert!((js(&a, &b) - std::f64::consts::LN_2).abs() < 1e-12);
}

#[test]
fn log_softmax_entropy_rank_and_argmax() {
    let l = LogProbs::from_logits(&[1.0, 3.0, 2.0, 3.0]);
    let total: f64 = l.0.iter().map(|x| x.exp()).sum();
    assert!((total - 1.0).abs() < 1e-12);
    assert_eq!(l.argmax(), 1, "the lowest id wins a tie");
    assert_eq!((l.rank(1), l.rank(3), l.rank(2), l.rank(0)), (0, 0, 2, 3));
    let uniform = LogProbs::from_logits(&[0.5; 8]);
    assert!((uniform.entropy() - 8f64.ln()).abs() < 1e-12);
}

// ---- two real paths ----------------------------------------------------------------------------

fn greedy() -> Session {
    let settings = SamplerSettings {
        greedy: true,
        ..SamplerSettings::default()
    };
    load_session(
        &support::real_model(),
        &LoadOptions::default(),
        settings,
        SessionOptions::default(),
        &mut |_| {},
    )
    .unwrap()
    .0
}

/// Full logits rows of a token sequence, straight from a fresh model: `rows[i]` is the distribution
/// after `tokens[..=i]`.
fn full_rows(tokens: &[u32]) -> Vec<LogProbs> {
    let mut g = GgufFile::open(&support::real_model()).unwrap();
    let mut m = Model::load(&mut g, MatmulPath::Exact).unwrap();
    let all = ForwardOptions {
        all_logits: true,
        lens: false,
        capture_rows: 0,
    };
    let logits = m.forward(tokens, 0, all).unwrap().logits;
    logits
        .chunks(m.vocab_size)
        .map(LogProbs::from_logits)
        .collect()
}

/// KL and JS straight from probabilities, written out apart from the module under test.
fn by_hand(p: &LogProbs, q: &LogProbs) -> (f64, f64) {
    let (mut k, mut j) = (0.0, 0.0);
    for (&a, &b) in p.0.iter().zip(&q.0) {
        let (pa, pb) = (a.exp(), b.exp());
        k += pa * (a - b);
        let m = (pa + pb) / 2.0;
        if pa > 0.0 {
            j += 0.5 * pa * (pa / m).ln();
        }
        if pb > 0.0 {
            j += 0.5 * pb * (pb / m).ln();
        }
    }
    (k, j)
}

#[test]
fn compare_two_real_branches_against_full_distributions() {
    let mut s = greedy();
    let prompt = s.prompt_ids("The capital of France is", false).unwrap();
    s.prefill_ids(&prompt).unwrap();
    for _ in 0..8 {
        s.step(Choice::Sample).unwrap();
    }
    let a = s.tip_id().unwrap();
    let a_tokens = s.tokens();
    s.rewind(8).unwrap();
    let berlin = s.encode(" Berlin").unwrap();
    assert_eq!(berlin.len(), 1);
    s.step(Choice::Force(berlin[0])).unwrap();
    for _ in 0..7 {
        s.step(Choice::Sample).unwrap();
    }
    let b = s.tip_id().unwrap();
    let b_tokens = s.tokens();
    let before = s.view().unwrap();

    let c = s.compare(a, b).unwrap();
    assert_eq!(c.fork_step, Some(0));
    assert_eq!(c.steps.len(), 8);
    assert_eq!(s.view().unwrap(), before, "comparing changes nothing");

    let (ra, rb) = (full_rows(&a_tokens), full_rows(&b_tokens));
    let n = prompt.len();
    for st in &c.steps {
        let pos = n + st.step;
        let (pa, pb) = (&ra[pos - 1], &rb[pos - 1]);
        let (ta, tb) = (st.a.as_ref().unwrap(), st.b.as_ref().unwrap());
        assert_eq!(ta.token.id, a_tokens[pos]);
        assert!((ta.logprob - pa.logprob(a_tokens[pos])).abs() < 1e-9);
        assert!((tb.logprob - pb.logprob(b_tokens[pos])).abs() < 1e-9);
        assert!((ta.entropy - pa.entropy()).abs() < 1e-9);
        let (k_ab, j) = by_hand(pa, pb);
        let (k_ba, _) = by_hand(pb, pa);
        let got = Divergence {
            kl_ab: st.kl_ab.unwrap(),
            kl_ba: st.kl_ba.unwrap(),
            js: st.js.unwrap(),
        };
        assert!(
            (got.kl_ab - k_ab).abs() < 1e-9,
            "step {}: {got:?} vs {k_ab}",
            st.step
        );
        assert!((got.kl_ba - k_ba).abs() < 1e-9, "step {}", st.step);
        assert!((got.js - j).abs() < 1e-9, "step {}", st.step);
        assert!(got.js <= std::f64::consts::LN_2);
        if st.step == 0 {
            assert_eq!(
                got,
                Divergence::ZERO,
                "the same distribution before the fork"
            );
            assert!(tb.forced && !ta.forced);
        } else {
            assert!(got.js > 0.0, "after the fork the contexts differ");
        }
    }
    // The forced path is less likely, by at least the forced token's own log-prob gap.
    assert!(c.b.logprob < c.a.logprob);
    assert!(c.b.forced_logprob < -3.0, "{}", c.b.forced_logprob);
    assert_eq!(c.a.forced_logprob, 0.0);
    assert!(c.mean_js > 0.0);
}

/// A path's mean over its own tokens is over those from the fork on, and says how many: B's own tokens
/// before its forced one are not in it. The compare view had said "then -0.59 per own token" of a
/// mean over 4 of a path's 8 own tokens, which averaged -0.80.
#[test]
fn a_paths_own_mean_is_over_its_tokens_from_the_fork_on() {
    let mut s = greedy();
    let prompt = s.prompt_ids("The capital of France is", false).unwrap();
    s.prefill_ids(&prompt).unwrap();
    for _ in 0..6 {
        s.step(Choice::Sample).unwrap();
    }
    let a = s.tip_id().unwrap();
    s.rewind(3).unwrap();
    let berlin = s.encode(" Berlin").unwrap();
    s.step(Choice::Force(berlin[0])).unwrap();
    for _ in 0..2 {
        s.step(Choice::Sample).unwrap();
    }
    let b = s.tip_id().unwrap();
    let c = s.compare(a, b).unwrap();
    assert_eq!(c.fork_step, Some(3));
    let lps =
        |side: fn(&nexttoken::protocol::AlignedStep) -> Option<&nexttoken::protocol::PathToken>,
         from: usize| {
            c.steps[from..]
                .iter()
                .filter_map(side)
                .filter(|t| !t.forced)
                .map(|t| t.logprob)
                .collect::<Vec<f64>>()
        };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (b_after, b_all) = (lps(|s| s.b.as_ref(), 3), lps(|s| s.b.as_ref(), 0));
    assert_eq!((b_after.len(), b_all.len()), (2, 5));
    assert_eq!(c.b.free_tokens, 2);
    assert!((c.b.free_mean_logprob.unwrap() - mean(&b_after)).abs() < 1e-12);
    assert!(
        (mean(&b_after) - mean(&b_all)).abs() > 1e-6,
        "the test needs the two means to differ: {b_after:?} {b_all:?}"
    );
    assert_eq!(c.a.free_tokens, 3, "A's tokens from the fork on");
    assert!((c.a.free_mean_logprob.unwrap() - mean(&lps(|s| s.a.as_ref(), 3))).abs() < 1e-12);
}

#[test]
fn teacher_forcing_the_models_own_greedy_path_scores_rank_zero_everywhere() {
    let mut s = greedy();
    let prompt = s.prompt_ids("The capital of France is", false).unwrap();
    s.prefill_ids(&prompt).unwrap();
    for _ in 0..10 {
        s.step(Choice::Sample).unwrap();
    }
    let own: Vec<u32> = s.tokens()[prompt.len()..].to_vec();
    let free = s.tip_id().unwrap();
    s.rewind(10).unwrap();
    for &t in &own {
        let r = s.step(Choice::Force(t)).unwrap();
        assert!(!r.committed.token.text.is_empty());
    }
    let reference = s.tip_id().unwrap();
    assert_eq!(free, reference, "the same tokens are the same nodes");
    let c = s.compare(free, reference).unwrap();
    assert_eq!(c.fork_step, None);
    assert!(c.steps.iter().all(|st| st.b.as_ref().unwrap().rank == 0));
    assert!(c.steps.iter().all(|st| st.js == Some(0.0)));
}

#[test]
fn a_reference_scores_only_its_own_tokens_after_an_earlier_forced_one() {
    // The run: " Berlin" forced after the prompt, two steps more, then a reference typed.
    let mut s = greedy();
    s.prefill_text("The capital of France is", false).unwrap();
    let berlin = s.encode(" Berlin").unwrap();
    assert_eq!(berlin.len(), 1, "one token: {berlin:?}");
    assert!(s.step(Choice::Force(berlin[0])).unwrap().committed.source == Source::Forced);
    s.step(Choice::Sample).unwrap();
    s.step(Choice::Sample).unwrap();
    let before = s.tokens().to_vec();
    // What free running takes first from the tip: the step the comparison's A side must open with.
    let planned = s.view().unwrap().next.candidates[0].token.id;
    let reference = " and it is a lovely city.";
    let ids = s.encode(reference).unwrap();
    let c = s.reference_run(reference, None, &mut |_, _| {}).unwrap();
    assert_eq!(c.b.tokens, ids.len(), "B is the typed reference alone");
    assert_eq!(c.b.text, reference);
    assert_eq!(c.steps.len(), ids.len(), "one step per reference token");
    let b_ids: Vec<u32> = c
        .steps
        .iter()
        .map(|st| st.b.as_ref().unwrap().token.id)
        .collect();
    assert_eq!(b_ids, ids, "B's steps are the reference's tokens, in order");
    assert_eq!(c.steps[0].a.as_ref().unwrap().token.id, planned);
    assert!(c.steps[0].js == Some(0.0), "step 0: both read the same tip");
    // B's total is the sum of its own tokens' log-probs, each scored where it was forced.
    let sum: f64 = c
        .steps
        .iter()
        .map(|st| st.b.as_ref().unwrap().logprob)
        .sum();
    assert!((c.b.logprob - sum).abs() < 1e-9);
    // The free path is current, after the path as it was.
    assert_eq!(&s.tokens()[..before.len()], before.as_slice());
    assert_eq!(s.tokens().len(), before.len() + c.a.tokens);
}

// ---- headless ----------------------------------------------------------------------------------

fn nexttoken(args: &[&str]) -> (Vec<Value>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_nexttoken"))
        .args(args)
        .env("NEXTTOKEN_MODEL", support::real_model())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success() || !err.is_empty());
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, err)
}

#[test]
fn compare_cli_forced_berlin() {
    let (lines, err) = nexttoken(&[
        "compare",
        "--prompt",
        "The capital of France is",
        "--steps",
        "16",
        "--force",
        "0: Berlin",
        "--greedy",
    ]);
    assert_eq!(lines.len(), 17, "16 steps and a summary; stderr: {err}");
    for (i, l) in lines[..16].iter().enumerate() {
        assert_eq!(l["type"], "step");
        assert_eq!(l["step"], i);
        for key in ["kl_ab", "kl_ba", "js"] {
            assert!(l[key].as_f64().unwrap() >= 0.0);
        }
        assert!(l["same_top1"].is_boolean());
        for side in ["a", "b"] {
            for key in ["id", "text", "logprob", "entropy"] {
                assert!(!l[side][key].is_null(), "{side}.{key}");
            }
        }
    }
    assert_eq!(lines[0]["js"], 0.0, "before the fork");
    assert_eq!(lines[0]["b"]["text"], " Berlin");
    assert_eq!(lines[0]["b"]["forced"], true);
    assert_eq!(lines[0]["a"]["text"], " Paris");
    let sum = &lines[16];
    assert_eq!(sum["type"], "summary");
    assert_eq!(sum["fork_step"], 0);
    assert!(sum["b_logprob"].as_f64().unwrap() < sum["a_logprob"].as_f64().unwrap());
    assert!(sum["mean_js"].as_f64().unwrap() > 0.0);
    assert!(sum["b_text"].as_str().unwrap().starts_with(" Berlin"));
    // Each path's own-token mean says how many tokens it is over: from the fork (step 0) on, all of
    // A's and all of B's but the forced one.
    assert_eq!(
        (sum["a_free_tokens"].as_u64(), sum["b_free_tokens"].as_u64()),
        (Some(16), Some(15))
    );
    // The summed log-probs are the step lines' own.
    let a_sum: f64 = lines[..16]
        .iter()
        .map(|l| l["a"]["logprob"].as_f64().unwrap())
        .sum();
    assert!((a_sum - sum["a_logprob"].as_f64().unwrap()).abs() < 1e-9);
}

#[test]
fn compare_cli_reference_mode() {
    // The model's own greedy continuation, as text, then a reference that leaves it at once.
    let (own, _) = nexttoken(&[
        "compare",
        "--prompt",
        "The capital of France is",
        "--steps",
        "6",
        "--force",
        "5: and",
        "--greedy",
    ]);
    let text = own[6]["a_text"].as_str().unwrap().to_string();
    let (lines, err) = nexttoken(&[
        "compare",
        "--prompt",
        "The capital of France is",
        "--reference",
        &text,
        "--greedy",
    ]);
    let sum = lines.last().unwrap_or_else(|| panic!("no output: {err}"));
    assert_eq!(sum["type"], "summary");
    assert_eq!(sum["first_divergence"], Value::Null, "{sum}");
    let steps = &lines[..lines.len() - 1];
    assert_eq!(
        steps.len(),
        sum["reference_tokens"].as_u64().unwrap() as usize
    );
    for l in steps {
        assert_eq!(l["reference"]["rank"], 0, "{l}");
        assert_eq!(l["reference"]["id"], l["free"]["id"]);
    }
    // NLL is the mean negative log-prob of the reference tokens; perplexity its exp.
    let nll = -steps
        .iter()
        .map(|l| l["reference"]["logprob"].as_f64().unwrap())
        .sum::<f64>()
        / steps.len() as f64;
    assert!((sum["nll"].as_f64().unwrap() - nll).abs() < 1e-9);
    assert!((sum["perplexity"].as_f64().unwrap() - nll.exp()).abs() < 1e-6);

    let (lines, _) = nexttoken(&[
        "compare",
        "--prompt",
        "The capital of France is",
        "--reference",
        " Berlin, of course.",
        "--greedy",
    ]);
    let sum = lines.last().unwrap();
    assert_eq!(sum["first_divergence"], 0);
    assert!(lines[0]["reference"]["rank"].as_u64().unwrap() > 0);
    assert!(sum["perplexity"].as_f64().unwrap() > 1.0);
}

#[test]
fn compare_cli_refuses_what_it_cannot_do() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_nexttoken"))
            .args(args)
            .env("NEXTTOKEN_MODEL", support::real_model())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} was accepted");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    assert!(run(&["compare", "--steps", "4"]).contains("--force STEP:TEXT"));
    assert!(run(&["compare", "--steps", "4", "--force", "9: x"]).contains("raise --steps"));
    assert!(run(&["compare", "--force", "0: x", "--reference", "y"]).contains("cannot be used"));
}

#[test]
fn trace_reports_the_greedy_loop() {
    let (lines, err) = nexttoken(&[
        "trace",
        "--prompt",
        "The capital of France is",
        "--steps",
        "64",
        "--greedy",
    ]);
    let steps: Vec<&Value> = lines.iter().filter(|l| l["type"] == "step").collect();
    assert_eq!(steps.len(), 64, "{err}");
    assert!(steps.iter().all(|l| l.get("repetition").is_some()));
    let last = &steps[63]["repetition"];
    let period = last["period"].as_u64().expect("a loop by step 64") as usize;
    assert!(last["repeats"].as_f64().unwrap() >= 2.0);
    // The reported period is real: the tokens repeat with it.
    let ids: Vec<u64> = steps
        .iter()
        .map(|l| l["token"]["id"].as_u64().unwrap())
        .collect();
    for i in 64 - period..64 {
        assert_eq!(ids[i], ids[i - period]);
    }
    // The first step is no loop.
    assert_eq!(steps[0]["repetition"], Value::Null);
}

/// In the real greedy loop the engine names the token that goes on with it and its fate: greedy takes
/// it for certain; a repeat penalty of 2 (no forward pass) leaves its raw figures and demotes it.
#[test]
fn the_loop_token_and_its_fate_come_with_the_distribution() {
    let mut s = greedy();
    s.prefill_text("The capital of France is", false).unwrap();
    for _ in 0..48 {
        s.step(Choice::Sample).unwrap();
    }
    let ids = s.tokens();
    let cycle = tip_cycle(&ids).expect("greedy loops here");
    let d = s.distribution().unwrap();
    let next = d.loop_next.clone().expect("the loop token's fate");
    assert_eq!(next.token.id, ids[ids.len() - cycle.period]);
    assert_eq!((next.sampled_rank, next.sampled_prob), (0, 1.0), "{next:?}");
    let passes = s.forward_passes();
    let mut settings = s.settings().clone();
    settings.repeat_penalty = 2.0;
    s.set_settings(settings);
    let after = s.distribution().unwrap().loop_next.expect("still looping");
    assert_eq!(s.forward_passes(), passes, "no forward pass");
    assert_eq!((after.prob, after.rank), (next.prob, next.rank));
    assert!(after.sampled_rank > 0, "{after:?}");
    assert_eq!(after.sampled_prob, 0.0, "greedy takes another token");
}
