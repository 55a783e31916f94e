//! Speculative decoding is exact: under greedy the text equals plain greedy token for token (the real
//! model, several prompts, every kind of draft); under sampling the text is distributed as the model's
//! own (a chi-square test over thousands of seeded rounds on the tiny model, which also tells apart a
//! round that skips the residual draw); a round is reproducible and atomic.

use crate::support::{self, tiny};
use nexttoken::engine::draft::{Draft, DraftSpec};
use nexttoken::engine::forward::linear::MatmulPath;
use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::session::{Choice, ResidualRule, Session, Written};
use nexttoken::protocol::{RoundEnd, SamplerSettings, Verdict};
use std::path::Path;

fn with_draft(path: &Path, spec: &str, settings: SamplerSettings) -> Session {
    let (mut s, _) = load_session(
        path,
        &LoadOptions::default(),
        settings,
        Default::default(),
        &mut |_| {},
    )
    .unwrap();
    let spec = DraftSpec::parse(spec).unwrap();
    let draft = Draft::load(s.local_model().unwrap(), path, &spec, MatmulPath::Fast).unwrap();
    s.set_draft(Some(draft));
    s
}

fn greedy() -> SamplerSettings {
    SamplerSettings {
        greedy: true,
        ..SamplerSettings::default()
    }
}

/// Generated token ids, `n` of them (fewer at an end of text), in speculative rounds of `k`.
fn speculative_ids(s: &mut Session, prompt: &str, n: usize, k: usize) -> Vec<u32> {
    s.prefill_text(prompt, false).unwrap();
    let mut ids = Vec::new();
    for w in s.write_in_rounds(n, k).unwrap() {
        match w {
            Written::Round(round) => {
                assert!(round.steps.len() <= k + 1);
                ids.extend(round.steps.iter().map(|st| st.committed.token.id));
            }
            Written::Step(r) => ids.push(r.committed.token.id),
        }
    }
    ids
}

fn plain_ids(s: &mut Session, prompt: &str, n: usize) -> Vec<u32> {
    s.prefill_text(prompt, false).unwrap();
    let steps = s.generate(n, |_, _| false).unwrap();
    steps.iter().map(|r| r.committed.token.id).collect()
}

#[test]
fn under_greedy_every_draft_writes_plain_greedys_text_on_the_real_model() {
    let model = support::real_model();
    let prompts = [
        "The capital of France is",
        "1, 2, 3, 4, 5, 6,",
        "Once upon a time, a dragon",
    ];
    let mut plain = with_draft(&model, "layers:1", greedy());
    let expected: Vec<Vec<u32>> = prompts
        .iter()
        .map(|p| plain_ids(&mut plain, p, 24))
        .collect();
    let itself = model.display().to_string();
    let drafts = [
        ("q8_0", 4),
        ("q4_0", 3),
        ("q2_k", 4),
        ("layers:20", 4),
        ("layers:6", 7),
        (itself.as_str(), 5),
    ];
    for (spec, k) in drafts {
        let mut s = with_draft(&model, spec, greedy());
        for (p, want) in prompts.iter().zip(&expected) {
            let got = speculative_ids(&mut s, p, 24, k);
            assert_eq!(&got, want, "draft {spec}, k {k}, prompt {p:?}");
            // The session's path is that text too, and its next distribution is the plain one's.
            assert_eq!(s.tokens()[s.prompt_len()..], want[..]);
        }
    }
}

/// A round that writes past the model's end of turn is cut back to it (the tokens after stay as a
/// branch): the text stops where plain stepping stops.
#[test]
fn a_round_past_the_end_of_text_stops_where_plain_stepping_stops() {
    let model = support::real_model();
    // The model as its own draft: every guess is kept, the end of turn and what follows it too.
    let mut s = with_draft(&model, &model.display().to_string(), greedy());
    let prompt = "What is 2+2? Answer with one number.";
    s.prefill_text(prompt, true).unwrap();
    let plain: Vec<u32> = s
        .generate(40, |_, _| false)
        .unwrap()
        .iter()
        .map(|r| r.committed.token.id)
        .collect();
    assert!(
        s.is_eos(*plain.last().unwrap()) && plain.len() < 40,
        "{plain:?}"
    );
    s.prefill_text(prompt, true).unwrap();
    let mut ids = Vec::new();
    while !ids.last().is_some_and(|&t| s.is_eos(t)) {
        // k 8: the last round drafts past the end of turn.
        let round = s.speculate_within(8, 40).unwrap();
        ids.extend(round.steps.iter().map(|st| st.committed.token.id));
    }
    assert_eq!(ids, plain);
    assert_eq!(s.tokens()[s.prompt_len()..], plain[..]);
}

