//! The engine thread's protocol, held to its documentation: each command in, the exact event sequence
//! out (the rule of one reply), failures included; a failure leaves the session unchanged; and the app's
//! folded copy of the session equals the engine's own view after every command of a random walk.

use crate::support;

use nexttoken::app::{App, AppConfig, Msg, ThemeKind};
use nexttoken::engine::load::{load_session, LoadOptions};
use nexttoken::engine::session::{Session, SessionOptions};
use nexttoken::protocol::{Command, Event, Failure, SamplerSettings, SessionView};
use nexttoken::worker::serve;
use proptest::prelude::*;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use support::{events, tiny};

fn session(dir: &tempfile::TempDir) -> Session {
    session_in_chunks(dir, 8)
}

fn session_in_chunks(dir: &tempfile::TempDir, prefill_chunk: usize) -> Session {
    let path = tiny::write(dir.path());
    let opts = SessionOptions {
        attention_window: 8,
        prefill_chunk,
        ..SessionOptions::default()
    };
    load_session(
        &path,
        &LoadOptions::default(),
        SamplerSettings::default(),
        opts,
        &mut |_| {},
    )
    .unwrap()
    .0
}

fn prefill(s: &mut Session, prompt: &str) -> SessionView {
    let ev = events(
        s,
        Command::Prefill {
            prompt: prompt.into(),
            chat: false,
        },
    );
    let Some((Event::Synced(view), progress)) = ev.split_last() else {
        panic!("prefill answered {ev:?}");
    };
    // Progress only: from 0, rising, never the whole (the closing `Synced` says that).
    let total = view.tokens.len();
    let done: Vec<usize> = progress
        .iter()
        .map(|e| match e {
            Event::Prefilling { done, total: t } if *t == total => *done,
            other => panic!("not prefill progress: {other:?}"),
        })
        .collect();
    assert_eq!(done.first(), Some(&0));
    assert!(done.windows(2).all(|w| w[0] < w[1]) && done.iter().all(|&d| d < total));
    view.clone()
}

fn failed(ev: &[Event]) -> (Failure, String) {
    match ev {
        [Event::Failed { what, reason }] => (*what, reason.clone()),
        other => panic!("expected one Failed, got {other:?}"),
    }
}

#[test]
fn each_command_is_answered_by_its_documented_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    let view = prefill(&mut s, "Hello");

    let ev = events(&mut s, Command::Step);
    assert!(
        matches!(ev.as_slice(), [Event::Stepped(r)] if r.committed.position == view.tokens.len())
    );

    let id = view.next.candidates[3].token.id;
    let ev = events(&mut s, Command::Force { token_id: id });
    assert!(matches!(ev.as_slice(), [Event::Stepped(r)] if r.committed.token.id == id));

    let total = force_text_is_one_forcing_a_token(&mut s, view.tokens.len() + 2);

    for cmd in [
        Command::Rewind { n: 2 },
        Command::SetSampler(SamplerSettings {
            temperature: 0.5,
            ..Default::default()
        }),
        Command::SetKvCache { on: false },
        Command::SetKvCache { on: true },
    ] {
        let ev = events(&mut s, cmd.clone());
        assert!(
            matches!(ev.as_slice(), [Event::Synced(_)]),
            "{cmd:?} answered {ev:?}"
        );
    }
    let leaf = s.branches().iter().find(|b| !b.current).unwrap().id;
    let ev = events(&mut s, Command::SwitchBranch { id: leaf });
    assert!(
        matches!(ev.as_slice(), [Event::Synced(v)] if v.branches.iter().any(|b| b.current && b.id == leaf))
    );

    let ev = events(
        &mut s,
        Command::Search {
            query: "e".into(),
            limit: 5,
        },
    );
    assert!(matches!(ev.as_slice(), [Event::SearchResults { hits, .. }] if !hits.is_empty()));

    score_guess_is_one_closing_event_and_changes_nothing(&mut s, total);
    assert!(
        events(&mut s, Command::Quit).is_empty(),
        "quit is not answered"
    );
}

