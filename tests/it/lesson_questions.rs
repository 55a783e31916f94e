//! A lesson's questions on the real model and in the app: a step stops at its `ask` (the actions after
//! it have not run), `LessonReveal` runs the rest and computes the model's answer, and the class's
//! answer typed in the app is scored against it and kept.

use crate::common;
use crate::support;

use common::{config, model_info, press, screen_text};
use nexttoken::app::keymap::{Key, Mode};
use nexttoken::app::{App, Msg};
use nexttoken::lesson::{self, Track};
use nexttoken::protocol::{Command, Event, LessonStepView};
use support::events_in_lesson;

/// Greedy from "The capital of France is": a yes/no question asked after the prompt, answered by three
/// steps the class has not seen yet.
const LESSON: &str = r#"
title = "Questions"
summary = "A question before the steps that answer it."
minutes = 2

[[step]]
narration = "We ask first."
actions = [
  { prompt = "The capital of France is" },
  { sampler = { greedy = true } },
  { ask = { question = "Will the model write Paris?", yes_if = { text_contains = " Paris" } } },
  { step = 3 },
  { expect = { text_contains = " Paris" } },
]

[[step]]
narration = "How long was the prompt?"
actions = [
  { ask = { question = "How many tokens was the prompt?", number = "prompt_tokens", tolerance = 1, range = [3, 10] } },
]
"#;

/// The real engine behind an app: the session and the lesson it holds.
struct Engine {
    s: nexttoken::engine::session::Session,
    track: Option<Track>,
}

impl Engine {
    fn new() -> Engine {
        Engine {
            s: support::real_session(),
            track: None,
        }
    }

    /// Answers `cmds` and folds the replies into `app`: what the app asked for in return.
    fn answer(&mut self, app: &mut App, cmds: Vec<Command>) -> Vec<Command> {
        let mut next = Vec::new();
        for c in cmds {
            for e in events_in_lesson(&mut self.s, &mut self.track, c) {
                next.extend(app.update(Msg::Engine(e)));
            }
        }
        next
    }

    /// Answers until the app asks for nothing more.
    fn drive(&mut self, app: &mut App, mut cmds: Vec<Command>) {
        while !cmds.is_empty() {
            cmds = self.answer(app, cmds);
        }
    }
}

fn one_step(events: Vec<Event>) -> LessonStepView {
    match &events[..] {
        [Event::LessonStep(step)] => (**step).clone(),
        other => panic!("expected one LessonStep, got {other:?}"),
    }
}

#[test]
fn a_question_is_asked_before_the_actions_that_answer_it() {
    let mut s = support::real_session();
    let mut track: Option<Track> = None;
    let l = lesson::parse("q", "q.toml", LESSON).unwrap();
    let asked = one_step(events_in_lesson(
        &mut s,
        &mut track,
        Command::OpenLesson(Box::new(l)),
    ));
    let prompt_len = asked.view.prompt_len;
    assert_eq!(
        asked.view.tokens.len(),
        prompt_len,
        "nothing generated before the question"
    );
    let q = asked
        .run
        .question
        .as_ref()
        .expect("the step waits at its question");
    assert_eq!(q.kind_name(), "yes/no");
    assert!(asked.run.answer.is_none());

    let revealed = one_step(events_in_lesson(&mut s, &mut track, Command::LessonReveal));
    assert_eq!(revealed.view.tokens.len(), prompt_len + 3, "the rest ran");
    let a = revealed.run.answer.as_ref().expect("the model's answer");
    assert_eq!(a.shown, "yes");
    assert!(revealed.run.question.is_none());
    assert!(revealed.run.failure().is_none(), "{:?}", revealed.run);

    // Nothing waits any more: a second reveal fails and leaves the session as it was.
    let before = s.view().unwrap();
    let again = events_in_lesson(&mut s, &mut track, Command::LessonReveal);
    assert!(matches!(&again[..], [Event::Failed { .. }]), "{again:?}");
    assert_eq!(s.view().unwrap(), before);
}

