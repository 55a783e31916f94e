//! The classroom in the app, as state: a lesson's keys and steps, predict-then-reveal (hide, guess,
//! reveal, score, pause when unsure), the teacher's hide key and presenter mode. No model: the engine's
//! replies are built by hand (`tests/it/lesson_engine.rs` runs lessons on the real model).

use crate::common;

use common::*;
use nexttoken::app::keymap::{Key, Mode};
use nexttoken::app::predict::Score;
use nexttoken::app::{App, Msg, SidePanel};
use nexttoken::lesson::{
    At, Lesson, Outcome, Panel, PanelSpec, Question, QuestionKind, Status, StepRun, TuiAction,
};
use nexttoken::protocol::{Command, Event, LessonStepView, Source};

fn repetition() -> Lesson {
    nexttoken::lesson::builtin("repetition").unwrap().unwrap()
}

/// An app with the repetition lesson, the model loaded: it asks for the lesson's first step.
fn lesson_app(w: u16, h: u16) -> App {
    let mut app = App::new(config(w, h)).with_lesson(repetition());
    let cmds = app.update(Msg::Engine(Event::Loaded(model_info())));
    assert!(
        matches!(&cmds[..], [Command::OpenLesson(l)] if l.name == "repetition"),
        "the first request is the lesson, not the prompt: {cmds:?}"
    );
    app
}

fn step(index: usize, tui: Vec<TuiAction>, outcomes: Vec<Outcome>) -> Msg {
    asking(index, tui, outcomes, None)
}

fn asking(
    index: usize,
    tui: Vec<TuiAction>,
    outcomes: Vec<Outcome>,
    question: Option<Question>,
) -> Msg {
    Msg::Engine(Event::LessonStep(Box::new(LessonStepView {
        run: StepRun {
            index,
            outcomes,
            tui,
            question,
            answer: None,
        },
        replayed: 0,
        earlier_failure: None,
        written_for: None,
        view: prefilled(),
    })))
}

fn check(what: &str, ok: bool) -> Outcome {
    Outcome {
        line: 20,
        what: format!("expect {what}"),
        observed: "\" Paris\" (p 0.41)".into(),
        status: if ok { Status::Passed } else { Status::Failed },
    }
}

#[test]
fn the_lesson_opens_at_its_first_step_with_its_settings() {
    let mut app = lesson_app(100, 30);
    // The repetition lesson asks for presenter mode.
    assert!(app.presenter.on);
    let ask = Question {
        text: "What will the model write first?".into(),
        kind: QuestionKind::Token,
    };
    app.update(asking(
        0,
        vec![],
        vec![check("top1 = \" Paris\"", true)],
        Some(ask),
    ));
    let state = app.lesson.as_ref().unwrap();
    assert_eq!(state.at, Some(0));
    assert!(!state.explored);
    assert!(
        app.distribution_hidden(),
        "the question hides the distribution"
    );
    assert_eq!(app.question(), Some("What will the model write first?"));
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("step 1 of 5"), "{screen}");
    assert!(
        screen.contains("What will the model write first?"),
        "{screen}"
    );
    // The check's result would give the answer away: it waits for the reveal.
    assert!(!screen.contains("expect top1"), "{screen}");
    assert!(screen.contains("shown after the reveal"), "{screen}");
}

#[test]
fn the_step_keys_ask_for_the_neighbouring_steps_and_stop_at_the_ends() {
    let mut app = lesson_app(100, 30);
    app.update(step(0, vec![], vec![]));
    assert!(
        press(&mut app, Key::Left).is_empty(),
        "no step before the first"
    );
    assert!(app.status.as_ref().unwrap().text.contains("first step"));
    assert_eq!(
        press(&mut app, Key::Right),
        vec![Command::LessonGoto { step: 1 }]
    );
    app.update(step(1, vec![], vec![]));
    assert_eq!(key(&mut app, ','), vec![Command::LessonGoto { step: 0 }]);
    app.update(step(4, vec![], vec![]));
    assert!(key(&mut app, '.').is_empty(), "no step after the last");
    assert!(app.status.as_ref().unwrap().text.contains("last step"));
}

