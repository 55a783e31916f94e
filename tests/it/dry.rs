//! DRY ("Don't Repeat Yourself") against hand-worked cases of llama.cpp's semantics
//! (`llama_sampler_dry_apply`): for each candidate that would extend a repeat, `n` is the longest suffix
//! of the window that occurred earlier followed by that candidate, and the candidate loses
//! `multiplier * base^(n - allowed_length)` when `n >= allowed_length`. Then one run on the real model.

use crate::support;

use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::sampler::{
    apply_dry, dry_penalties, dry_penalty, dry_repeats, run_chain, run_chain_with, DryBreakers,
};
use nexttoken::engine::session::{Choice, SessionOptions};
use nexttoken::protocol::SamplerSettings;

/// DRY on with no breakers; every other stage as the defaults (penalties off).
fn dry(multiplier: f32, base: f32, allowed: usize, last_n: i32) -> SamplerSettings {
    SamplerSettings {
        dry_multiplier: multiplier,
        dry_base: base,
        dry_allowed_length: allowed,
        dry_penalty_last_n: last_n,
        dry_sequence_breakers: vec![],
        ..SamplerSettings::default()
    }
}

/// Sixteen distinct logits, so that a changed one is visible.
fn logits() -> Vec<f32> {
    (0..16).map(|i| 0.25 * i as f32 - 1.0).collect()
}

fn bits(xs: &[f32]) -> Vec<u32> {
    xs.iter().map(|x| x.to_bits()).collect()
}

fn none() -> DryBreakers {
    DryBreakers::none()
}

/// The penalty as llama.cpp computes it: `float * std::pow(float, int)` is a double, stored in a float.
fn expected(multiplier: f32, base: f32, exp: i32) -> f32 {
    (multiplier as f64 * (base as f64).powf(exp as f64)) as f32
}

#[test]
fn llama_cpp_worked_example() {
    // From llama.cpp's comment on step 3: "a b c c b c y a b c" has repeat counts 0 0 3 1 0 2 0 0 0 0,
    // so emitting c would extend `a b c` (3), b would extend `c` (1), y would extend `b c` (2).
    let (a, b, c, y) = (0, 1, 2, 3);
    let h = [a, b, c, c, b, c, y, a, b, c];
    assert_eq!(
        dry_repeats(&h, &dry(1.0, 2.0, 1, -1), &none()),
        vec![(b, 1), (c, 3), (y, 2)]
    );
    // With the default allowed length 2, b's single-token repeat goes free.
    assert_eq!(
        dry_repeats(&h, &dry(1.0, 2.0, 2, -1), &none()),
        vec![(c, 3), (y, 2)]
    );
}

#[test]
fn no_penalty_below_the_allowed_length() {
    // `1 2 3 1`: emitting 2 would repeat `1 2`, a match of n = 1 (the `1` already there).
    let h = [1, 2, 3, 1];
    let s = dry(0.8, 1.75, 2, -1);
    assert!(dry_repeats(&h, &s, &none()).is_empty());
    let mut l = logits();
    apply_dry(&mut l, &h, &s, &none());
    assert_eq!(bits(&l), bits(&logits()), "n = 1 < 2: nothing moves");
    // At allowed length 1 the same match costs the multiplier itself (base^0).
    let s1 = dry(0.8, 1.75, 1, -1);
    assert_eq!(dry_penalties(&h, &s1, &none()), vec![(2, 0.8)]);
    // A window no longer than the allowed length is never scanned.
    assert!(dry_repeats(&[4, 4], &s, &none()).is_empty());
}

