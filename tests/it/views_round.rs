//! The speculative round on screen: `d` turns rounds on (only with a draft), a step press then asks
//! for a round, and the round panel shows the drafted tokens with p, q and min(1, p/q), the residual
//! the next token was drawn from, the round's cost beside plain steps, and the rounds so far.

use crate::common;

use common::*;
use nexttoken::app::{App, Msg, SidePanel};
use nexttoken::protocol::*;

fn draft_info() -> DraftInfo {
    DraftInfo {
        label: "layers:20".into(),
        k: 4,
        n_layer: 20,
        bytes_ratio: 0.77,
    }
}

fn drafted(id: u32, text: &str, (p, q): (f32, f32), u: f32, verdict: Verdict) -> DraftedToken {
    DraftedToken {
        token: tv(id, text),
        p,
        q,
        accept_prob: (p / q).min(1.0),
        u,
        verdict,
        model_top: tv(13, "."),
    }
}

/// A round after "… France is": " Paris" kept, " and" rejected, "." redrawn from the residual.
fn round() -> RoundReport {
    RoundReport {
        round: 2,
        draft: "layers:20".into(),
        first_position: 5,
        drafted: vec![
            drafted(7042, " Paris", (0.78, 0.64), 0.41, Verdict::Accepted),
            drafted(284, " and", (0.05, 0.31), 0.63, Verdict::Rejected),
            drafted(260, " the", (0.12, 0.4), 0.2, Verdict::Unchecked),
            drafted(3303, " city", (0.3, 0.5), 0.9, Verdict::Unchecked),
        ],
        accepted: 1,
        last: RoundLast {
            token: tv(13, "."),
            end: RoundEnd::Residual,
            prob: 0.55,
            from: vec![
                (tv(13, "."), 0.55),
                (tv(28, ","), 0.3),
                (tv(837, " which"), 0.15),
            ],
        },
        draft_passes: 4,
        draft_ms: 21.6,
        draft_read: 6,
        verify_positions: 4,
        verify_ms: 16.9,
        plain_ms: 8.2,
        greedy: false,
    }
}

/// The session after the round: " Paris" and "." on the path.
fn after_round() -> (RoundSteps, SessionView) {
    let mut view = prefilled();
    let settings = SamplerSettings::default();
    let steps: Vec<RoundStep> = [(7042, " Paris", 0.78), (13, ".", 0.4)]
        .iter()
        .enumerate()
        .map(|(i, &(id, text, p))| RoundStep {
            step: i,
            committed: TokenRecord {
                token: tv(id, text),
                position: 5 + i,
                source: Source::Sampled,
                prob: p,
                logprob: p.ln(),
                rank: 0,
                entropy: 1.2,
            },
            chosen_from: distribution(5 + i, &[(7042, " Paris", 0.78)], &settings, 0.4),
        })
        .collect();
    view.tokens
        .extend(steps.iter().map(|s| s.committed.clone()));
    view.decode_ms = vec![19.25, 19.25];
    view.decode_kv = vec![true, true];
    view.decode_round = vec![true, true];
    view.draft = Some(draft_info());
    let pass = view.last_pass.clone();
    (
        RoundSteps {
            report: round(),
            steps,
            pass,
        },
        view,
    )
}

/// An app with a draft, rounds turned on, and the round after "… France is" folded in.
fn app_after_round(w: u16, h: u16) -> App {
    let mut app = app_with_draft(w, h);
    key(&mut app, 'd');
    let (r, view) = after_round();
    let rounded = Event::Rounded {
        round: Box::new(r),
        view: Box::new(view),
    };
    update(&mut app, Msg::Engine(rounded));
    app
}

fn app_with_draft(w: u16, h: u16) -> App {
    let mut app = App::new(config(w, h));
    update(&mut app, Msg::Engine(Event::Loaded(model_info())));
    let view = SessionView {
        draft: Some(draft_info()),
        ..prefilled()
    };
    update(&mut app, Msg::Engine(Event::Synced(view)));
    app
}