/// At 80x24, where the step's narration and checks fill the panel, exploring by hand still says so:
/// the narration and its checks had stood over a changed text with the "✎" line cut off.
#[test]
fn exploring_is_said_even_where_the_narration_fills_the_panel() {
    for (w, h) in [(80, 24), (64, 20)] {
        let mut app = lesson_app(w, h);
        let failed = check("a failed claim keeps its line", false);
        app.update(step(
            2,
            vec![],
            vec![check("one", true), failed.clone(), failed],
        ));
        key(&mut app, ' ');
        app.update(Msg::Engine(Event::Stepped(step_after_is(
            0,
            Source::Sampled,
            true,
            12.0,
        ))));
        let screen = screen_text(&app).join("\n");
        assert!(
            screen.contains("✎ exploring on your own"),
            "{w}x{h}:\n{screen}"
        );
    }
}

#[test]
fn exploring_is_noticed_and_g_goes_back_to_the_lesson() {
    let mut app = lesson_app(100, 30);
    app.update(step(2, vec![], vec![]));
    assert_eq!(key(&mut app, ' '), vec![Command::Step]);
    assert!(app.lesson.as_ref().unwrap().explored);
    app.update(Msg::Engine(Event::Stepped(step_after_is(
        0,
        Source::Sampled,
        true,
        12.0,
    ))));
    assert!(screen_text(&app)
        .join("\n")
        .contains("exploring on your own"));
    // Back to the lesson: the same step again, which the engine replays.
    assert_eq!(key(&mut app, 'g'), vec![Command::LessonGoto { step: 2 }]);
    app.update(step(2, vec![], vec![]));
    assert!(!app.lesson.as_ref().unwrap().explored);
    // Reading the session (a search) is not exploring.
    key(&mut app, '/');
    typing(&mut app, "Par");
    assert!(!app.lesson.as_ref().unwrap().explored);
}

#[test]
fn a_lesson_step_opens_the_panels_it_names() {
    let mut app = lesson_app(100, 30);
    app.presenter.on = false;
    let panel = |panel, layer, head| {
        TuiAction::Panel(PanelSpec {
            panel,
            layer,
            head,
            at: At::Next,
        })
    };
    app.update(step(0, vec![panel(Panel::Timing, None, None)], vec![]));
    assert_eq!(app.screen.side, SidePanel::Timing);
    app.update(step(
        1,
        vec![panel(Panel::Attention, Some(1), Some(2))],
        vec![],
    ));
    assert_eq!(app.screen.side, SidePanel::Attention);
    assert_eq!(
        (app.focus.layer, app.focus.head),
        (1, nexttoken::app::HeadSel::Head(2))
    );
    app.update(step(2, vec![panel(Panel::Chain, None, None)], vec![]));
    assert!(app.screen.show_chain);
    app.update(step(3, vec![panel(Panel::Branches, None, None)], vec![]));
    assert_eq!(app.mode, Mode::Branches);
}

/// `g` with nothing explored opens the step's panels again, with no request: the screen the
/// narration describes comes back after the teacher looked elsewhere.
#[test]
fn g_opens_the_steps_panels_again() {
    let mut app = lesson_app(100, 30);
    app.presenter.on = false;
    let chain = TuiAction::Panel(PanelSpec {
        panel: Panel::Chain,
        layer: None,
        head: None,
        at: At::Next,
    });
    let timing = TuiAction::Panel(PanelSpec {
        panel: Panel::Timing,
        layer: None,
        head: None,
        at: At::Next,
    });
    app.update(step(0, vec![timing, chain], vec![]));
    assert!(app.screen.show_chain);
    // The teacher looks elsewhere: the bars, another side panel.
    key(&mut app, 't');
    press(&mut app, Key::Tab);
    assert!(!app.screen.show_chain);
    assert_ne!(app.screen.side, SidePanel::Timing);
    let cmds = key(&mut app, 'g');
    assert!(cmds.is_empty(), "nothing to replay: {cmds:?}");
    assert!(app.screen.show_chain, "the chain again");
    assert_eq!(app.screen.side, SidePanel::Timing, "the timing panel again");
}

#[test]
fn a_failed_check_is_shown_at_once_with_what_was_observed() {
    let mut app = lesson_app(100, 30);
    app.update(step(0, vec![], vec![check("top1 = \" Lyon\"", false)]));
    assert!(app.status.as_ref().unwrap().error);
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("✗ expect top1"), "{screen}");
}

