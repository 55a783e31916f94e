//! Engine tests on a tiny random llama GGUF written by the test: KV cache, rewind, attention, sampling.

use crate::support;

use nexttoken::engine::forward::linear::MatmulPath;
use nexttoken::engine::forward::model::{ForwardOptions, Model};
use nexttoken::engine::gguf::GgufFile;
use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::session::{Choice, Session, SessionError, SessionOptions};
use nexttoken::protocol::{SamplerSettings, Source};
use support::tiny;

fn session_with(
    dir: &tempfile::TempDir,
    settings: SamplerSettings,
    opts: SessionOptions,
) -> Session {
    let path = tiny::write(dir.path());
    load_session(&path, &LoadOptions::default(), settings, opts, &mut |_| {})
        .unwrap()
        .0
}

fn session(dir: &tempfile::TempDir) -> Session {
    session_with(dir, SamplerSettings::default(), SessionOptions::default())
}

/// The tiny model alone, for tests of the forward pass itself.
fn model(dir: &tempfile::TempDir) -> Model {
    let mut g = GgufFile::open(&tiny::write(dir.path())).unwrap();
    Model::load(&mut g, MatmulPath::Fast).unwrap()
}

const PROMPT: [u32; 6] = [72, 101, 108, 108, 111, 32];

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn kv_cache_and_recompute_give_the_same_logits() {
    let dir = tempfile::tempdir().unwrap();
    let m = &mut model(&dir);
    let seq: Vec<u32> = vec![5, 17, 200, 33, 33, 90, 256, 12, 1];
    // Incremental: a prefill of 4, then one token at a time through the cache.
    m.forward(&seq[..4], 0, ForwardOptions::default()).unwrap();
    let mut cached = Vec::new();
    for (i, &t) in seq.iter().enumerate().skip(4) {
        cached.push(
            m.forward(&[t], i, ForwardOptions::default())
                .unwrap()
                .logits,
        );
    }
    // Recompute: the whole prefix from position 0 each time.
    for (k, logits) in cached.iter().enumerate() {
        m.cache.clear();
        let full = m
            .forward(&seq[..5 + k], 0, ForwardOptions::default())
            .unwrap()
            .logits;
        let d = max_diff(logits, &full);
        assert!(
            d < 1e-4,
            "position {}: cached and recomputed logits differ by {d}",
            4 + k
        );
    }
}

#[test]
fn session_with_cache_off_matches_cache_on_and_refeeds_everything() {
    let dir = tempfile::tempdir().unwrap();
    let greedy = SamplerSettings {
        greedy: true,
        ..SamplerSettings::default()
    };
    let mut on = session_with(&dir, greedy.clone(), SessionOptions::default());
    let mut off = session_with(
        &dir,
        greedy,
        SessionOptions {
            kv_cache: false,
            ..SessionOptions::default()
        },
    );
    on.prefill_ids(&PROMPT).unwrap();
    off.prefill_ids(&PROMPT).unwrap();
    for i in 0..5 {
        let a = on.step(Choice::Sample).unwrap();
        let b = off.step(Choice::Sample).unwrap();
        assert_eq!(a.committed.token.id, b.committed.token.id);
        assert_eq!(
            a.pass.tokens_fed, 1,
            "with the cache a step feeds one token"
        );
        assert_eq!(
            b.pass.tokens_fed,
            PROMPT.len() + i + 1,
            "without it a step re-reads the sequence"
        );
        assert!(b.pass.kv_bytes == 0 && a.pass.kv_bytes > 0);
        for (x, y) in a.next.candidates.iter().zip(&b.next.candidates) {
            assert!((x.prob - y.prob).abs() < 1e-5);
        }
    }
}

#[test]
fn rewind_then_step_reproduces_the_distribution() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    s.prefill_ids(&PROMPT).unwrap();
    let first: Vec<_> = (0..4).map(|_| s.step(Choice::Sample).unwrap()).collect();
    for w in first.windows(2) {
        assert!(
            std::sync::Arc::ptr_eq(&w[0].next, &w[1].chosen_from),
            "a step chooses from the distribution the step before reported, not a copy of it"
        );
    }
    let passes = s.forward_passes();
    assert_eq!(s.rewind(2).unwrap(), 2);
    assert_eq!(
        s.forward_passes(),
        passes,
        "rewind alone runs no forward pass"
    );
    assert_eq!(s.distribution().unwrap(), *first[1].next);
    let again: Vec<_> = (0..2).map(|_| s.step(Choice::Sample).unwrap()).collect();
    for (a, b) in first[2..].iter().zip(&again) {
        assert_eq!(a.chosen_from, b.chosen_from);
        assert_eq!(a.committed.token, b.committed.token);
    }
    // Rewind never eats the prompt.
    assert_eq!(s.rewind(100).unwrap(), 4);
    assert_eq!(s.len(), PROMPT.len());
}