#[test]
fn lesson_check_prints_each_answer_and_fails_outside_the_range() {
    let mut s = support::real_session();
    let l = lesson::parse("q", "q.toml", LESSON).unwrap();
    let mut out = Vec::new();
    lesson::check::check(&mut s, &l, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("answer to \"Will the model write Paris?\": yes"),
        "{text}"
    );
    assert!(
        text.contains("answer to \"How many tokens was the prompt?\": 5 tokens"),
        "{text}"
    );

    let narrow = LESSON.replace("range = [3, 10]", "range = [6, 10]");
    let l = lesson::parse("q", "q.toml", &narrow).unwrap();
    let err = lesson::check::check(&mut s, &l, &mut Vec::new()).unwrap_err();
    assert!(
        err.to_string()
            .contains("outside the lesson's range [6, 10]"),
        "{err}"
    );
}

/// `last_token_percent` is the probability the transcript shows for the last token written (here
/// drawn at temperature 1.7), and asks for a step when none was written.
#[test]
fn last_token_percent_is_the_transcripts_p_of_the_last_token() {
    const ASKED: &str = r#"
title = "Last"
summary = "How sure was the model of the token it wrote?"
minutes = 1

[[step]]
narration = "Warm dice, then one token."
actions = [
  { prompt = "The capital of France is" },
  { sampler = { temperature = 1.7, seed = 3 } },
  { ask = { question = "How sure was it?", number = "last_token_percent", tolerance = 10, range = [0, 100] } },
  { step = 2 },
]
"#;
    let mut s = support::real_session();
    let l = lesson::parse("q", "q.toml", ASKED).unwrap();
    let mut out = Vec::new();
    lesson::check::check(&mut s, &l, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let view = s.view().unwrap();
    let last = view.tokens.last().unwrap();
    let want = format!(
        "answer to \"How sure was it?\": {:.1}%",
        last.prob as f64 * 100.0
    );
    assert!(text.contains(&want), "{want} in:\n{text}");

    let early = ASKED.replace("  { step = 2 },\n", "");
    let l = lesson::parse("q", "q.toml", &early).unwrap();
    let err = lesson::check::check(&mut s, &l, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("no token written yet"), "{err}");
}

/// What the status line says now.
fn status_text(app: &App) -> String {
    app.status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default()
}

/// The app on the engine's real replies: `/` opens the answer box for a yes/no question, the figures
/// stay hidden until the answer, and the class's answer is scored and kept.
#[test]
fn the_class_answers_in_the_app_and_is_scored() {
    let mut engine = Engine::new();
    let l = lesson::parse("q", "q.toml", LESSON).unwrap();
    let mut app = App::new(config(120, 36)).with_lesson(l);
    let cmds = app.update(Msg::Engine(Event::Loaded(model_info())));
    let left = engine.answer(&mut app, cmds);
    assert!(left.is_empty(), "{left:?}");
    assert!(
        app.distribution_hidden(),
        "the question hides the distribution"
    );
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("? Will the model write Paris?"), "{screen}");
    assert!(screen.contains("y or n"), "says how to answer: {screen}");
    assert!(!screen.contains("Paris\""), "no answer on screen: {screen}");
    // The step is refused while the question waits: the transcript never says to press it.
    assert!(
        screen.contains("the question first: / to answer"),
        "{screen}"
    );
    assert!(!screen.contains("to generate the first token"), "{screen}");
    assert!(
        press(&mut app, Key::Char(' ')).is_empty(),
        "no step while the question waits"
    );
    let said = status_text(&app);
    assert_eq!(
        said,
        "the question waits: / to answer it, or h reveals the answer"
    );

    let cmds = press(&mut app, Key::Char('/'));
    assert!(cmds.is_empty());
    assert_eq!(app.mode, Mode::Answer);
    press(&mut app, Key::Char('m'));
    let cmds = press(&mut app, Key::Enter);
    assert!(cmds.is_empty());
    assert_eq!(
        app.mode,
        Mode::Answer,
        "an answer that is not y or n keeps the box open"
    );
    press(&mut app, Key::Backspace);
    press(&mut app, Key::Char('n'));
    let cmds = press(&mut app, Key::Enter);
    assert_eq!(
        cmds,
        vec![Command::LessonReveal],
        "the answer runs the rest of the step"
    );
    let left = engine.answer(&mut app, cmds);
    assert!(left.is_empty(), "{left:?}");

    let kept = &app.predict.answers;
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        (kept[0].class.as_str(), kept[0].model.as_str()),
        ("no", "yes")
    );
    assert!(!kept[0].correct);
    let screen = screen_text(&app).join("\n");
    assert!(
        screen.contains("✗ the class: no · the model: yes"),
        "{screen}"
    );
    // The status line says the verdict first: 80 columns cut its end, never the score.
    let said = status_text(&app);
    assert_eq!(
        said,
        "✗ not this time: the class said no · the model's answer: yes"
    );
    assert!(!app.distribution_hidden(), "revealed");
}