#[test]
fn the_penalty_is_multiplier_times_base_to_the_excess_length() {
    let s = dry(0.8, 1.75, 2, -1);
    // `1 2 3 4 1 2 3`: emitting 4 would repeat `1 2 3 4`; n = 3, one over the allowed 2.
    let h = [1, 2, 3, 4, 1, 2, 3];
    assert_eq!(dry_repeats(&h, &s, &none()), vec![(4, 3)]);
    let p = dry_penalties(&h, &s, &none());
    assert_eq!(p, vec![(4, expected(0.8, 1.75, 1))]);
    assert!(
        (p[0].1 - 1.4).abs() < 1e-6,
        "0.8 * 1.75 = 1.4, got {}",
        p[0].1
    );
    let mut l = logits();
    apply_dry(&mut l, &h, &s, &none());
    let want: Vec<f32> = logits()
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            if i == 4 {
                x - expected(0.8, 1.75, 1)
            } else {
                x
            }
        })
        .collect();
    assert_eq!(bits(&l), bits(&want), "only token 4 moves, by exactly 1.4");
    // One token longer: n = 4, 0.8 * 1.75^2 = 2.45. Exactly at the allowed length: the multiplier.
    let h = [1, 2, 3, 4, 5, 1, 2, 3, 4];
    let p = dry_penalties(&h, &s, &none());
    assert_eq!(p, vec![(5, expected(0.8, 1.75, 2))]);
    assert!((p[0].1 - 2.45).abs() < 1e-6);
    assert_eq!(dry_penalties(&[1, 2, 3, 1, 2], &s, &none()), vec![(3, 0.8)]);
    assert_eq!(dry_penalty(2, &s), 0.8);
}

#[test]
fn the_longest_match_wins_when_a_token_follows_several_earlier_occurrences() {
    // `0 1 2 3 5 9 1 2 3 9 1 2`: 3 followed `1 2` twice. The first time it was preceded by 0 (n = 2
    // against the suffix `9 1 2`), the second time by `9` (n = 3). The penalty takes the longest, not the
    // sum.
    let h = [0, 1, 2, 3, 5, 9, 1, 2, 3, 9, 1, 2];
    let s = dry(1.0, 2.0, 2, -1);
    assert_eq!(dry_repeats(&h, &s, &none()), vec![(3, 3)]);
    assert_eq!(
        dry_penalties(&h, &s, &none()),
        vec![(3, 2.0)],
        "2^(3 - 2), not 2^0 and not 2^0 + 2^1"
    );
}

#[test]
fn a_sequence_breaker_stops_the_match() {
    let s = dry(1.0, 2.0, 2, -1);
    // `9 1 2 3 4 9 1 2 3`: without breakers 4 would extend `9 1 2 3` (n = 4, 2^2 = 4).
    let h = [9, 1, 2, 3, 4, 9, 1, 2, 3];
    assert_eq!(dry_penalties(&h, &s, &none()), vec![(4, 4.0)]);
    // With 9 a breaker, the match stops at it: n = 3, 2^1 = 2.
    let nine = DryBreakers::from_sequences(&[vec![9]]);
    assert_eq!(dry_penalties(&h, &s, &nine), vec![(4, 2.0)]);
    // A breaker among the newest tokens leaves too short a match: nothing at all.
    let two = DryBreakers::from_sequences(&[vec![2]]);
    assert!(dry_penalties(&[1, 2, 3, 1, 2], &s, &two).is_empty());
    // A token that is itself a breaker is never penalised, though it would extend `1 2` (n = 2).
    let seven = DryBreakers::from_sequences(&[vec![7]]);
    let h = [1, 2, 7, 1, 2];
    assert_eq!(dry_repeats(&h, &s, &seven), vec![(7, 2)]);
    assert!(dry_penalties(&h, &s, &seven).is_empty());
    assert_eq!(dry_penalties(&h, &s, &none()), vec![(7, 1.0)]);
}

#[test]
fn a_multi_token_restart_sequence_stops_the_match_only_when_complete() {
    let s = dry(1.0, 2.0, 2, -1);
    let five_six = DryBreakers::from_sequences(&[vec![5, 6]]);
    // `5 6 1 2 3 4 5 6 1 2 3`: without breakers 4 extends `5 6 1 2 3` (n = 5, 2^3); the restart
    // sequence `5 6` caps the match at the 3 tokens after it (2^1).
    let h = [5, 6, 1, 2, 3, 4, 5, 6, 1, 2, 3];
    assert_eq!(dry_penalties(&h, &s, &none()), vec![(4, 8.0)]);
    assert_eq!(dry_penalties(&h, &s, &five_six), vec![(4, 2.0)]);
    // `5 8` is not the sequence: the match runs on.
    let h = [5, 8, 1, 2, 3, 4, 5, 8, 1, 2, 3];
    assert_eq!(dry_penalties(&h, &s, &five_six), vec![(4, 8.0)]);
    // Only a single-token breaker is spared: 5 (the head of `5 6`) is penalised like any token.
    let h = [1, 2, 5, 1, 2];
    assert_eq!(dry_penalties(&h, &s, &five_six), vec![(5, 1.0)]);
}