#[test]
fn attention_rows_sum_to_one_and_are_zero_above_the_diagonal() {
    let dir = tempfile::tempdir().unwrap();
    let seq = [5u32, 17, 200, 33, 90, 12, 1, 40];
    let out = model(&dir)
        .forward(
            &seq,
            0,
            ForwardOptions {
                capture_rows: seq.len(),
                all_logits: false,
                lens: false,
            },
        )
        .unwrap();
    let a = &out.attention;
    assert_eq!((a.first_row, a.rows, a.kv_len), (0, seq.len(), seq.len()));
    for lh in 0..tiny::N_LAYER * tiny::N_HEAD {
        for r in 0..a.rows {
            let row = &a.data[(lh * a.rows + r) * a.kv_len..][..a.kv_len];
            let sum: f32 = row.iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "row {r} sums to {sum}");
            assert!(
                row[r + 1..].iter().all(|&w| w == 0.0),
                "row {r} sees the future: {row:?}"
            );
        }
    }
    // The session's window over a short sequence holds whole rows.
    let mut s = session(&dir);
    s.prefill_ids(&seq).unwrap();
    let report = s.step(Choice::Sample).unwrap();
    let w = report.attention;
    assert_eq!((w.start, w.len), (0, seq.len() + 1));
    for l in 0..w.n_layer {
        for h in 0..w.n_head {
            for r in 0..w.len {
                let sum: f32 = (0..w.len).map(|c| w.get(l, h, r, c)).sum();
                assert!((sum - 1.0).abs() < 1e-5);
                assert!((r + 1..w.len).all(|c| w.get(l, h, r, c) == 0.0));
            }
        }
    }
}

#[test]
fn seeded_sampling_reproduces_and_greedy_picks_the_argmax() {
    let dir = tempfile::tempdir().unwrap();
    let hot = SamplerSettings {
        temperature: 1.5,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.0,
        seed: 7,
        ..Default::default()
    };
    let run = |settings: SamplerSettings| {
        let mut s = session_with(&dir, settings, SessionOptions::default());
        s.prefill_ids(&PROMPT).unwrap();
        (0..12)
            .map(|_| s.step(Choice::Sample).unwrap().committed.token.id)
            .collect::<Vec<_>>()
    };
    let a = run(hot.clone());
    assert_eq!(a, run(hot.clone()), "same seed, same tokens");
    assert_ne!(
        a,
        run(SamplerSettings { seed: 8, ..hot }),
        "another seed, another path"
    );

    let mut s = session_with(
        &dir,
        SamplerSettings {
            greedy: true,
            ..Default::default()
        },
        SessionOptions::default(),
    );
    s.prefill_ids(&PROMPT).unwrap();
    for _ in 0..5 {
        let r = s.step(Choice::Sample).unwrap();
        assert_eq!(r.committed.rank, 0);
        assert_eq!(r.committed.source, Source::Greedy);
        assert_eq!(r.committed.token.id, r.chosen_from.candidates[0].token.id);
        assert!(r.chosen_from.draw.is_none());
    }
}

#[test]
fn a_setting_change_reranks_without_a_forward_pass() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    s.prefill_ids(&PROMPT).unwrap();
    let before = s.distribution().unwrap();
    let passes = s.forward_passes();
    let mut settings = s.settings().clone();
    settings.temperature = 0.3;
    s.set_settings(settings);
    let after = s.distribution().unwrap();
    assert_eq!(s.forward_passes(), passes);
    assert_eq!(
        after.candidates[0].prob, before.candidates[0].prob,
        "raw probabilities do not move"
    );
    assert_ne!(
        after.stages[2].probs, before.stages[2].probs,
        "the temperature stage does"
    );
}