/// `ForceText " world"` on a path of `len` tokens: one `Forcing` per token, then `Synced` with them
/// appended. Returns how many tokens " world" is.
fn force_text_is_one_forcing_a_token(s: &mut Session, len: usize) -> usize {
    let total = s.encode(" world").unwrap().len();
    let ev = events(
        s,
        Command::ForceText {
            text: " world".into(),
        },
    );
    assert_eq!(
        ev.len(),
        total + 1,
        "one Forcing per token, then Synced: {ev:?}"
    );
    for (i, e) in ev[..total].iter().enumerate() {
        assert_eq!(*e, Event::Forcing { done: i + 1, total });
    }
    assert!(matches!(ev.last(), Some(Event::Synced(v)) if v.tokens.len() == len + total));
    total
}

/// `ScoreGuess " world"` (`total` tokens) is answered by one closing `GuessScored` at the tip, and
/// leaves the session as it was.
fn score_guess_is_one_closing_event_and_changes_nothing(s: &mut Session, total: usize) {
    let before = s.view().unwrap();
    let ev = events(
        s,
        Command::ScoreGuess {
            text: " world".into(),
        },
    );
    let [Event::GuessScored(g)] = ev.as_slice() else {
        panic!("ScoreGuess answered {ev:?}");
    };
    assert!(ev[0].is_closing());
    assert_eq!(g.tokens.len(), total);
    assert_eq!(g.position, before.tokens.len());
    assert_eq!(s.view().unwrap(), before, "scoring a guess changes nothing");
}

#[test]
fn a_long_prompt_is_read_in_chunks_and_can_be_cancelled_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    let long = "a long prompt, read in chunks"; // 29 tokens: 4 chunks of 8
    let total = s.encode(long).unwrap().len();
    let ev = events(
        &mut s,
        Command::Prefill {
            prompt: long.into(),
            chat: false,
        },
    );
    let want: Vec<Event> = [0, 8, 16, 24]
        .map(|done| Event::Prefilling { done, total })
        .into();
    assert_eq!(
        &ev[..4],
        want.as_slice(),
        "one progress event before each chunk"
    );
    let whole = prefill(&mut s, long);
    // Chunks change no number: one pass over the whole prompt gives the same distribution and
    // attention.
    let mut one = session_in_chunks(&dir, 1000);
    let view = prefill(&mut one, long);
    assert_eq!((view.next, view.attention), (whole.next, whole.attention));

    let before = prefill(&mut s, "Hi");
    let cancel = AtomicBool::new(false);
    let sent = RefCell::new(Vec::new());
    let cmd = Command::Prefill {
        prompt: long.into(),
        chat: false,
    };
    serve(&mut s, &mut None, None, cmd, &cancel, &|e| {
        if matches!(e, Event::Prefilling { done: 8, .. }) {
            cancel.store(true, Ordering::Relaxed); // Esc, while the second chunk is read
        }
        sent.borrow_mut().push(e);
    });
    let (what, reason) = failed(&sent.borrow()[2..]);
    assert_eq!(what, Failure::Prefill);
    assert!(reason.contains("cancelled"), "{reason}");
    assert_eq!(s.view().unwrap(), before, "the old tree stays");
    // The flag is lowered when the next prefill starts.
    prefill(&mut s, long);
}