#[test]
fn predict_mode_hides_until_a_guess_then_reveals_and_scores_it() {
    let mut app = ready_app(100, 30);
    key(&mut app, 'P');
    assert!(app.distribution_hidden());
    // Stepping, forcing and the lens would show or use the hidden answer.
    for k in [' ', '1', 'L'] {
        assert!(key(&mut app, k).is_empty(), "{k} is refused while hidden");
        assert!(app.status.as_ref().unwrap().text.contains("guess first"));
    }
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("What comes next?"), "{screen}");
    assert!(
        !screen.contains("Paris") && !screen.contains("force"),
        "nothing of the answer, and no forcing, on screen: {screen}"
    );

    key(&mut app, '/');
    typing(&mut app, "located");
    app.update(Msg::Engine(Event::SearchResults {
        query: "located".into(),
        hits: vec![hit(3532, " located", 0.03, 3)],
    }));
    // Enter guesses the typed word as the text goes on: " located" after " is".
    let cmds = press(&mut app, Key::Enter);
    assert_eq!(
        cmds,
        vec![Command::ScoreGuess {
            text: " located".into()
        }],
        "a guess is scored, not forced"
    );
    assert!(app.is_busy() && app.distribution_hidden());
    let score = guess_score(5, &[(3532, " located", 0.03, 3)], &[(7042, " Paris", 0.78)]);
    assert!(app
        .update(Msg::Engine(Event::GuessScored(Box::new(score))))
        .is_empty());
    assert!(!app.distribution_hidden() && !app.is_busy());
    let said = &app.status.as_ref().unwrap().text;
    assert!(said.contains("3.0%, rank 4"), "{said}");
    assert!(
        said.contains("the model's top choice: ⟨␣Paris⟩ 78.0%"),
        "{said}"
    );
    let s = app.predict.score;
    assert_eq!((s.guesses, s.hits1, s.hits5), (1, 0, 1));
    let screen = screen_text(&app).join("\n");
    assert!(
        screen.contains("your guess ⟨␣located⟩: 3.0%, rank 4"),
        "{screen}"
    );
    let kept = &app.predict.answers;
    assert_eq!(kept.len(), 1);
    assert_eq!(
        (
            kept[0].position,
            kept[0].class.as_str(),
            kept[0].model.as_str()
        ),
        (5, "' located'", "' Paris'")
    );
    assert!(!kept[0].correct && kept[0].detail == "rank 4, 3.0%");

    // The next step is a new question.
    assert_eq!(key(&mut app, ' '), vec![Command::Step]);
    app.update(Msg::Engine(Event::Stepped(step_after_is(
        0,
        Source::Sampled,
        true,
        12.0,
    ))));
    assert!(app.distribution_hidden());
}

#[test]
fn the_guess_box_shows_nothing_of_the_model_and_takes_a_hit_only_when_moved_onto() {
    let mut app = ready_app(120, 36);
    app.input.by_prob = true;
    key(&mut app, 'P');
    key(&mut app, '/');
    typing(&mut app, "Paris");
    let hits = vec![hit(9000, "Paris", 0.0005, 47), hit(7042, " Paris", 0.78, 0)];
    app.update(Msg::Engine(Event::SearchResults {
        query: "Paris".into(),
        hits,
    }));
    // Never by probability before the reveal, whatever tab said before; tab says why.
    assert_eq!(app.search_hits()[0].token.id, 9000);
    press(&mut app, Key::Tab);
    assert!(app.status.as_ref().unwrap().text.contains("match order"));
    assert_eq!(app.search_hits()[0].token.id, 9000);
    let screen = screen_text(&app);
    let guess_box = boxed(&screen, " Your guess: Paris ").join("\n");
    for leak in [
        "78",
        "0.05",
        "#",
        "rank",
        "%",
        "list",
        "force",
        "probability",
    ] {
        assert!(!guess_box.contains(leak), "{leak} in the box:\n{guess_box}");
    }
    assert!(guess_box.contains("guesses ⟨␣Paris⟩"), "{guess_box}");
    assert!(
        !screen.join("\n").contains("force"),
        "{}",
        screen.join("\n")
    );

    // Moving onto a hit makes Enter guess that hit as it is.
    press(&mut app, Key::Down);
    press(&mut app, Key::Up);
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("guesses the token ⟨Paris⟩"), "{screen}");
    assert_eq!(
        press(&mut app, Key::Enter),
        vec![Command::ScoreGuess {
            text: "Paris".into()
        }]
    );
}

#[test]
fn a_typed_guess_goes_on_from_the_text_as_the_model_reads_it() {
    use nexttoken::protocol::as_continuation;
    assert_eq!(
        as_continuation("The capital of France is", "Paris"),
        " Paris"
    );
    assert_eq!(as_continuation("Hello\n", "Paris"), "Paris");
    assert_eq!(as_continuation("", "Paris"), "Paris");
    assert_eq!(as_continuation("is", " Paris"), " Paris", "kept as typed");
    assert_eq!(
        as_continuation("Paris", ","),
        ",",
        "punctuation goes on directly"
    );
}