#[test]
fn forcing_marks_the_token_and_branches_can_be_switched() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    s.prefill_ids(&PROMPT).unwrap();
    let a: Vec<u32> = (0..3)
        .map(|_| s.step(Choice::Sample).unwrap().committed.token.id)
        .collect();
    let original_next = s.distribution().unwrap();
    s.rewind(2).unwrap();
    let other = (0..255u32).find(|&t| t != a[1]).unwrap();
    let forced = s.step(Choice::Force(other)).unwrap();
    assert_eq!(forced.committed.source, Source::Forced);
    assert_eq!(forced.committed.token.id, other);
    assert!(forced.committed.prob < 1.0 && forced.committed.logprob < 0.0);
    let branches = s.branches();
    assert_eq!(branches.len(), 2);
    assert_eq!(branches.iter().filter(|b| b.current).count(), 1);
    let old = branches.iter().find(|b| !b.current).unwrap();
    assert_eq!(old.fork_position, PROMPT.len() + 1);
    assert!(!old.forced_at_fork, "the sampler chose its first own token");
    s.switch_branch(old.id).unwrap();
    assert_eq!(&s.tokens()[PROMPT.len()..], &a[..]);
    // Seen from the old path, the forced branch's first own token is marked as chosen by hand.
    let left = s.branches().into_iter().find(|b| !b.current).unwrap();
    assert!(left.forced_at_fork);
    assert_eq!(s.distribution().unwrap(), original_next);
    assert!(matches!(
        s.switch_branch(10_000),
        Err(SessionError::BadBranch(_))
    ));
}

#[test]
fn an_over_long_prompt_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    let long = vec![65u32; tiny::CONTEXT + 5];
    let err = s.prefill_ids(&long).unwrap_err();
    assert!(matches!(err, SessionError::PromptTooLong { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("{}", tiny::CONTEXT + 5)) && msg.contains("shorten"),
        "{msg}"
    );
    assert!(matches!(s.prefill_ids(&[]), Err(SessionError::EmptyPrompt)));
}

#[test]
fn stepping_past_the_context_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    s.prefill_ids(&vec![65u32; tiny::CONTEXT - 2]).unwrap();
    s.step(Choice::Sample).unwrap();
    s.step(Choice::Sample).unwrap(); // the context is now exactly full
    let Err(err) = s.step(Choice::Sample) else {
        panic!("stepped past the context")
    };
    assert!(matches!(err, SessionError::ContextFull(_)), "{err}");
}

#[test]
fn the_window_keeps_the_first_key_and_says_what_it_hides() {
    let dir = tempfile::tempdir().unwrap();
    let opts = SessionOptions {
        attention_window: 6,
        ..SessionOptions::default()
    };
    let mut s = session_with(&dir, SamplerSettings::default(), opts);
    let seq: Vec<u32> = (0..20).map(|i| 40 + i).collect();
    s.prefill_ids(&seq).unwrap();
    let w = s.step(Choice::Sample).unwrap().attention;
    assert_eq!((w.start, w.len), (15, 6));
    let full = s.newest_attention().unwrap();
    for l in 0..w.n_layer {
        for h in 0..w.n_head {
            let row = &full.rows[l][h];
            assert_eq!(
                w.first(l, h, w.len - 1),
                row[0],
                "key 0, though outside the window"
            );
            let before: f32 = row[..w.start].iter().sum();
            assert!((w.hidden(l, h, w.len - 1) - before).abs() < 1e-5);
        }
    }
}

#[test]
fn stepping_again_where_a_branch_went_reuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    s.prefill_ids(&PROMPT).unwrap();
    let first: Vec<u32> = (0..3)
        .map(|_| s.step(Choice::Sample).unwrap().committed.token.id)
        .collect();
    s.rewind(2).unwrap();
    // Re-forcing the same token, and then sampling the same one again, walks the old path.
    let again = s.step(Choice::Force(first[1])).unwrap();
    assert_eq!(
        again.committed.source,
        Source::Sampled,
        "the sampler's own pick is no deviation"
    );
    s.step(Choice::Sample).unwrap();
    assert_eq!(
        s.branches().len(),
        1,
        "no duplicate branch: {:?}",
        s.branches()
    );
    // A real deviation forks, and is marked forced.
    s.rewind(1).unwrap();
    let other = (0..250).find(|t| *t != first[2]).unwrap();
    let forced = s.step(Choice::Force(other)).unwrap();
    assert_eq!(forced.committed.source, Source::Forced);
    assert_eq!(s.branches().len(), 2);
}