#[test]
fn d_without_a_draft_says_how_to_load_one_and_the_step_stays_a_step() {
    let mut app = ready_app(80, 24);
    assert!(key(&mut app, 'd').is_empty());
    let status = app.status.as_ref().unwrap().text.clone();
    assert!(
        status.contains("--draft") && status.contains("layers:N"),
        "{status}"
    );
    assert_eq!(key(&mut app, ' '), vec![Command::Step]);
    // Tab never offers the round panel without a draft.
    for _ in 0..6 {
        press(&mut app, nexttoken::app::Key::Tab);
        assert_ne!(app.screen.side, SidePanel::Round);
    }
}

#[test]
fn with_a_draft_d_turns_rounds_on_and_a_step_press_asks_for_a_round() {
    let mut app = app_with_draft(80, 24);
    assert_eq!(key(&mut app, ' '), vec![Command::Step]);
    update(
        &mut app,
        Msg::Engine(Event::Stepped(step_after_is(0, Source::Sampled, true, 9.0))),
    );
    key(&mut app, 'd');
    assert!(app.speculative.on);
    assert_eq!(app.screen.side, SidePanel::Round);
    assert_eq!(key(&mut app, ' '), vec![Command::Speculate { k: 4 }]);
    key(&mut app, 'd');
    assert!(!app.speculative.on);
    // The reply of the round in flight still lands; the next press is a plain step again.
    let (r, view) = after_round();
    update(
        &mut app,
        Msg::Engine(Event::Rounded {
            round: Box::new(r),
            view: Box::new(view),
        }),
    );
    assert_eq!(key(&mut app, ' '), vec![Command::Step]);
}

#[test]
fn a_round_on_screen_at_80x24_and_160x48() {
    for (w, h) in [(80, 24), (160, 48)] {
        let app = app_after_round(w, h);
        assert!(app.round_on_path());
        let screen = screen_text(&app);
        let text = screen.join("\n");
        for want in [
            // The first round since `d`, as the tally counts it (the session's third).
            "Speculative round 1",
            "⟨␣Paris⟩",
            "✓ 1",
            "✗ 2",
            "· 3",
            "max(0, p − q)",
            "→ ⟨.⟩",
        ] {
            assert!(text.contains(want), "{w}x{h}: {want} missing\n{text}");
        }
        if w < 160 {
            // No u column: the line under the table says what rejected the token.
            assert!(text.contains("✗ 2: u 0.63 ≥ keep 0.16"), "{text}");
        }
        if w >= 160 {
            for want in [
                "0.78",
                "0.64",
                "1.00",
                "0.16",
                "rejected (model's top ⟨.⟩)",
                "the first reading 6 tokens",
                "0.43×",
                "rounds pay above",
            ] {
                assert!(text.contains(want), "{w}x{h}: {want} missing\n{text}");
            }
        }
        insta::assert_snapshot!(format!("round_{w}x{h}"), text);
    }
}

#[test]
fn a_rewound_round_says_it_is_no_longer_the_paths_end() {
    let mut app = app_after_round(160, 48);
    // Rewound: the engine's view (the draft still loaded) no longer ends with the round's tokens.
    let rewound = SessionView {
        draft: Some(draft_info()),
        ..prefilled()
    };
    update(&mut app, Msg::Engine(Event::Synced(rewound)));
    assert!(!app.round_on_path());
    assert!(screen_text(&app)
        .join("\n")
        .contains("no longer the path's end"));
}

/// Lesson step `index` as the engine reports it after running `rounds`, on the session after a round.
fn lesson_step_with(index: usize, rounds: Vec<RoundReport>) -> Msg {
    use nexttoken::lesson::TuiAction;
    let (_, view) = after_round();
    let tui = rounds
        .into_iter()
        .map(|r| TuiAction::Round(Box::new(r)))
        .collect();
    lesson_step_ran_with(index, tui, view)
}

/// Rounds a lesson step ran reach the round panel and its tally, with the draft the session names.
#[test]
fn rounds_a_lesson_ran_are_shown_and_added_up() {
    let mut app = ready_app(160, 48);
    update(&mut app, lesson_step_with(1, vec![round(), round()]));
    assert_eq!(app.draft().map(|d| d.label.as_str()), Some("layers:20"));
    assert_eq!(app.screen.side, SidePanel::Round);
    assert_eq!(app.speculative.tally.rounds, 2);
    let text = screen_text(&app).join("\n");
    assert!(
        text.contains("so far 2 rounds: 50% of checked drafts kept"),
        "{text}"
    );
}