/// A `layers:N` draft runs the model's own first N layers and head from the same memory: a copy of
/// SmolLM2's 26 layers had made each draft pass slower than a whole pass of the model, the two copies
/// taking turns in the CPU's caches (`trace --draft layers:26`: 4 draft passes 22-30 ms against 2.6
/// for a plain step). A re-quantised draft has weights of its own.
#[test]
fn an_early_exit_draft_reads_the_models_own_weights() {
    let mut s = support::real_session();
    s.load_draft(&DraftSpec::Layers(26), 4).unwrap();
    let model = s.local_model().unwrap();
    let draft = s.draft().unwrap();
    assert!(draft.shares_weights_with(model));
    assert_eq!(draft.n_layer(), 26);
    let ratio = s.draft_info().unwrap().bytes_ratio;
    assert!(
        ratio > 0.8 && ratio < 0.95,
        "26 of 30 layers and the head: {ratio}"
    );
    s.load_draft(&DraftSpec::parse("q8_0").unwrap(), 4).unwrap();
    let model = s.local_model().unwrap();
    assert!(!s.draft().unwrap().shares_weights_with(model));
}

/// Every round times its plain step right before it, so rounds in a row each have their own (one kept
/// from the first had set warm rounds against a cold step: "ran 1.29× (faster)" beside "no acceptance
/// pays here"), and timing it leaves the round's last token unread: the next check reads it with
/// its drafts, one pass for both. The time spent timing it is counted apart, for `bench --draft`.
#[test]
fn every_round_sets_itself_against_a_plain_step_timed_beside_it() {
    let mut s = support::real_session();
    s.load_draft(&DraftSpec::Layers(26), 4).unwrap();
    s.prefill_text("1, 2, 3, 4, 5, 6,", false).unwrap();
    let mut timing = vec![s.plain_timing_s()];
    let mut rounds = Vec::new();
    for _ in 0..3 {
        rounds.push(s.speculate(4).unwrap().report);
        timing.push(s.plain_timing_s());
    }
    // What `bench --draft` takes out of the speculative run's clock grows with every round.
    assert!(timing.windows(2).all(|w| w[1] > w[0]), "{timing:?}");
    for (a, b) in rounds.iter().zip(&rounds[1..]) {
        assert_ne!(a.plain_ms, b.plain_ms, "one plain time for two rounds");
        assert!(b.plain_ms > 0.0 && b.plain_ms.is_finite());
        assert_eq!(b.verify_positions, 4 + 1, "the last token and 4 drafts");
    }
}

/// A draft made after the model's decode plans were tried (the TUI tries them at load) starts from
/// the model's choice, an early exit or a re-quantisation alike; a draft made before has a trial of
/// its own.
#[test]
fn a_draft_of_the_models_shapes_starts_from_its_decode_plan() {
    let mut s = support::real_session();
    s.load_draft(&DraftSpec::Layers(20), 4).unwrap();
    assert!(
        s.draft().unwrap().decode_trial_running(),
        "nothing chosen yet"
    );
    s.measure_machine().unwrap();
    assert!(!s.decode_trial_running(), "the model's trial ran");
    for spec in ["layers:26", "q8_0"] {
        s.load_draft(&DraftSpec::parse(spec).unwrap(), 4).unwrap();
        assert!(!s.draft().unwrap().decode_trial_running(), "{spec}");
    }
}

#[test]
fn a_draft_with_another_vocabulary_is_refused_with_a_clear_message() {
    let spec = DraftSpec::parse(&support::gemma_model().display().to_string()).unwrap();
    let s = support::real_session();
    let model = s.local_model().unwrap();
    let err = Draft::load(model, &support::real_model(), &spec, MatmulPath::Fast)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains("another vocabulary") && err.contains("layers:N"),
        "{err}"
    );
    let err = Draft::load(
        model,
        &support::real_model(),
        &DraftSpec::Layers(30),
        MatmulPath::Fast,
    )
    .err()
    .expect("refused")
    .to_string();
    assert!(
        err.contains("whole model") && err.contains("layers:29"),
        "{err}"
    );
    assert!(DraftSpec::parse("layers:x")
        .unwrap_err()
        .contains("layers:N"));
}

#[test]
fn a_greedy_round_keeps_a_draft_exactly_while_it_is_the_models_top_token() {
    let model = support::real_model();
    let mut s = with_draft(&model, "layers:20", greedy());
    s.prefill_text("1, 2, 3, 4, 5, 6,", false).unwrap();
    for _ in 0..6 {
        let r = s.speculate(4).unwrap().report;
        for (i, d) in r.drafted.iter().enumerate() {
            match d.verdict {
                Verdict::Accepted => {
                    assert!(i < r.accepted && d.token == d.model_top && d.accept_prob == 1.0)
                }
                Verdict::Rejected => {
                    assert!(i == r.accepted && d.token != d.model_top && d.accept_prob == 0.0)
                }
                Verdict::Unchecked => assert!(i > r.accepted),
            }
        }
        match r.last.end {
            RoundEnd::Bonus => assert_eq!(r.accepted, r.drafted.len()),
            // Under greedy the residual max(0, p − q) is all on the model's top token.
            RoundEnd::Residual => assert_eq!(r.last.token, r.drafted[r.accepted].model_top),
        }
        assert!(r.draft_passes == 4 && r.verify_ms > 0.0 && r.plain_ms > 0.0);
    }
}

