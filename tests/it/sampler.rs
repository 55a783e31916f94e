//! Each sampler stage does what its name says, on hand-made logits.
use crate::support::lcg::Lcg;
use nexttoken::engine::sampler::{apply_penalties, entropy, run_chain, softmax, uniform};
use nexttoken::protocol::SamplerSettings;

/// Settings with every stage off, so a test can turn on exactly one.
fn plain() -> SamplerSettings {
    SamplerSettings {
        greedy: false,
        temperature: 1.0,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.0,
        repeat_penalty: 1.0,
        frequency_penalty: 0.0,
        presence_penalty: 0.0,
        penalty_last_n: 64,
        dry_multiplier: 0.0,
        dry_base: 1.75,
        dry_allowed_length: 2,
        dry_penalty_last_n: -1,
        dry_sequence_breakers: vec![],
        seed: 1,
    }
}

/// Logits whose softmax is exactly `probs`.
fn logits_of(probs: &[f32]) -> Vec<f32> {
    probs.iter().map(|p| p.ln()).collect()
}

fn stage<'a>(
    out: &'a nexttoken::engine::sampler::ChainOutput,
    name: &str,
) -> &'a nexttoken::protocol::StageReport {
    out.stages.iter().find(|s| s.name == name).unwrap()
}

#[test]
fn top_p_keeps_the_smallest_set_reaching_p() {
    let probs = [0.5, 0.2, 0.15, 0.1, 0.05];
    let s = SamplerSettings {
        top_p: 0.8,
        ..plain()
    };
    let out = run_chain(&logits_of(&probs), &[], &s, 5, 0.5);
    // 0.5 + 0.2 = 0.7 < 0.8, + 0.15 = 0.85 >= 0.8: three tokens.
    assert_eq!(stage(&out, "top-p").kept, 3);
    assert!((stage(&out, "top-p").kept_mass - 0.85).abs() < 1e-5);
    assert_eq!(out.final_probs[3], 0.0);
    assert!((out.final_probs[0] - 0.5 / 0.85).abs() < 1e-5);
    // Exactly reaching p counts: 0.5 + 0.2 = 0.7.
    let s = SamplerSettings {
        top_p: 0.7,
        ..plain()
    };
    assert_eq!(
        stage(&run_chain(&logits_of(&probs), &[], &s, 5, 0.5), "top-p").kept,
        2
    );
}

#[test]
fn top_k_keeps_k_and_renormalises() {
    let probs = [0.1, 0.4, 0.3, 0.2];
    let s = SamplerSettings {
        top_k: 2,
        ..plain()
    };
    let out = run_chain(&logits_of(&probs), &[], &s, 4, 0.0);
    assert_eq!(out.shown, vec![1, 2, 3, 0]);
    assert_eq!(stage(&out, "top-k").kept, 2);
    let sum: f32 = out.final_probs.iter().sum();
    assert!((sum - 1.0).abs() < 1e-5);
    assert_eq!(out.final_probs[2], 0.0);
    assert!((out.final_probs[0] - 0.4 / 0.7).abs() < 1e-5);
}

#[test]
fn min_p_cuts_below_a_fraction_of_the_best() {
    let probs = [0.6, 0.25, 0.1, 0.05];
    let s = SamplerSettings {
        min_p: 0.2,
        ..plain()
    }; // threshold 0.12
    let out = run_chain(&logits_of(&probs), &[], &s, 4, 0.0);
    assert_eq!(stage(&out, "min-p").kept, 2);
}