#[test]
fn breaker_strings_map_onto_tokens_as_llama_cpp_does() {
    // A made-up vocabulary. `\n` is in tokens 2 and 3, so both are breakers on their own. `bc` is in no
    // token, but "b" and "ab" end with its first character: each heads a restart sequence whose tail is
    // the tokenisation of the rest, "c" = [6].
    let vocab = ["a", "b", "\n", "x\ny", ":", "ab", "c", "\"q"];
    let tokenize = |text: &str| -> Option<Vec<u32>> {
        Some(vec![vocab.iter().position(|v| *v == text)? as u32])
    };
    let b = DryBreakers::from_vocab(
        &["\n".to_string(), "bc".to_string(), String::new()],
        vocab.len(),
        |id| vocab[id as usize].as_bytes().to_vec(),
        tokenize,
    );
    assert!(b.is_single_token_breaker(2) && b.is_single_token_breaker(3));
    for id in [0, 1, 4, 5, 6, 7] {
        assert!(!b.is_single_token_breaker(id), "token {id}");
    }
    assert_eq!(b.head_count(), 4, "\\n, x\\ny, b, ab");
    assert_eq!(
        b,
        DryBreakers::from_sequences(&[vec![2], vec![3], vec![1, 6], vec![5, 6]])
    );
    // `0 1 6 0 7 0 1 6 0`: without breakers 7 would extend `0 1 6 0` (n = 4); `b c` (1 6) two tokens
    // back caps matches at 1, under the allowed 2.
    let s = dry(1.0, 2.0, 2, -1);
    let h = [0, 1, 6, 0, 7, 0, 1, 6, 0];
    assert_eq!(dry_penalties(&h, &s, &none()), vec![(7, 4.0)]);
    assert!(dry_penalties(&h, &s, &b).is_empty());
}

#[test]
fn the_window_limits_how_far_back_it_looks() {
    let h = [1, 2, 3, 4, 1, 2, 3];
    let at = |last_n| dry_repeats(&h, &dry(1.0, 2.0, 2, last_n), &none());
    // The whole history (-1, or a window at least as long): `1 2 3` then 4, n = 3.
    assert_eq!(at(-1), vec![(4, 3)]);
    assert_eq!(at(7), vec![(4, 3)]);
    assert_eq!(at(100), vec![(4, 3)]);
    // Six tokens, `2 3 4 1 2 3`: the earlier occurrence is cut to `2 3`, n = 2.
    assert_eq!(at(6), vec![(4, 2)]);
    // Four tokens, `4 1 2 3`: no earlier occurrence at all.
    assert!(at(4).is_empty());
    // 0 turns DRY off.
    assert!(at(0).is_empty());
}

#[test]
fn multiplier_zero_changes_nothing_bit_for_bit() {
    let h = [1, 2, 3, 4, 1, 2, 3];
    let off = dry(0.0, 1.75, 2, -1);
    let mut l = logits();
    apply_dry(&mut l, &h, &off, &none());
    assert_eq!(bits(&l), bits(&logits()));
    // Nor does the chain: same stages (no "dry" stage), same probabilities, same choice.
    let plain = SamplerSettings::default();
    let a = run_chain(&logits(), &h, &off, 8, 0.3);
    let b = run_chain(&logits(), &h, &plain, 8, 0.3);
    assert_eq!(a.shown, b.shown);
    assert_eq!(a.stages, b.stages);
    assert_eq!(bits(&a.final_probs), bits(&b.final_probs));
    assert_eq!(a.planned, b.planned);
    assert!(a.stages.iter().all(|st| st.name != "dry"));
}