/// The tiny model, sampling from its 3 best tokens at temperature 1: few outcomes, so a few thousand
/// runs measure their frequencies well.
fn tiny_settings(seed: u64) -> SamplerSettings {
    SamplerSettings {
        temperature: 1.0,
        top_k: 3,
        top_p: 1.0,
        min_p: 0.0,
        seed,
        ..SamplerSettings::default()
    }
}

const PROMPT: [u32; 6] = [72, 101, 108, 108, 111, 32];

/// The model's own probability of every pair of first two tokens: p(a) · p(b | a).
fn exact_pairs(s: &mut Session) -> Vec<((u32, u32), f64)> {
    s.prefill_ids(&PROMPT).unwrap();
    let first = kept(s);
    let mut pairs = Vec::new();
    for (a, pa) in first {
        s.step(Choice::Force(a)).unwrap();
        for (b, pb) in kept(s) {
            pairs.push(((a, b), pa * pb));
        }
        s.rewind(1).unwrap();
    }
    pairs
}

/// The final distribution at the tip: the candidates the chain keeps, with their probabilities.
fn kept(s: &mut Session) -> Vec<(u32, f64)> {
    let d = s.distribution().unwrap();
    d.candidates
        .iter()
        .filter(|c| c.sampled_prob > 0.0)
        .map(|c| (c.token.id, c.sampled_prob as f64))
        .collect()
}

/// Pearson's chi-square of the first two tokens' frequencies over `runs` seeded runs of rounds of 2
/// drafted tokens, against the model's own pair probabilities; and the runs whose round rejected.
fn chi_square(rule: ResidualRule, runs: u64) -> (f64, usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny::write(dir.path());
    let mut s = with_draft(&path, "layers:1", tiny_settings(0));
    let exact = exact_pairs(&mut s);
    let mut counts = vec![0usize; exact.len()];
    let mut rejected = 0;
    for seed in 0..runs {
        s.set_settings(tiny_settings(seed));
        s.prefill_ids(&PROMPT).unwrap();
        let mut ids = Vec::new();
        while ids.len() < 2 {
            let round = s.speculate_with(2, rule).unwrap();
            rejected += usize::from(round.report.last.end == RoundEnd::Residual);
            ids.extend(round.steps.iter().map(|st| st.committed.token.id));
        }
        let cell = exact.iter().position(|(pair, _)| *pair == (ids[0], ids[1]));
        counts[cell.expect("a pair outside the model's support")] += 1;
    }
    let n = runs as f64;
    let chi: f64 = exact
        .iter()
        .zip(&counts)
        .map(|((_, p), &c)| (c as f64 - n * p).powi(2) / (n * p))
        .sum();
    (chi, exact.len() - 1, rejected)
}

/// The 0.999 quantile of chi-square with `df` degrees of freedom (Wilson–Hilferty), so a correct
/// sampler fails one run in a thousand at most; the runs are seeded, so a pass is a pass every time.
fn chi_square_999(df: usize) -> f64 {
    let d = df as f64;
    let z = 3.090_232;
    d * (1.0 - 2.0 / (9.0 * d) + z * (2.0 / (9.0 * d)).sqrt()).powi(3)
}

#[test]
fn sampled_rounds_write_text_distributed_as_the_models_own() {
    let (chi, df, rejected) = chi_square(ResidualRule::Published, 4000);
    assert!(
        rejected > 500,
        "the draft must disagree often for the test to mean anything: {rejected}"
    );
    assert!(
        chi < chi_square_999(df),
        "chi-square {chi:.1} over {df} degrees of freedom"
    );
}

#[test]
fn the_same_test_fails_a_round_that_draws_from_p_instead_of_the_residual() {
    let (chi, df, _) = chi_square(ResidualRule::FromP, 4000);
    assert!(
        chi > chi_square_999(df),
        "chi-square {chi:.1}: the test cannot tell the bug apart"
    );
}

#[test]
fn a_seeded_round_is_reproducible_and_a_failed_one_leaves_the_session_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny::write(dir.path());
    let mut s = with_draft(&path, "layers:1", tiny_settings(7));
    let run = |s: &mut Session| {
        s.prefill_ids(&PROMPT).unwrap();
        (0..3)
            .map(|_| s.speculate(3).unwrap().report)
            .collect::<Vec<_>>()
    };
    let (a, b) = (run(&mut s), run(&mut s));
    let strip = |r: &[nexttoken::protocol::RoundReport]| {
        r.iter()
            .map(|r| (r.drafted.clone(), r.accepted, r.last.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&a), strip(&b));
    let before = (s.tokens(), s.distribution().unwrap());
    s.inject_fault(1);
    assert!(s.speculate(3).is_err());
    assert_eq!((s.tokens(), s.distribution().unwrap()), before);
    // And the next round runs as if nothing happened.
    s.speculate(3).unwrap();
}