/// Both cut on the probabilities after temperature, as the settings panel says: a student who sets
/// min-p 0.05 against the model's own 89.3% and 6.5% (above 5% of the top) sees the second cut at
/// T 0.8, where its tempered share is 3.8% of the top's.
#[test]
fn min_p_and_top_p_read_the_tempered_probabilities() {
    let probs = [0.893, 0.065, 0.042];
    let min_p = |temperature| SamplerSettings {
        min_p: 0.05,
        temperature,
        ..plain()
    };
    let kept = |s: &SamplerSettings, name| {
        stage(&run_chain(&logits_of(&probs), &[], s, 3, 0.0), name).kept
    };
    assert_eq!(kept(&min_p(1.0), "min-p"), 2, "0.065 >= 0.05 * 0.893");
    assert_eq!(kept(&min_p(0.8), "min-p"), 1, "(0.065 / 0.893)^1.25 < 0.05");
    // top-p 0.85 over 0.6, 0.3, 0.1: two reach it untempered; at T 2 (0.47, 0.33, 0.19) it takes three.
    let probs = [0.6, 0.3, 0.1];
    let top_p = |temperature| SamplerSettings {
        top_p: 0.85,
        temperature,
        ..plain()
    };
    let kept =
        |s: &SamplerSettings| stage(&run_chain(&logits_of(&probs), &[], s, 3, 0.0), "top-p").kept;
    assert_eq!((kept(&top_p(1.0)), kept(&top_p(2.0))), (2, 3));
}

#[test]
fn temperature_sharpens_and_flattens() {
    let logits = [2.0, 1.0, 0.0];
    let hot = run_chain(
        &logits,
        &[],
        &SamplerSettings {
            temperature: 2.0,
            ..plain()
        },
        3,
        0.0,
    );
    let cold = run_chain(
        &logits,
        &[],
        &SamplerSettings {
            temperature: 0.5,
            ..plain()
        },
        3,
        0.0,
    );
    let raw = softmax(&logits);
    assert!(stage(&cold, "temperature").probs[0] > raw[0]);
    assert!(stage(&hot, "temperature").probs[0] < raw[0]);
    assert!(
        entropy(&stage(&hot, "temperature").probs) > entropy(&stage(&cold, "temperature").probs)
    );
}

#[test]
fn penalties_lower_repeated_tokens_and_can_rerank() {
    let logits = [3.0, 2.9, -1.0];
    let mut l = logits.to_vec();
    apply_penalties(
        &mut l,
        &[0, 2],
        &SamplerSettings {
            repeat_penalty: 1.5,
            ..plain()
        },
    );
    assert_eq!(l, vec![2.0, 2.9, -1.5]); // positive divided, negative multiplied, unseen unchanged
    let s = SamplerSettings {
        repeat_penalty: 1.5,
        ..plain()
    };
    let out = run_chain(&logits, &[0], &s, 3, 0.0);
    assert_eq!(out.shown[0], 1, "the repeated token drops below the other");
    let mut l = logits.to_vec();
    apply_penalties(
        &mut l,
        &[1, 1, 1],
        &SamplerSettings {
            frequency_penalty: 0.5,
            presence_penalty: 0.25,
            ..plain()
        },
    );
    assert_eq!(l, vec![3.0, 2.9 - 1.5 - 0.25, -1.0]);
}

/// llama.cpp's `penalty_last_n`: the penalties count occurrences over the last N tokens only. Frequency
/// subtracts count × f, presence subtracts p once if the count is above 0, and the repeat penalty divides
/// (or multiplies) once; a token seen only before the window is left alone.
#[test]
fn only_tokens_inside_the_penalty_window_are_penalised() {
    let logits = [3.0, 2.0, 1.0, -1.0];
    // Oldest first: token 0 three times long ago, then 1, 2, 1, 3 in the last four.
    let history = [0, 0, 0, 1, 2, 1, 3];
    let window = SamplerSettings {
        frequency_penalty: 0.5,
        presence_penalty: 0.25,
        repeat_penalty: 2.0,
        penalty_last_n: 4,
        ..plain()
    };
    let mut l = logits.to_vec();
    apply_penalties(&mut l, &history, &window);
    assert_eq!(l[0], 3.0, "token 0 is outside the last 4: untouched");
    assert_eq!(l[1], 2.0 / 2.0 - 2.0 * 0.5 - 0.25, "twice inside");
    assert_eq!(l[2], 1.0 / 2.0 - 0.5 - 0.25, "once inside");
    assert_eq!(l[3], -2.0 - 0.5 - 0.25, "negative: multiplied by 2");
    // One wider, the most recent 0 comes in: it counts once, not three times.
    let mut l = logits.to_vec();
    apply_penalties(
        &mut l,
        &history,
        &SamplerSettings {
            penalty_last_n: 5,
            ..window.clone()
        },
    );
    assert_eq!(l[0], 3.0 / 2.0 - 0.5 - 0.25);
    // The whole history: all three count for frequency, presence still once.
    let mut l = logits.to_vec();
    apply_penalties(
        &mut l,
        &history,
        &SamplerSettings {
            penalty_last_n: 64,
            ..window.clone()
        },
    );
    assert_eq!(l[0], 3.0 / 2.0 - 3.0 * 0.5 - 0.25);
    // A window of 0 turns every penalty off.
    let mut l = logits.to_vec();
    apply_penalties(
        &mut l,
        &history,
        &SamplerSettings {
            penalty_last_n: 0,
            ..window
        },
    );
    assert_eq!(l, logits.to_vec());
}