#[test]
fn quitting_while_a_long_prompt_is_read_stops_it_at_the_next_chunk() {
    use nexttoken::worker::{spawn, EngineConfig};
    let (tx, rx) = std::sync::mpsc::channel();
    let config = EngineConfig {
        model_path: support::real_model(),
        tokenizer_path: None,
        sampler: SamplerSettings::default(),
        top_k_shown: 5,
        attention_window: 8,
        kv_cache: true,
        kv_precision: Default::default(),
        twin: None,
        server: None,
        draft: None,
        vocabulary: false,
    };
    let engine = spawn(config, move |e| {
        let _ = tx.send(e);
    });
    while !matches!(rx.recv().unwrap(), Event::Loaded(_)) {}
    let prompt = "The quick brown fox jumps over the lazy dog. ".repeat(200);
    engine
        .send(Command::Prefill {
            prompt,
            chat: false,
        })
        .unwrap();
    let Event::Prefilling { done: 0, total } = rx.recv().unwrap() else {
        panic!("the read did not start");
    };
    assert!(total > 1500, "a long prompt: {total} tokens, many chunks");
    // Ctrl-C: the TUI restores the terminal and quits the engine without waiting; the engine must not
    // read on to the end.
    engine.quit_now();
    let rest: Vec<Event> = rx.iter().collect();
    let Some((Event::Failed { what, reason }, progress)) = rest.split_last() else {
        panic!("the read was not stopped: {rest:?}");
    };
    assert_eq!(*what, Failure::Prefill);
    assert!(reason.contains("cancelled"), "{reason}");
    assert!(
        progress.len() <= 1,
        "stopped after the chunk in hand: {progress:?}"
    );
}

#[test]
fn bad_commands_fail_with_their_own_words_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    let before = prefill(&mut s, "Hello");
    let cases = [
        (
            Command::Prefill {
                prompt: String::new(),
                chat: false,
            },
            Failure::Prefill,
            "empty",
        ),
        (
            Command::Prefill {
                prompt: "x".repeat(tiny::CONTEXT + 5),
                chat: false,
            },
            Failure::Prefill,
            "shorten",
        ),
        (
            Command::Force { token_id: 999_999 },
            Failure::Step,
            "not in the model's vocabulary",
        ),
        (
            Command::ForceText {
                text: String::new(),
            },
            Failure::ForceText,
            "empty",
        ),
        (
            Command::ForceText {
                text: "y".repeat(tiny::CONTEXT),
            },
            Failure::ForceText,
            "do not fit",
        ),
        (
            Command::SwitchBranch { id: 10_000 },
            Failure::SwitchBranch,
            "no branch",
        ),
        (
            Command::ScoreGuess {
                text: String::new(),
            },
            Failure::Guess,
            "nothing to guess",
        ),
        (
            Command::ScoreGuess {
                text: "y".repeat(tiny::CONTEXT),
            },
            Failure::Guess,
            "do not fit",
        ),
    ];
    for (cmd, what, words) in cases {
        let ev = events(&mut s, cmd.clone());
        let (got, reason) = failed(&ev);
        assert_eq!(got, what, "{cmd:?}");
        assert!(reason.contains(words), "{cmd:?}: {reason}");
        assert_eq!(s.view().unwrap(), before, "{cmd:?} changed the session");
    }
    assert_eq!(Failure::Prefill.headline(), "could not read the prompt");
}

#[test]
fn a_pass_that_fails_half_way_leaves_the_session_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    prefill(&mut s, "Hello");
    events(&mut s, Command::Step);
    let before = s.view().unwrap();
    // The third of five forced tokens fails after writing the KV cache.
    s.inject_fault(3);
    let ev = events(
        &mut s,
        Command::ForceText {
            text: "abcde".into(),
        },
    );
    assert!(
        matches!(
            ev.last(),
            Some(Event::Failed {
                what: Failure::ForceText,
                ..
            })
        ),
        "{ev:?}"
    );
    assert_eq!(
        s.view().unwrap(),
        before,
        "teacher forcing is all or nothing"
    );
    // A prefill that fails keeps the old tree; a step that fails keeps its place.
    s.inject_fault(1);
    let ev = events(
        &mut s,
        Command::Prefill {
            prompt: "Other".into(),
            chat: false,
        },
    );
    assert!(matches!(
        ev.last(),
        Some(Event::Failed {
            what: Failure::Prefill,
            ..
        })
    ));
    assert_eq!(s.view().unwrap(), before);
    s.inject_fault(1);
    failed(&events(&mut s, Command::Step));
    assert_eq!(s.view().unwrap(), before);
    // And the session goes on as if nothing happened: the next step equals a fresh session's.
    let mut fresh = session(&dir);
    prefill(&mut fresh, "Hello");
    events(&mut fresh, Command::Step);
    let (a, b) = (stepped(&mut s), stepped(&mut fresh));
    assert_eq!(
        (a.committed, a.chosen_from, a.next),
        (b.committed, b.chosen_from, b.next)
    );
}