#[test]
fn a_branch_shows_the_text_around_its_fork() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    s.prefill_ids(&PROMPT).unwrap(); // "Hello "
    for t in [b'a', b'b', b'\n', b'c'] {
        s.step(Choice::Force(t as u32)).unwrap();
    }
    s.rewind(3).unwrap();
    s.step(Choice::Force(b'z' as u32)).unwrap();
    let branches = s.branches();
    let old = branches.iter().find(|b| !b.current).unwrap();
    assert_eq!(old.fork_position, PROMPT.len() + 1);
    assert_eq!(old.before_fork, "Hello a");
    assert_eq!(old.after_fork, "b\nc", "line breaks kept");
    let current = branches.iter().find(|b| b.current).unwrap();
    assert_eq!(
        (current.before_fork.as_str(), current.after_fork.as_str()),
        ("Hello az", "")
    );
}

#[test]
fn toggling_the_cache_keeps_each_steps_time_as_it_ran() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    s.prefill_ids(&PROMPT).unwrap();
    s.step(Choice::Sample).unwrap();
    s.step(Choice::Sample).unwrap();
    let before = s.view().unwrap().decode_ms;
    s.set_kv_cache(false).unwrap();
    s.step(Choice::Sample).unwrap();
    s.step(Choice::Sample).unwrap();
    s.set_kv_cache(true).unwrap();
    let rebuild = s.view().unwrap().last_pass;
    assert_eq!(
        rebuild.tokens_fed,
        PROMPT.len() + 4,
        "turning it on rebuilds in one pass"
    );
    assert!(rebuild.kv_cache_on);
    let after = s.step(Choice::Sample).unwrap();
    assert_eq!(after.pass.tokens_fed, 1, "then steps are one token again");
    let v = s.view().unwrap();
    assert_eq!(
        &v.decode_ms[..2],
        &before[..],
        "earlier steps keep their own times"
    );
    assert_eq!(v.decode_kv, vec![true, true, false, false, true]);
}

/// A logits row given back is the buffer the next pass's output head writes, with the bits a fresh
/// buffer would get.
#[test]
fn a_recycled_row_is_written_again_with_the_same_bits() {
    let dir = tempfile::tempdir().unwrap();
    let m = &mut model(&dir);
    let fresh = m.forward(&PROMPT, 0, ForwardOptions::default()).unwrap();
    let at = fresh.logits.as_ptr();
    let bits: Vec<u32> = fresh.logits.iter().map(|x| x.to_bits()).collect();
    m.recycle_row(fresh.logits);
    m.ready_rows(1);
    m.cache.clear();
    let again = m.forward(&PROMPT, 0, ForwardOptions::default()).unwrap();
    assert_eq!(
        again.logits.as_ptr(),
        at,
        "the row given back is written again"
    );
    let again_bits: Vec<u32> = again.logits.iter().map(|x| x.to_bits()).collect();
    assert_eq!(again_bits, bits);
}

/// A session writes its logits rows into the buffers it readied before its first step, and reuses a
/// dropped step's: past the rows it keeps, no step's output head writes memory the process never had
/// (`forward/spare_rows.rs`: each fresh page was a fault on the pass's own clock).
#[test]
fn a_session_writes_every_logits_row_into_a_readied_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let s = &mut session_with(
        &dir,
        SamplerSettings {
            temperature: 0.0,
            ..SamplerSettings::default()
        },
        SessionOptions::default(),
    );
    s.prefill_ids(&PROMPT).unwrap();
    let keep = s.logits_rows_kept();
    let mut rows = std::collections::HashSet::new();
    rows.insert(s.tip_logits().unwrap().as_ptr());
    // The tiny model's context is short: rewind and branch (a forced first token, new each time)
    // until more rows than are kept have been written.
    let (mut steps, mut branch) = (0, 0u32);
    while steps < keep + 8 {
        if s.len() + 1 >= 64 {
            s.rewind(s.len() - PROMPT.len()).unwrap();
            branch += 1;
            s.step(Choice::Force(20 + branch)).unwrap();
        } else {
            s.step(Choice::Sample).unwrap();
        }
        steps += 1;
        rows.insert(s.tip_logits().unwrap().as_ptr());
    }
    assert!(
        rows.len() <= keep + 2,
        "{} distinct rows over {steps} steps, keeping {keep}: a step wrote a fresh buffer",
        rows.len()
    );
}