#[test]
fn greedy_picks_the_argmax() {
    let logits = [0.1, 5.0, 4.9, -2.0];
    let out = run_chain(
        &logits,
        &[],
        &SamplerSettings {
            greedy: true,
            ..plain()
        },
        4,
        0.999,
    );
    assert_eq!(out.planned, 1);
    assert!(out.draw.is_none());
}

#[test]
fn temperature_zero_is_greedy_over_the_penalised_logits() {
    // Token 1 leads the raw logits, but the repetition penalty (5.0 / 1.5 = 3.33) puts token 2 first.
    let logits = [0.1, 5.0, 4.9, -2.0];
    let s = SamplerSettings {
        temperature: 0.0,
        repeat_penalty: 1.5,
        ..plain()
    };
    // u = 0.999 would land on the last survivor of a random draw, never on the argmax.
    let out = run_chain(&logits, &[1], &s, 4, 0.999);
    assert_eq!(out.planned, 2, "the argmax of the penalised logits");
    assert!(out.draw.is_none(), "temperature 0 draws nothing");
    // Below zero too, as in llama.cpp.
    let cold = SamplerSettings {
        temperature: -1.0,
        ..plain()
    };
    let out = run_chain(&logits, &[], &cold, 4, 0.999);
    assert_eq!((out.planned, out.draw), (1, None));
}

#[test]
fn the_draw_lands_where_u_falls_in_the_cumulative_distribution() {
    let probs = [0.5, 0.3, 0.2];
    let l = logits_of(&probs);
    for (u, want) in [
        (0.1, 0),
        (0.49, 0),
        (0.51, 1),
        (0.79, 1),
        (0.81, 2),
        (0.999, 2),
    ] {
        let out = run_chain(&l, &[], &plain(), 3, u);
        assert_eq!(out.planned, want, "u = {u}");
        assert_eq!(out.draw.as_ref().unwrap().rank, want as usize);
    }
}

#[test]
fn seeded_draws_reproduce_and_depend_on_seed_and_position() {
    assert_eq!(uniform(42, 7), uniform(42, 7));
    assert_ne!(uniform(42, 7), uniform(43, 7));
    assert_ne!(uniform(42, 7), uniform(42, 8));
    let us: Vec<f32> = (0..10_000).map(|p| uniform(9, p)).collect();
    assert!(us.iter().all(|&u| (0.0..1.0).contains(&u)));
    let mean = us.iter().sum::<f32>() / us.len() as f32;
    assert!((mean - 0.5).abs() < 0.02, "mean of uniforms {mean}");
}

#[test]
fn top_p_over_a_large_flat_vocabulary_sorts_beyond_the_first_block() {
    // 2000 equal tokens: top-p just under 0.9 (so float sums cannot land either side) needs 1800 of them, more than the first partial sort holds.
    let l = vec![0.0f32; 2000];
    let out = run_chain(
        &l,
        &[],
        &SamplerSettings {
            top_p: 0.8999,
            ..plain()
        },
        5,
        0.3,
    );
    assert_eq!(stage(&out, "top-p").kept, 1800);
}