/// Rounds add up on one text: a new prompt starts the tally again, as a lesson's `draft` does for
/// its checks. The speculative lesson's "fewer than 7 in 10 of the checked guesses were kept here"
/// had stood beside a tally that still held the counting rounds before it, every guess kept.
#[test]
fn a_new_prompt_starts_the_rounds_tally_again() {
    let mut app = ready_app(160, 48);
    update(&mut app, lesson_step_with(1, vec![round(), round()]));
    assert_eq!(app.speculative.tally.rounds, 2);
    // The same text, longer: still added up.
    // The title counts as the tally does, not as the session does (the report says 2 rounds ran
    // before it in the session: "round 3").
    let text = screen_text(&app).join("\n");
    assert!(text.contains("Speculative round 2 "), "{text}");
    update(&mut app, lesson_step_with(2, vec![round()]));
    assert_eq!(app.speculative.tally.rounds, 3);
    let (_, mut other) = after_round();
    other.tokens[1].token = tv(9999, " elsewhere");
    update(&mut app, Msg::Engine(Event::Synced(other)));
    assert_eq!(app.speculative.tally.rounds, 0);
    let text = screen_text(&app).join("\n");
    assert!(!text.contains("so far 3 rounds"), "{text}");
}

/// A step reached by a replay carries every round of the text on screen: the tally starts again
/// from them (going back to a lesson step had shown "so far 4 rounds" where the step ran one).
#[test]
fn a_replayed_step_tallies_its_text_from_the_start() {
    let mut app = ready_app(160, 48);
    update(
        &mut app,
        lesson_step_with(2, vec![round(), round(), round()]),
    );
    assert_eq!(app.speculative.tally.rounds, 3);
    let Msg::Engine(Event::LessonStep(mut step)) = lesson_step_with(1, vec![round()]) else {
        unreachable!()
    };
    step.replayed = 1;
    update(&mut app, Msg::Engine(Event::LessonStep(step)));
    assert_eq!(app.speculative.tally.rounds, 1);
    let text = screen_text(&app).join("\n");
    assert!(text.contains("Speculative round 1 "), "{text}");
}

/// Before the first round the panel states the rule that will judge the guesses: under greedy a guess
/// is kept while it is the model's own top token (no chance in it), under sampling with min(1, p/q).
#[test]
fn before_a_round_the_panel_states_the_rule_of_the_sampler_in_force() {
    let panel_text = |greedy: bool| {
        let mut app = app_with_draft(100, 30);
        let mut view = SessionView {
            draft: Some(draft_info()),
            ..prefilled()
        };
        if greedy {
            view.settings.temperature = 0.0;
        }
        update(&mut app, Msg::Engine(Event::Synced(view)));
        key(&mut app, 'd');
        assert_eq!(app.screen.side, SidePanel::Round);
        screen_text(&app).join("\n")
    };
    let greedy = panel_text(true);
    assert!(greedy.contains("(greedy)"), "{greedy}");
    assert!(!greedy.contains("min(1, p/q)"), "{greedy}");
    let sampled = panel_text(false);
    assert!(sampled.contains("min(1, p/q)"), "{sampled}");
    assert!(!sampled.contains("(greedy)"), "{sampled}");
}

/// A greedy round draws nothing: its last line names the model's own top token, never a draw from a
/// residual or from p, and the narrow headline says the round was greedy.
#[test]
fn a_greedy_round_says_its_last_token_is_the_models_top_not_a_draw() {
    for (end, want) in [
        (RoundEnd::Residual, ["✗ 2 → ⟨.⟩, the model's top"]),
        (RoundEnd::Bonus, ["✓ all kept → ⟨.⟩, the model's top"]),
    ] {
        let mut app = app_with_draft(80, 24);
        key(&mut app, 'd');
        let (mut r, view) = after_round();
        r.report.greedy = true;
        r.report.last.end = end;
        let rounded = Event::Rounded {
            round: Box::new(r),
            view: Box::new(view),
        };
        update(&mut app, Msg::Engine(rounded));
        let text = screen_text(&app).join("\n");
        for want in want {
            assert!(text.contains(want), "{end:?}: {want} missing\n{text}");
        }
        assert!(text.contains("layers:20 drafted 4 · greedy"), "{text}");
        assert!(!text.contains("drawn"), "{end:?}\n{text}");
    }
}