#[test]
fn the_score_adds_up_on_hand_cases() {
    let mut s = Score::default();
    assert_eq!(s.mean_rank(), None);
    s.record(0, -0.5, -0.5, true);
    s.record(3, -3.0, -0.2, false);
    // A two-token guess whose first token is the model's top-1 but whose second is not.
    s.record(0, -6.0, -1.0, false);
    assert_eq!((s.guesses, s.hits1, s.hits5), (3, 1, 2 + 1));
    assert_eq!(s.mean_rank(), Some(2.0), "(1 + 4 + 1) / 3");
    assert!((s.class_logprob - -9.5).abs() < 1e-6);
    assert!((s.model_logprob - -1.7).abs() < 1e-6);
    assert_eq!(
        s.summary(),
        "1/3 top-1 · 3/3 top-5 · mean rank 2.0 · class -9.5 vs model -1.7 nats"
    );
}

#[test]
fn the_teachers_key_hides_and_reveals_without_blocking_steps() {
    let mut app = ready_app(100, 30);
    key(&mut app, 'h');
    assert!(app.distribution_hidden() && !app.awaiting_guess());
    assert!(screen_text(&app).join("\n").contains("asked aloud"));
    // A question asked aloud is not a guess to wait for: the teacher may step.
    assert_eq!(key(&mut app, ' '), vec![Command::Step]);
    key(&mut app, 'h');
    assert!(!app.distribution_hidden());
    assert_eq!(
        app.predict.score.guesses, 0,
        "a reveal without a guess scores nothing"
    );
}

#[test]
fn autoplay_in_predict_mode_pauses_where_the_model_is_unsure() {
    let mut app = ready_app(100, 30);
    app.predict.on = true;
    // The first step is hidden; the model is confident there (entropy 0.98), so autoplay starts and
    // that step goes by revealed. Where the model is unsure, autoplay waits for a guess instead.
    app.predict.pause_above = 0.5;
    assert!(key(&mut app, 'a').is_empty() && !app.autoplay.on);
    assert!(app.status.as_ref().unwrap().text.contains("guess first"));
    app.predict.pause_above = 2.0;
    assert_eq!(key(&mut app, 'a'), vec![]);
    assert!(app.autoplay.on && !app.distribution_hidden());
    let mut confident = step_after_is(0, Source::Sampled, true, 12.0);
    std::sync::Arc::make_mut(&mut confident.next).entropy = 0.8;
    app.update(Msg::Engine(Event::Stepped(confident)));
    assert!(
        app.autoplay.on && !app.distribution_hidden(),
        "a confident step goes by"
    );
    let mut unsure = later_step(6, ".", 0.4, true, 11.0);
    std::sync::Arc::make_mut(&mut unsure.next).entropy = 3.4;
    app.update(Msg::Engine(Event::Stepped(unsure)));
    assert!(!app.autoplay.on, "autoplay stops for a guess");
    assert!(app.distribution_hidden());
    assert!(app.status.as_ref().unwrap().text.contains("unsure"));
    assert!(
        app.update(Msg::Tick { now_ms: 60_000 }).is_empty(),
        "the clock does not step past a question"
    );
}

#[test]
fn presenter_mode_shows_the_chosen_token_large_and_tab_swaps_the_panel() {
    let mut app = ready_app(100, 30);
    key(&mut app, 'z');
    assert!(app.presenter.on);
    app.update(Msg::Engine(Event::Stepped(step_after_is(
        0,
        Source::Sampled,
        true,
        12.0,
    ))));
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("Chosen token"), "{screen}");
    assert!(screen.contains("sampled: a random draw"), "{screen}");
    assert!(!screen.contains("Attention"), "fewer panels: {screen}");
    press(&mut app, Key::Tab);
    assert_eq!(app.presenter.side, Some(SidePanel::Attention));
    assert!(!screen_text(&app).join("\n").contains("Chosen token"));
}

#[test]
fn without_a_lesson_the_lesson_keys_say_how_to_open_one() {
    let mut app = ready_app(100, 30);
    assert!(press(&mut app, Key::Right).is_empty());
    assert!(app.status.as_ref().unwrap().text.contains("--lesson"));
}