#[test]
fn the_dry_stage_sits_after_the_penalties_and_shows_the_change() {
    let h = [1, 2, 3, 4, 1, 2, 3];
    let s = SamplerSettings {
        repeat_penalty: 1.3,
        ..dry(0.8, 1.75, 2, -1)
    };
    let mut l = vec![0.0; 16];
    l[4] = 2.0;
    let out = run_chain_with(&l, &h, &s, &none(), 4, 0.5);
    let names: Vec<&str> = out.stages.iter().map(|st| st.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "raw",
            "penalties",
            "dry",
            "temperature",
            "top-k",
            "top-p",
            "min-p"
        ]
    );
    // Token 4 is shown first; the repetition penalty divides its logit (2 / 1.3), DRY then subtracts 1.4.
    assert_eq!(out.shown[0], 4);
    let pen = &out.stages[1];
    let dry_stage = &out.stages[2];
    let softmax_first = |x: f32| x.exp() / (x.exp() + 15.0);
    assert!((pen.probs[0] - softmax_first(2.0 / 1.3)).abs() < 1e-5);
    assert!((dry_stage.probs[0] - softmax_first(2.0 / 1.3 - 1.4)).abs() < 1e-5);
    // On with nothing to penalise yet: the stage is still shown, and changes nothing.
    let out = run_chain_with(&l, &[1, 2], &s, &none(), 4, 0.5);
    let dry_stage = out.stages.iter().find(|st| st.name == "dry").unwrap();
    assert_eq!(dry_stage.probs, out.stages[1].probs);
}

#[test]
fn the_exponent_is_clamped_as_in_llama_cpp() {
    // base 2: max exponent = floor(88.7228391 / ln 2) = 128, so 2^128 (finite as f64, then f32::MAX < it).
    let s = dry(1e-30, 2.0, 2, -1);
    assert_eq!(dry_penalty(2 + 128, &s), dry_penalty(2 + 1000, &s));
    assert!(dry_penalty(2 + 1000, &s).is_finite());
    assert_eq!(dry_penalty(2 + 1000, &s), expected(1e-30, 2.0, 128));
    // base 1 (no growth): no clamp, every repeat costs the multiplier.
    assert_eq!(dry_penalty(500, &dry(0.5, 1.0, 2, -1)), 0.5);
}

/// The plain definition, quadratic: for each earlier position `j`, how many tokens ending at `j` equal
/// the newest ones, capped by the newest complete single-token breaker.
fn naive(h: &[u32], allowed: usize, breakers: &[u32]) -> Vec<(u32, usize)> {
    let m = h.len();
    if m <= allowed {
        return vec![];
    }
    let limit = (0..m)
        .find(|&i| breakers.contains(&h[m - 1 - i]))
        .unwrap_or(m);
    if limit < allowed {
        return vec![];
    }
    let mut best = std::collections::BTreeMap::new();
    for j in 0..m - 1 {
        let mut n = 0;
        while n <= j && h[j - n] == h[m - 1 - n] {
            n += 1;
        }
        let n = n.min(limit);
        if n >= allowed {
            let e = best.entry(h[j + 1]).or_insert(0);
            *e = n.max(*e);
        }
    }
    best.into_iter().collect()
}

#[test]
fn the_z_algorithm_agrees_with_the_plain_definition() {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n) as u32
    };
    for case in 0..400 {
        let len = 1 + next(60) as usize;
        let alphabet = 2 + next(4) as u64;
        let h: Vec<u32> = (0..len).map(|_| next(alphabet)).collect();
        let allowed = 1 + next(3) as usize;
        let s = dry(1.0, 1.5, allowed, -1);
        assert_eq!(
            dry_repeats(&h, &s, &none()),
            naive(&h, allowed, &[]),
            "case {case}: {h:?}"
        );
        let b = DryBreakers::from_sequences(&[vec![0]]);
        assert_eq!(
            dry_repeats(&h, &s, &b),
            naive(&h, allowed, &[0]),
            "case {case} with breaker 0: {h:?}"
        );
    }
}