/// A token's fate, asked alone, is what the whole chain (every id shown) makes of it: its position by
/// penalised score, and its final probability (0 where a stage cuts it), under each kind of setting.
#[test]
fn a_tokens_fate_matches_the_full_chain() {
    use nexttoken::engine::sampler::{fate, rank_of, DryBreakers};
    let n = 40;
    let logits: Vec<f32> = (0..n)
        .map(|i| ((i * 7919 % 23) as f32 * 0.37).sin() * 4.0)
        .collect();
    let history: Vec<u32> = vec![3, 9, 3, 17, 9, 3, 25];
    let mut settings = vec![plain()];
    settings.push(SamplerSettings {
        greedy: true,
        repeat_penalty: 1.5,
        ..plain()
    });
    settings.push(SamplerSettings {
        temperature: 0.7,
        top_k: 12,
        repeat_penalty: 1.3,
        ..plain()
    });
    settings.push(SamplerSettings {
        top_p: 0.8,
        frequency_penalty: 0.4,
        presence_penalty: 0.2,
        ..plain()
    });
    settings.push(SamplerSettings {
        min_p: 0.05,
        temperature: 1.4,
        ..plain()
    });
    for s in &settings {
        let full = run_chain(&logits, &history, s, n, 0.5);
        for id in 0..n as u32 {
            let f = fate(&logits, &history, s, &DryBreakers::none(), id);
            let row = full.shown.iter().position(|&x| x == id).unwrap();
            assert_eq!(f.sampled_rank, row, "{s:?} id {id}");
            assert_eq!(f.sampled_prob, full.final_probs[row], "{s:?} id {id}");
            assert_eq!(f.rank, rank_of(&logits, id));
            assert_eq!(f.prob, full.raw_prob(&logits, id));
        }
    }
}

/// A reproducible stream of pseudo-random numbers (the shared LCG's high bits) for the generated cases.
fn lcg(s: u64) -> impl FnMut() -> u32 {
    let mut g = Lcg(s);
    move || (g.next() >> 33) as u32
}

/// `ranks_of` (one pass for all the shown candidates) gives `rank_of`'s answer for every id: ties,
/// repeated ids, infinities and NaN included.
#[test]
fn ranks_of_many_ids_match_one_at_a_time() {
    use nexttoken::engine::sampler::{rank_of, ranks_of};
    let mut next = lcg(12345);
    for case in 0..50 {
        let n = 1 + (next() % 3000) as usize;
        // Few distinct values, so ties are common.
        let mut logits: Vec<f32> = (0..n).map(|_| (next() % 40) as f32 * 0.25 - 5.0).collect();
        if case % 5 == 0 {
            logits[next() as usize % n] = f32::NAN;
            logits[next() as usize % n] = f32::NEG_INFINITY;
            logits[next() as usize % n] = f32::INFINITY;
        }
        let ids: Vec<u32> = (0..1 + next() % 12).map(|_| next() % n as u32).collect();
        let one: Vec<usize> = ids.iter().map(|&i| rank_of(&logits, i)).collect();
        assert_eq!(ranks_of(&logits, &ids), one, "case {case}");
    }
    assert_eq!(ranks_of(&[1.0, 2.0], &[]), Vec::<usize>::new());
}

/// `top_n` (one pass with a rising threshold, whole chunks skipped by one compare) gives the first `n`
/// of a full sort, best first and ties by lower id: lengths that do and do not fill the last chunk,
/// infinities included.
#[test]
fn top_n_is_the_head_of_a_full_sort() {
    use nexttoken::engine::sampler::top_n;
    let mut next = lcg(777);
    for case in 0..60 {
        let len = 1 + (next() % 5000) as usize;
        let mut values: Vec<f32> = (0..len)
            .map(|_| (next() % 300) as f32 * 0.1 - 15.0)
            .collect();
        if case % 4 == 0 {
            values[next() as usize % len] = f32::INFINITY;
            values[next() as usize % len] = f32::NEG_INFINITY;
        }
        // Rising values make the threshold climb all the way (the buffer is cut back often).
        if case % 7 == 0 {
            values.sort_by(f32::total_cmp);
        }
        let mut all: Vec<u32> = (0..len as u32).collect();
        all.sort_by(|&a, &b| {
            values[b as usize]
                .total_cmp(&values[a as usize])
                .then(a.cmp(&b))
        });
        for n in [1, 7, 40, 512, len] {
            let want = &all[..n.min(len)];
            assert_eq!(top_n(&values, n), want, "case {case} len {len} n {n}");
        }
    }
}