/// `panel = { name = "chain", at = "last" }` shows the draw that chose the last token (its position,
/// the token it took, where u landed); the next step brings the panel back to the next token.
#[test]
fn a_panel_at_the_last_choice_shows_the_draw_the_narration_is_about() {
    const DRAW: &str = r#"
title = "The draw"
summary = "The chain of the last draw."
minutes = 1

[[step]]
narration = "The draw that chose the last word."
actions = [
  { prompt = "My favourite animal is the" },
  { sampler = { temperature = 0.8, seed = 7 } },
  { step = 2 },
  { panel = { name = "chain", at = "last" } },
]
"#;
    let mut engine = Engine::new();
    let l = lesson::parse("d", "d.toml", DRAW).unwrap();
    let mut app = App::new(config(120, 36)).with_lesson(l);
    let cmds = app.update(Msg::Engine(Event::Loaded(model_info())));
    engine.drive(&mut app, cmds);
    let view = app.session.clone().unwrap();
    let last = view
        .last_choice
        .as_ref()
        .expect("the last draw is in the view");
    let taken = view.tokens.last().unwrap();
    assert_eq!(last.position, taken.position);
    assert_eq!(
        last.planned.id, taken.token.id,
        "the draw chose the token on screen"
    );
    let screen = screen_text(&app).join("\n");
    let title = format!("The last choice · position {}", taken.position);
    assert!(screen.contains(&title), "{screen}");
    let u = last.draw.as_ref().expect("a sampled draw").u;
    assert!(
        screen.contains(&format!("u={u:.3}")),
        "the draw's u is on screen: {screen}"
    );

    // A step moves the panel on to the next token by itself.
    let cmds = press(&mut app, Key::Char(' '));
    engine.drive(&mut app, cmds);
    let screen = screen_text(&app).join("\n");
    assert!(!screen.contains("The last choice"), "{screen}");
    assert!(screen.contains("Next token · position"), "{screen}");
}

/// A lesson whose one step asks for the token the model writes after "The capital of France is".
const TOKEN: &str = r#"
title = "Guess"
summary = "A token question."
minutes = 1

[[step]]
narration = "Guess first."
actions = [
  { prompt = "The capital of France is" },
  { sampler = { greedy = true } },
  { ask = "What will the model write first?" },
  { step = 1 },
  { expect = { last_token = " Paris" } },
]
"#;