fn stepped(s: &mut Session) -> nexttoken::protocol::StepReport {
    match events(s, Command::Step).pop() {
        Some(Event::Stepped(r)) => r,
        other => panic!("step answered {other:?}"),
    }
}

/// One command of a random walk, or a fault injected before the next one.
#[derive(Debug, Clone)]
enum Walk {
    Cmd(Command),
    FaultAfter(u64),
}

fn walk_step() -> impl Strategy<Value = Walk> {
    prop_oneof![
        4 => Just(Walk::Cmd(Command::Step)),
        2 => (0u32..300).prop_map(|token_id| Walk::Cmd(Command::Force { token_id })),
        1 => "[a-z ]{1,4}".prop_map(|text| Walk::Cmd(Command::ForceText { text })),
        2 => (0usize..4).prop_map(|n| Walk::Cmd(Command::Rewind { n })),
        2 => (0usize..40).prop_map(|id| Walk::Cmd(Command::SwitchBranch { id })),
        1 => (0.1f32..2.0, any::<bool>(), 1.0f32..1.5).prop_map(|(temperature, greedy, repeat_penalty)| {
            Walk::Cmd(Command::SetSampler(SamplerSettings { temperature, greedy, repeat_penalty, ..Default::default() }))
        }),
        1 => any::<bool>().prop_map(|on| Walk::Cmd(Command::SetKvCache { on })),
        1 => "[a-z ]{1,4}".prop_map(|text| Walk::Cmd(Command::ScoreGuess { text })),
        1 => (1u64..3).prop_map(Walk::FaultAfter),
    ]
}