/// A lesson's round at 80x24 leaves the round panel eight lines: it takes shorter forms until the
/// round's cost and the rounds so far are in view (a lesson's "does it pay?" points at them), keeps
/// every checked token, and says when it had to cut anything.
#[test]
fn a_lesson_round_at_80x24_keeps_its_cost_and_the_rounds_so_far_in_view() {
    let lesson = nexttoken::lesson::builtin("speculative-decoding")
        .unwrap()
        .unwrap();
    for greedy in [true, false] {
        let mut app = App::new(config(80, 24)).with_lesson(lesson.clone());
        update(&mut app, Msg::Engine(Event::Loaded(model_info())));
        let mut r = round();
        r.greedy = greedy;
        // "Does it pay?", the lesson's last step: its narration points at the panel's last lines.
        update(&mut app, lesson_step_with(4, vec![r]));
        let text = screen_text(&app).join("\n");
        assert!(text.contains("lesson step 5 of 5"), "{text}");
        for want in [
            "✓ 1 ⟨␣Paris⟩",
            "✗ 2 ⟨␣and⟩",
            "2 tokens: 38.5 ms, plain 16.4 ms",
            "→ this round ran 0.43× (slower)",
            "1 round: 50% kept, 0.43×",
            "rounds pay above 97% kept",
        ] {
            // A greedy round's table is one line of marks here.
            let want = match greedy {
                true => want.replace(" 1 ⟨", " ⟨").replace(" 2 ⟨", " ⟨"),
                false => want.into(),
            };
            assert!(
                text.contains(&want),
                "greedy {greedy}: {want} missing\n{text}"
            );
        }
        assert!(!text.contains("taller: more"), "greedy {greedy}\n{text}");
    }
}

/// A round that cannot fit even in its shortest form says so on the panel's border, rather than
/// ending mid-table as if nothing were below.
#[test]
fn a_round_too_tall_for_its_panel_says_more_is_below() {
    let lesson = nexttoken::lesson::builtin("speculative-decoding")
        .unwrap()
        .unwrap();
    let mut app = App::new(config(80, 24)).with_lesson(lesson);
    update(&mut app, Msg::Engine(Event::Loaded(model_info())));
    // Sampled, every draft kept: four rows with their numbers, a bonus, the cost and the tally.
    let mut r = round();
    for t in &mut r.drafted {
        t.verdict = Verdict::Accepted;
    }
    r.last.end = RoundEnd::Bonus;
    update(&mut app, lesson_step_with(4, vec![r]));
    let text = screen_text(&app).join("\n");
    assert!(text.contains("… taller: more"), "{text}");
    // In a taller window the whole round fits, and the border says nothing.
    let mut app = App::new(config(100, 40));
    update(&mut app, Msg::Engine(Event::Loaded(model_info())));
    let mut r = round();
    r.drafted
        .iter_mut()
        .for_each(|t| t.verdict = Verdict::Accepted);
    r.last.end = RoundEnd::Bonus;
    update(&mut app, lesson_step_with(4, vec![r]));
    assert!(!screen_text(&app).join("\n").contains("taller: more"));
}

/// While rounds are on under a sampler that draws, a press runs a round, which keeps the draft's
/// guesses with probability min(1, p/q) and draws from the rest: its token need not be the plain
/// step's draw. The next-token panel had still marked that draw "◀ next" (a class saw "◀ next ⟨-⟩"
/// and the round wrote "↵"), and the intro said the draft never changes the output. The mark says
/// `◀ plain` and the pick line what a plain step would draw; the intro says the odds are the model's.
#[test]
fn under_rounds_the_plain_draw_is_not_called_next() {
    for (w, h) in [(80, 24), (100, 30)] {
        let mut app = app_with_draft(w, h);
        assert!(
            app.session.as_ref().unwrap().next.draw.is_some(),
            "a sampler that draws"
        );
        let pick = |app: &App| {
            let text = screen_text(app).join("\n");
            let line = text
                .lines()
                .find(|l| l.contains(" u=0."))
                .unwrap()
                .to_string();
            (text, line)
        };
        let (_, before) = pick(&app);
        assert!(!before.contains("plain"), "{before}");
        key(&mut app, 'd');
        assert!(app.speculative.on);
        let (text, line) = pick(&app);
        assert!(!text.contains("◀ next"), "{w}x{h}:\n{text}");
        // At 80 columns the mark gives way to the bar ("◀" alone); the pick line still says "plain".
        assert!(text.contains("◀ plain") || w == 80, "{w}x{h}:\n{text}");
        assert!(
            line.contains("plain") && line.contains("⟨␣Paris⟩"),
            "{w}x{h}: {line}"
        );
        // The round panel's intro, its lines joined.
        let intro: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split("││").nth(1))
            .map(|l| l.trim_end_matches('│').trim())
            .collect();
        let intro = intro.join(" ");
        assert!(!intro.contains("never the output"), "{w}x{h}: {intro}");
        assert!(
            intro.contains("not the plain step's draw"),
            "{w}x{h}: {intro}"
        );
        assert!(intro.contains("never the odds"), "{w}x{h}: {intro}");
    }
}