/// The app on a `w`x`h` screen, the class's guess `typed` at [`TOKEN`]'s question, on the real
/// engine's replies: the guess scored, then the rest of the step run.
fn guessed_at_the_token_question(typed: &str, (w, h): (u16, u16)) -> App {
    let mut engine = Engine::new();
    let l = lesson::parse("g", "g.toml", TOKEN).unwrap();
    let mut app = App::new(config(w, h)).with_lesson(l);
    let cmds = app.update(Msg::Engine(Event::Loaded(model_info())));
    engine.drive(&mut app, cmds);
    let prompt_len = app.session.as_ref().unwrap().prompt_len;
    assert_eq!(app.session.as_ref().unwrap().tokens.len(), prompt_len);
    press(&mut app, Key::Char('/'));
    assert_eq!(
        app.mode,
        Mode::Search,
        "a token question is answered by a guess"
    );
    let mut cmds = Vec::new();
    for c in typed.chars() {
        cmds = press(&mut app, Key::Char(c));
    }
    engine.drive(&mut app, cmds);
    let cmds = press(&mut app, Key::Enter);
    engine.drive(&mut app, cmds);
    assert_eq!(app.predict.answers.len(), 1, "the guess is kept once");
    let view = app.session.as_ref().unwrap();
    assert_eq!(
        view.tokens.len(),
        prompt_len + 1,
        "the rest of the step ran"
    );
    let state = app.lesson.as_ref().unwrap();
    assert!(state.waiting().is_none());
    assert!(state.run.as_ref().unwrap().failure().is_none());
    // The model's answer is about the position asked, not the one after the step that followed
    // (it had been ".", the token after " Paris").
    let answer = state.answer.as_ref().map(|(a, _)| a.shown.clone());
    assert!(
        answer
            .as_deref()
            .is_some_and(|a| a.starts_with("\" Paris\"")),
        "{answer:?}"
    );
    app
}

/// A token question in a lesson: the class's typed guess is scored aside, then the rest of the step
/// runs and the narration shows the class's guess, its verdict first, beside the model's answer.
#[test]
fn a_guess_at_a_lesson_token_question_runs_the_rest_of_the_step() {
    let app = guessed_at_the_token_question("Paris", (120, 36));
    assert!(app.predict.answers[0].correct, "{:?}", app.predict.answers);
    let screen = screen_text(&app).join("\n");
    assert!(
        screen.contains("✓ the class: \" Paris\" (rank 1, "),
        "{screen}"
    );
    assert!(screen.contains(" · the model: \" Paris\" ("), "{screen}");
}

/// A wrong guess at a lesson's token question is on record in the narration panel, verdict first,
/// with the model's rank of it: the panel had shown only "→ the model: \" Paris\" (76.8%)", and the
/// status bar's "guesses 0/1 top-1 · 1/1 top-5" could be read as a pass. The status line says the
/// verdict first too.
#[test]
fn a_wrong_guess_at_a_lesson_token_question_is_marked_wrong() {
    let app = guessed_at_the_token_question("the", (80, 24));
    let kept = &app.predict.answers[0];
    assert!(!kept.correct, "{kept:?}");
    let rank = kept.detail.split(',').next().unwrap();
    assert!(rank.starts_with("rank "), "{kept:?}");
    let verdict = format!("✗ the class: \" the\" ({rank}, ");
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains(&verdict), "{verdict:?} in\n{screen}");
    assert!(screen.contains("· the model: \" Paris\""), "{screen}");
    assert!(
        status_text(&app).starts_with(&format!(
            "✗ not this time: the class said \" the\" ({rank}, "
        )),
        "{}",
        status_text(&app)
    );
}

/// `→` while the step's question waits shows its answer first (the rest of the step run, as `h`
/// does), and a second `→` goes on: it had gone straight on, and the next step's narration spoke of
/// what the class had never seen.
#[test]
fn the_next_step_key_reveals_a_waiting_question_before_moving_on() {
    let mut engine = Engine::new();
    let l = lesson::parse("q", "q.toml", LESSON).unwrap();
    let mut app = App::new(config(120, 36)).with_lesson(l);
    let cmds = app.update(Msg::Engine(Event::Loaded(model_info())));
    engine.drive(&mut app, cmds);
    assert!(app.distribution_hidden(), "the question waits");
    let cmds = press(&mut app, Key::Right);
    assert_eq!(cmds, vec![Command::LessonReveal], "the answer first");
    assert_eq!(
        status_text(&app),
        "the answer first; → again for the next step"
    );
    engine.drive(&mut app, cmds);
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("→ the model: yes"), "{screen}");
    assert!(
        screen.contains(" Paris"),
        "the steps it asked about: {screen}"
    );
    assert!(!app.distribution_hidden(), "revealed");
    let cmds = press(&mut app, Key::Right);
    assert_eq!(cmds, vec![Command::LessonGoto { step: 1 }], "then on");
}