#[test]
fn settings_without_dry_fields_still_parse_and_dry_ranges_are_checked() {
    let mut v = serde_json::to_value(SamplerSettings::default()).unwrap();
    for k in [
        "dry_multiplier",
        "dry_base",
        "dry_allowed_length",
        "dry_penalty_last_n",
        "dry_sequence_breakers",
    ] {
        assert!(v.as_object_mut().unwrap().remove(k).is_some(), "{k}");
    }
    let old: SamplerSettings = serde_json::from_value(v).unwrap();
    assert_eq!(old, SamplerSettings::default());
    let d = SamplerSettings::default();
    assert_eq!(
        (
            d.dry_multiplier,
            d.dry_base,
            d.dry_allowed_length,
            d.dry_penalty_last_n
        ),
        (0.0, 1.75, 2, -1)
    );
    assert_eq!(d.dry_sequence_breakers, ["\n", ":", "\"", "*"]);
    let bad = |s: SamplerSettings, says: &str| {
        let e = s.validate().unwrap_err();
        assert!(e.contains(says), "{e}");
    };
    bad(
        SamplerSettings {
            dry_multiplier: 6.0,
            ..d.clone()
        },
        "dry-multiplier 6 is out of range: use 0 to 5",
    );
    bad(
        SamplerSettings {
            dry_base: 0.5,
            ..d.clone()
        },
        "dry-base 0.5 is out of range: use 1 to 5",
    );
    bad(
        SamplerSettings {
            dry_allowed_length: 0,
            ..d.clone()
        },
        "dry-allowed-length 0 is out of range: use 1 to 20",
    );
    bad(
        SamplerSettings {
            dry_penalty_last_n: -2,
            ..d.clone()
        },
        "dry-penalty-last-n -2 is out of range: use -1 to 131072",
    );
    bad(
        SamplerSettings {
            dry_sequence_breakers: vec![String::new()],
            ..d.clone()
        },
        "use 1 to 40 bytes",
    );
    assert!(dry(0.8, 1.75, 2, -1).validate().is_ok());
}

/// The smallest period `p` with the earliest start `s` such that the tokens from `s` on repeat with
/// period `p` at least twice over: returns `(s, p)`.
fn find_loop(t: &[u32]) -> Option<(usize, usize)> {
    (1..=t.len() / 2)
        .filter_map(|p| {
            let mut s = t.len();
            while s > 0 && (s - 1 + p >= t.len() || t[s - 1] == t[s - 1 + p]) {
                s -= 1;
            }
            (t.len() - s >= 2 * p).then_some((s, p))
        })
        .min_by_key(|&(s, p)| (s + p, p))
}

#[test]
fn dry_breaks_the_greedy_loop_of_the_real_model() {
    const STEPS: usize = 64;
    let run = |settings: SamplerSettings| {
        let opts = SessionOptions {
            top_k_shown: 40,
            ..SessionOptions::default()
        };
        let (mut session, _) = load_session(
            &support::real_model(),
            &LoadOptions::default(),
            settings,
            opts,
            &mut |_| {},
        )
        .unwrap();
        session
            .prefill_text("The capital of France is", false)
            .unwrap();
        (0..STEPS)
            .map(|_| session.step(Choice::Sample).unwrap())
            .collect::<Vec<_>>()
    };
    let greedy = SamplerSettings {
        greedy: true,
        ..SamplerSettings::default()
    };
    let plain = run(greedy.clone());
    let a: Vec<u32> = plain.iter().map(|r| r.committed.token.id).collect();
    let (start, period) =
        find_loop(&a).unwrap_or_else(|| panic!("greedy decoding loops on this prompt: {a:?}"));
    let with_dry = run(SamplerSettings {
        dry_multiplier: 0.8,
        ..greedy
    });
    let b: Vec<u32> = with_dry.iter().map(|r| r.committed.token.id).collect();
    let d = (0..STEPS)
        .find(|&i| a[i] != b[i])
        .unwrap_or_else(|| panic!("DRY changed nothing: {a:?}"));
    // Up to `d` both paths agree, so DRY saw the same history; at `d` the plain path repeated a token of
    // its loop, and DRY took another.
    assert!(
        d >= start + period,
        "DRY changes nothing before the loop repeats (loop from step {start}, period {period}; \
         changed at step {d})"
    );
    assert_eq!(
        a[d],
        a[d - period],
        "at step {d} the plain path continues its loop"
    );
    // The chain at that step shows DRY doing it: the loop's token loses probability in the dry stage.
    let dist = &with_dry[d].chosen_from;
    let i = dist
        .candidates
        .iter()
        .position(|c| c.token.id == a[d])
        .expect("the loop's token is still among the shown candidates");
    let stage = |name: &str| dist.stages.iter().find(|s| s.name == name).unwrap();
    assert!(
        stage("dry").probs[i] < stage("penalties").probs[i],
        "DRY lowered the loop's token"
    );
    assert!(plain[d].chosen_from.stages.iter().all(|s| s.name != "dry"));
}