/// TPOT is one decode step's time: a round's tokens share the round's time, and the timing panel had
/// averaged them in ("TPOT 415 ms" beside plain steps of 4.6 ms, "reading 139.8× faster"). They are
/// counted apart ("· 2 from rounds"), the ratio is against plain steps, and the chart marks their
/// bars `*`, its key saying so.
#[test]
fn a_rounds_tokens_are_not_in_tpot() {
    let mut app = app_after_round(160, 48);
    update(
        &mut app,
        Msg::Engine(Event::Stepped(later_step(7, " It", 0.3, true, 9.0))),
    );
    let s = app.session.as_ref().unwrap();
    assert_eq!(s.decode_round, [true, true, false]);
    app.screen.side = SidePanel::Timing;
    let text = screen_text(&app).join("\n");
    assert!(
        text.contains("TPOT 9.00 ms (1 with cache) · 2 from rounds"),
        "{text}"
    );
    let per_read = s.prefill.ms / s.prefill.tokens as f64;
    let want = format!("reading is {:.1}× faster", 9.0 / per_read);
    assert!(text.contains(&want), "{want}\n{text}");
    let labels = text.lines().find(|l| l.contains(" P ")).unwrap();
    assert!(labels.contains("1*") && labels.contains("2*"), "{labels}");
    assert!(!labels.contains("3*"), "{labels}");
    assert!(text.contains("a round's share"), "{text}");
}

/// A chart bar far shorter than the tallest keeps an eighth of a row: a 15 ms prefill beside rounds'
/// shares of 1.3 s had drawn nothing over its "P", which read as no time at all.
#[test]
fn a_tiny_bar_still_shows() {
    let mut app = app_with_draft(160, 48);
    key(&mut app, 'd');
    let (r, mut view) = after_round();
    view.decode_ms = vec![1300.0, 1300.0];
    view.prefill.ms = 15.0;
    let rounded = Event::Rounded {
        round: Box::new(r),
        view: Box::new(view),
    };
    update(&mut app, Msg::Engine(rounded));
    app.screen.side = SidePanel::Timing;
    let screen = screen_text(&app);
    let labels = screen.iter().position(|l| l.contains(" P    1*")).unwrap();
    let col = screen[labels].find(" P ").unwrap() + 1;
    let above: String = screen[labels - 1]
        .chars()
        .skip(screen[labels][..col].chars().count())
        .take(4)
        .collect();
    assert!(
        above.chars().any(|c| "▁▂▃▄▅▆▇█".contains(c)),
        "{above:?}\n{}",
        screen.join("\n")
    );
}

/// A draft loaded with the model does nothing until `d`: the first view says which key turns the
/// rounds on (a teacher started with `--draft` had stepped plain, with nothing on screen naming `d`).
#[test]
fn the_first_view_with_a_draft_says_how_to_run_rounds() {
    let mut app = App::new(config(80, 24));
    update(&mut app, Msg::Engine(Event::Loaded(model_info())));
    let mut view = prefilled();
    view.draft = Some(draft_info());
    update(&mut app, Msg::Engine(Event::Synced(view.clone())));
    let status = status_text(&app);
    assert_eq!(
        status,
        "draft layers:20 loaded: d turns speculative rounds on, then space runs one"
    );
    let mut app = App::new(config(80, 24));
    update(&mut app, Msg::Engine(Event::Loaded(model_info())));
    view.draft = None;
    update(&mut app, Msg::Engine(Event::Synced(view)));
    let status = status_text(&app);
    assert!(!status.contains("draft"), "{status}");
}