fn app() -> App {
    App::new(AppConfig {
        prompt: "Hi".into(),
        chat: false,
        theme: ThemeKind::Default,
        settings: SamplerSettings::default(),
        width: 120,
        height: 40,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// After every command, the app's copy of the session (whole views replaced, steps folded in with
    /// `SessionView::apply`, failures ignored) equals the engine's own `session.view()`.
    #[test]
    fn the_apps_folded_view_equals_the_engines(walk in prop::collection::vec(walk_step(), 1..24)) {
        let dir = tempfile::tempdir().unwrap();
        let mut s = session(&dir);
        let mut app = app();
        for e in events(&mut s, Command::Prefill { prompt: "Hi".into(), chat: false }) {
            app.update(Msg::Engine(e));
        }
        for step in walk {
            match step {
                Walk::FaultAfter(n) => s.inject_fault(n),
                Walk::Cmd(cmd) => {
                    for e in events(&mut s, cmd.clone()) {
                        app.update(Msg::Engine(e));
                    }
                    let engine = s.view().unwrap();
                    prop_assert_eq!(app.session.as_ref(), Some(&engine), "after {:?}", cmd);
                }
            }
        }
    }
}

#[test]
fn compare_is_one_reply_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    let view = prefill(&mut s, "Hello");
    for _ in 0..3 {
        stepped(&mut s);
    }
    let a = s.tip_id().unwrap();
    events(&mut s, Command::Rewind { n: 3 });
    let other = view.next.candidates[4].token.id;
    events(&mut s, Command::Force { token_id: other });
    stepped(&mut s);
    let b = s.tip_id().unwrap();
    let before = s.view().unwrap();
    let ev = events(&mut s, Command::Compare { a, b });
    let [Event::Compared {
        comparison,
        view: None,
    }] = ev.as_slice()
    else {
        panic!("compare answered {ev:?}");
    };
    assert_eq!(comparison.fork_step, Some(0));
    assert_eq!((comparison.a.leaf, comparison.b.leaf), (a, b));
    assert_eq!(comparison.steps.len(), 3);
    assert!(comparison.steps[0].b.as_ref().unwrap().forced);
    assert_eq!(s.view().unwrap(), before, "the session is unchanged");
    let (what, reason) = failed(&events(&mut s, Command::Compare { a, b: 9999 }));
    assert_eq!(what, Failure::Compare);
    assert!(reason.contains("9999"), "{reason}");
}

#[test]
fn a_reference_run_forces_runs_free_and_compares_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    let view = prefill(&mut s, "Hello");
    let text = " world again";
    let n = s.encode(text).unwrap().len();
    let ev = events(&mut s, Command::Reference { text: text.into() });
    let (closing, progress) = ev.split_last().unwrap();
    let done: Vec<usize> = progress
        .iter()
        .map(|e| match e {
            Event::Forcing { done, total } if *total == 2 * n => *done,
            other => panic!("not progress: {other:?}"),
        })
        .collect();
    assert_eq!(done.first(), Some(&1));
    assert!(done.windows(2).all(|w| w[0] + 1 == w[1]));
    let Event::Compared {
        comparison,
        view: Some(after),
    } = closing
    else {
        panic!("reference answered {closing:?}");
    };
    assert_eq!(comparison.b.tokens, n, "B is the reference");
    assert!(comparison.steps.iter().all(|st| st.b.is_some()));
    assert_eq!(after, &s.view().unwrap(), "the view is the session's");
    assert_eq!(
        after.tokens.len(),
        view.tokens.len() + comparison.a.tokens,
        "the free path is current"
    );
    // All or nothing: a failing pass in the free run leaves the session as it was.
    let before = s.view().unwrap();
    s.inject_fault(n as u64 + 1);
    let ev = events(&mut s, Command::Reference { text: text.into() });
    assert_eq!(failed(&ev[ev.len() - 1..]).0, Failure::Reference);
    assert_eq!(s.view().unwrap(), before);
}

/// A guess is scored aside: each token's probability is the one forcing it would record, the sequence's
/// log-prob their sum; the view is unchanged, and the next step (the KV cache included) is the one a
/// session that never scored it takes. With the cache on and off.
#[test]
fn a_guess_is_scored_as_forcing_would_score_it_and_changes_nothing() {
    for kv_cache in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, mut twin) = (session(&dir), session(&dir));
        for x in [&mut s, &mut twin] {
            prefill(x, "Hello");
            events(x, Command::SetKvCache { on: kv_cache });
            events(x, Command::Step);
        }
        let before = s.view().unwrap();
        let ev = events(
            &mut s,
            Command::ScoreGuess {
                text: " world!".into(),
            },
        );
        let [Event::GuessScored(g)] = ev.as_slice() else {
            panic!("ScoreGuess answered {ev:?}");
        };
        assert_eq!(s.view().unwrap(), before, "kv {kv_cache}");
        assert!(g.tokens.len() >= 2, "a sequence: {:?}", g.tokens);

        let forced: Vec<_> = g
            .tokens
            .iter()
            .map(|t| {
                match events(
                    &mut twin,
                    Command::Force {
                        token_id: t.token.id,
                    },
                )
                .pop()
                {
                    Some(Event::Stepped(r)) => r.committed,
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        for (t, f) in g.tokens.iter().zip(&forced) {
            assert_eq!((t.prob, t.rank), (f.prob, f.rank), "{t:?} vs {f:?}");
        }
        let sum: f64 = forced.iter().map(|f| f64::from(f.logprob)).sum();
        assert!((g.logprob - sum).abs() < 1e-9, "{} vs {sum}", g.logprob);
        assert_eq!(g.top1.id, before.next.candidates[0].token.id);
        events(&mut twin, Command::Rewind { n: g.tokens.len() });

        let (a, b) = match (
            events(&mut s, Command::Step).pop(),
            events(&mut twin, Command::Step).pop(),
        ) {
            (Some(Event::Stepped(a)), Some(Event::Stepped(b))) => (a, b),
            other => panic!("{other:?}"),
        };
        assert_eq!(a.committed, b.committed, "kv {kv_cache}");
        assert_eq!(
            a.next, b.next,
            "the cache still holds the path, kv {kv_cache}"
        );
    }
}

/// `Rewind` and `SetSampler` are answered through `Session::change_then_view`: the change and the view
/// after it are one edit, so a failure in either (here the change's own, after it moved the path or the
/// settings) leaves the session as it was, settings included.
#[test]
fn a_change_whose_view_fails_leaves_path_and_settings_as_they_were() {
    use nexttoken::engine::session::SessionError;
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    prefill(&mut s, "Hello");
    for _ in 0..3 {
        events(&mut s, Command::Step);
    }
    let before = s.view().unwrap();
    let fail = || Err(SessionError::Internal("the view failed".into()));
    let r = s.change_then_view(|s| {
        s.rewind(2)?;
        fail()
    });
    assert!(r.is_err());
    assert_eq!(s.view().unwrap(), before, "the path did not move");
    let r = s.change_then_view(|s| {
        s.set_settings(SamplerSettings {
            temperature: 2.0,
            ..SamplerSettings::default()
        });
        fail()
    });
    assert!(r.is_err());
    assert_eq!(s.view().unwrap(), before, "the settings did not change");
    // And the commands themselves: one Synced each, with the change made.
    let ev = events(&mut s, Command::Rewind { n: 2 });
    assert!(
        matches!(ev.as_slice(), [Event::Synced(v)] if v.tokens.len() == before.tokens.len() - 2),
        "{ev:?}"
    );
}

/// `Session::generate` steps by the one stop rule, each step its own edit: a pass that fails keeps the
/// steps before it and drops only its own.
#[test]
fn generate_keeps_the_steps_before_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    prefill(&mut s, "Hello");
    let before = s.view().unwrap().tokens.len();
    s.inject_fault(3);
    assert!(s.generate(5, |_, _| false).is_err());
    assert_eq!(s.view().unwrap().tokens.len(), before + 2, "two steps kept");
    // And a stop condition ends it at once.
    let r = s.generate(5, |_, _| true).unwrap();
    assert_eq!(r.len(), 1);
}

/// `Speculate` is answered by one `Rounded`, whose view is the engine's own view after the round;
/// without a draft, or when the round's pass fails half-way, by one `Failed`, the session as it was.
#[test]
fn a_speculative_round_is_one_reply_and_a_failed_one_changes_nothing() {
    use nexttoken::engine::draft::{Draft, DraftSpec};
    let dir = tempfile::tempdir().unwrap();
    let mut s = session(&dir);
    prefill(&mut s, "Hello");
    let ev = events(&mut s, Command::Speculate { k: 3 });
    let (what, reason) = failed(&ev);
    assert_eq!(what, Failure::Round);
    assert!(reason.contains("--draft"), "{reason}");
    let path = tiny::write(dir.path());
    let model = s.local_model().unwrap();
    let draft = Draft::load(model, &path, &DraftSpec::Layers(1), Default::default()).unwrap();
    s.set_draft(Some(draft));
    let before = s.view().unwrap();
    let ev = events(&mut s, Command::Speculate { k: 3 });
    let [Event::Rounded { round, view }] = &ev[..] else {
        panic!("a round answered {ev:?}");
    };
    let generated = &view.tokens[before.tokens.len()..];
    assert_eq!(generated.len(), round.steps.len());
    assert_eq!(generated.len(), round.report.accepted + 1);
    assert_eq!(**view, s.view().unwrap());
    // A pass that fails half-way: the session is as it was.
    let before = s.view().unwrap();
    s.inject_fault(1);
    let ev = events(&mut s, Command::Speculate { k: 3 });
    assert_eq!(failed(&ev).0, Failure::Round);
    assert_eq!(s.view().unwrap(), before);
}
