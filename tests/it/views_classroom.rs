//! The classroom on screen, as snapshots at the smallest full screen, a projector's 100x30 and a wide
//! terminal: a lesson's narration panel, the predict-then-reveal card (hidden) and the reveal, and
//! presenter mode.

use crate::common;

use common::*;
use nexttoken::app::keymap::Key;
use nexttoken::app::{App, Msg};
use nexttoken::lesson::{Outcome, Status, StepRun};
use nexttoken::protocol::{Event, LessonStepView, Source};

/// The repetition lesson at its third step ("Where the loop closes"), its check held.
fn lesson_at_step_3(w: u16, h: u16, presenter: bool) -> App {
    let outcome = Outcome {
        line: 44,
        what: "expect top1 = \" has\"".into(),
        observed: "\" has\" (p 0.5123)".into(),
        status: Status::Passed,
    };
    lesson_at("repetition", 2, vec![outcome], (w, h), presenter)
}

/// The built-in lesson `name` at step `index`, its checks' `outcomes` shown.
fn lesson_at(
    name: &str,
    index: usize,
    outcomes: Vec<Outcome>,
    (w, h): (u16, u16),
    presenter: bool,
) -> App {
    lesson_asking(name, index, outcomes, (w, h), presenter, None)
}

/// The question step `index` (0-based) of the built-in lesson `name` asks.
fn asked(name: &str, index: usize) -> Option<nexttoken::protocol::lesson::Question> {
    let lesson = nexttoken::lesson::builtin(name).unwrap().unwrap();
    lesson.steps[index].actions.iter().find_map(|a| match a {
        nexttoken::protocol::lesson::Action::Ask(q) => Some(q.clone()),
        _ => None,
    })
}

/// As [`lesson_at`], the step stopped at `question`.
fn lesson_asking(
    name: &str,
    index: usize,
    outcomes: Vec<Outcome>,
    (w, h): (u16, u16),
    presenter: bool,
    question: Option<nexttoken::protocol::lesson::Question>,
) -> App {
    let step = step_view(index, outcomes, question);
    lesson_shown(name, step, (w, h), presenter)
}

/// Built-in lesson `name` open, showing `step` as its first reply.
fn lesson_shown(name: &str, step: LessonStepView, (w, h): (u16, u16), presenter: bool) -> App {
    let lesson = nexttoken::lesson::builtin(name).unwrap().unwrap();
    let mut app = App::new(config(w, h)).with_lesson(lesson);
    app.presenter.on = presenter;
    app.update(Msg::Engine(Event::Loaded(model_info())));
    app.update(Msg::Engine(Event::LessonStep(Box::new(step))));
    app
}

/// Step `index` (0-based) on the fixture's text, " Paris." written, replayed to.
fn step_view(
    index: usize,
    outcomes: Vec<Outcome>,
    question: Option<nexttoken::protocol::lesson::Question>,
) -> LessonStepView {
    let mut view = prefilled();
    view.tokens.extend(
        [(7042, " Paris", 0.41), (30, ".", 0.62)]
            .iter()
            .enumerate()
            .map(|(i, &(id, text, p))| generated(5 + i, id, text, p)),
    );
    view.next.position = 7;
    LessonStepView {
        run: StepRun {
            index,
            outcomes,
            tui: vec![],
            question,
            answer: None,
        },
        replayed: 3,
        earlier_failure: None,
        written_for: None,
        view,
    }
}

/// A lesson opened on a model it was not written for says so: in the status line when it opens,
/// and pinned in the narration panel on every step, at 80x24 and in presenter mode.
#[test]
fn a_lesson_on_another_model_says_what_it_was_written_for() {
    for ((w, h), presenter) in [((80, 24), false), ((120, 34), true)] {
        let mut step = step_view(0, vec![], None);
        step.written_for = Some("SmolLM2-135M-Instruct Q4_1".into());
        let mut app = lesson_shown("typewriter", step.clone(), (w, h), presenter);
        let screen = screen_text(&app);
        let top = top_panel(&screen).join("\n");
        let note = "⚠ written for SmolLM2-135M-Instruct Q4_1, not this model: ✗ marks what fails";
        assert!(top.contains(note), "{w}x{h}: {top}");
        let all = screen.join("\n");
        assert!(
            all.contains("this lesson was written for SmolLM2-135M-Instruct Q4_1, not this model"),
            "the status line on opening: {all}"
        );
        step.run.index = 2;
        app.update(Msg::Engine(Event::LessonStep(Box::new(step.clone()))));
        let top = top_panel(&screen_text(&app)).join("\n");
        assert!(top.contains(note), "step 3, {w}x{h}: {top}");
        step.written_for = None;
        app.update(Msg::Engine(Event::LessonStep(Box::new(step))));
        let top = top_panel(&screen_text(&app)).join("\n");
        assert!(!top.contains("written for"), "{top}");
    }
}

/// The rows of the screen's first panel (the narration, under a lesson), borders included.
fn top_panel(screen: &[String]) -> Vec<String> {
    let top = screen.iter().position(|l| l.starts_with('┌')).unwrap();
    let bottom = top
        + screen[top..]
            .iter()
            .position(|l| l.starts_with('└'))
            .unwrap();
    screen[top..=bottom].to_vec()
}

fn generated(position: usize, id: u32, text: &str, p: f32) -> nexttoken::protocol::TokenRecord {
    nexttoken::protocol::TokenRecord {
        token: tv(id, text),
        position,
        source: Source::Greedy,
        prob: p,
        logprob: p.ln(),
        rank: 0,
        entropy: 1.9,
    }
}

#[test]
fn narration_panel() {
    for (w, h) in VIEW_SIZES {
        let app = lesson_at_step_3(w, h, false);
        let screen = screen_text(&app).join("\n");
        assert!(
            screen.contains("Where the loop closes"),
            "{w}x{h}:\n{screen}"
        );
        insta::assert_snapshot!(format!("narration_{w}x{h}"), screen);
    }
}

/// A lesson and step title longer than the panel keeps the step's heading whole, and the keys move
/// to the bottom border: at 80 columns "Guess ahead, check at once: speculative decoding · step 5 of 5
/// · Does it pay?" had cut the heading to "Do…" beside the keys.
#[test]
fn a_long_title_keeps_the_steps_heading_and_moves_the_keys_down() {
    for (name, index, heading) in [
        ("speculative-decoding", 4, "Does it pay?"),
        ("chat-template", 1, "The hidden conversation"),
    ] {
        for (w, h) in VIEW_SIZES {
            let app = lesson_at(name, index, vec![], (w, h), false);
            let screen = screen_text(&app);
            let top = screen.iter().find(|l| l.starts_with('┌')).unwrap();
            let step = format!("step {} of ", index + 1);
            assert!(
                top.contains(&step) && top.contains(heading),
                "{w}x{h}: {top}"
            );
            let keys = "← →: lesson steps";
            let bottom = screen.iter().find(|l| l.contains(keys));
            assert!(bottom.is_some(), "{w}x{h}: the keys are on screen");
            // The keys share the top border only with the whole title, never with a cut one.
            let lesson = nexttoken::lesson::builtin(name).unwrap().unwrap();
            let whole = format!(" {} · {step}", lesson.title);
            assert!(
                !top.contains(keys) || top.contains(&whole),
                "{w}x{h}: {top}"
            );
        }
    }
}

/// A step whose next step opens by asking the class for the next token holds its distribution back:
/// the chat-template lesson showed "Hello 60.6%" at its step 2, then asked at step 3 how the assistant
/// would begin. `h` reveals it; a next step that moves on first (a rewind) or asks for something else
/// holds nothing back.
#[test]
fn the_answer_to_the_next_steps_question_is_held_back_and_no_step_writes_it() {
    for (w, h) in VIEW_SIZES {
        let mut app = lesson_at("chat-template", 1, vec![], (w, h), false);
        assert!(app.distribution_hidden(), "{w}x{h}");
        let screen = screen_text(&app).join("\n");
        assert!(screen.contains("Held back"), "{w}x{h}:\n{screen}");
        assert!(!screen.contains("⟨␣Paris⟩"), "{w}x{h}:\n{screen}");
        // A step would write the answer (chat-template's space after step 2 had written "Hello"):
        // refused, and the status line says what to press instead.
        for k in [' ', 'a'] {
            assert!(key(&mut app, k).is_empty(), "{w}x{h}: {k:?} is refused");
            let status = status_text(&app);
            assert!(
                status.starts_with("held back: the next step asks"),
                "{status}"
            );
        }
        assert!(app.distribution_hidden(), "{w}x{h}");
        press(&mut app, Key::Char('h'));
        let screen = screen_text(&app).join("\n");
        assert!(!app.distribution_hidden(), "{w}x{h}");
        assert!(screen.contains("⟨␣Paris⟩"), "{w}x{h}:\n{screen}");
    }
    // The next step rewinds before it asks (repetition), or asks for a number (typewriter).
    for (name, index) in [("repetition", 1), ("typewriter", 0)] {
        let app = lesson_at(name, index, vec![], (80, 24), false);
        assert!(!app.distribution_hidden(), "{name} step {}", index + 1);
    }
}

/// A question with choices keeps every choice on screen when the narration panel is short: at 80x24
/// the attention lesson's step 4 had shown choice 1 of 3, under a card asking for "1 to 3". The
/// narration above it is cut short with "…" instead, and the panel says so.
#[test]
fn a_waiting_questions_choices_stay_whole_in_a_short_panel() {
    let question = asked("attention", 3);
    for (w, h) in VIEW_SIZES {
        let app = lesson_asking("attention", 3, vec![], (w, h), false, question.clone());
        assert!(app.awaiting_guess(), "{w}x{h}");
        let screen = screen_text(&app).join("\n");
        for line in [
            "? From \" paper\"",
            "1. At the word",
            "2. At the word",
            "3. At the very",
        ] {
            assert!(screen.contains(line), "{w}x{h}: {line} in\n{screen}");
        }
        assert!(screen.contains("1 to 3 to answer"), "{w}x{h}:\n{screen}");
    }
}

/// While a question waits the attention panel waits too: the attention lesson's question on layer
/// 18, head 5 had stood beside the previous step's head, "looks most at ' moon'", a wrong answer.
#[test]
fn a_waiting_question_hides_the_attention_panel() {
    let question = asked("attention", 3);
    for (w, h) in VIEW_SIZES {
        let asking = lesson_asking("attention", 3, vec![], (w, h), false, question.clone());
        let screen = screen_text(&asking).join("\n");
        assert!(!screen.contains("looks most at"), "{w}x{h}:\n{screen}");
        assert!(
            screen.contains("Hidden until the answer"),
            "{w}x{h}:\n{screen}"
        );
        let answered = lesson_asking("attention", 3, vec![], (w, h), false, None);
        let screen = screen_text(&answered).join("\n");
        assert!(screen.contains("looks most at"), "{w}x{h}:\n{screen}");
    }
}

/// While a question waits the narration may take half the screen (the panel below shows only the
/// question card): at 80x24 the exposure-bias lesson's question on the JS between two paths keeps
/// its three choices and the narration that gives the scale, 0 to 0.69, whole.
#[test]
fn a_waiting_question_keeps_the_scale_its_narration_gives() {
    let question = asked("exposure-bias", 3);
    let app = lesson_asking("exposure-bias", 3, vec![], (80, 24), true, question);
    let screen = screen_text(&app).join("\n");
    for line in [
        "0.69 is the most",
        "1. Close",
        "2. In between",
        "3. Near the most",
    ] {
        assert!(screen.contains(line), "{line} in\n{screen}");
    }
    assert!(!screen.contains("more than fits"), "{screen}");
    assert!(screen.contains("Transcript"), "{screen}");
}

/// A waiting question's narration too long for the panel (at 60x20, the smallest screen) is cut
/// short above the question with a "…" the class can see, and the panel says more is there.
#[test]
fn a_narration_cut_above_a_question_ends_in_a_visible_mark() {
    let question = asked("speculative-decoding", 1);
    let app = lesson_asking("speculative-decoding", 1, vec![], (60, 20), false, question);
    let panel = &top_panel(&screen_text(&app));
    let bottom = panel.len() - 1;
    let asked = panel
        .iter()
        .position(|l| l.contains("? Will the model keep all 4"))
        .unwrap();
    assert!(
        panel[asked - 1]
            .trim_end_matches('│')
            .trim_end()
            .ends_with('…'),
        "{panel:#?}"
    );
    assert!(panel[bottom].contains("more than fits"), "{panel:#?}");
}

/// Once a question is answered, a narration panel too short for all of it shows what the answer
/// brought, whole: the text after the answer and the checks, under the end of the text read before
/// it, marked "…". At 80x24 the speed-of-light lesson's first step had shown its question's text
/// and two lines of the answer, its last line and its check cut.
#[test]
fn an_answered_step_shows_what_the_answer_brought() {
    let outcome = Outcome {
        line: 22,
        what: "expect step_reads_model_above = 0.9".into(),
        observed: "a step read 97.9% of the file".into(),
        status: Status::Passed,
    };
    let question = asked("speed-of-light", 0).unwrap();
    let answer = nexttoken::protocol::lesson::ModelAnswer {
        question,
        value: nexttoken::protocol::lesson::Answer::Number(6.75),
        shown: "6.75×".into(),
        checks: vec![],
        problem: None,
    };
    for (w, h) in [(80, 24), (64, 20)] {
        let mut app = lesson_asking(
            "speed-of-light",
            0,
            vec![outcome.clone()],
            (w, h),
            false,
            None,
        );
        // Without an answer the step asked nothing: its text reads from the start.
        let screen = screen_text(&app).join("\n");
        assert!(screen.contains("To write one token"), "{w}x{h}:\n{screen}");
        app.lesson.as_mut().unwrap().answer = Some((answer.clone(), None));
        let lines = top_panel(&screen_text(&app));
        let panel = lines.join("\n");
        assert!(
            panel.contains("more than fits"),
            "{w}x{h}: the test needs a cut\n{panel}"
        );
        for line in ["A step read more than 90%", "back to it at the end."] {
            assert!(panel.contains(line), "{w}x{h}: {line} in\n{panel}");
        }
        if w == 80 {
            assert!(panel.contains("✓ expect step_reads"), "{panel}");
            assert!(lines[1].starts_with("│… "), "{panel}");
        }
    }
}

/// The attention lesson's step 4, answered "1" by the class, revealed: the narration panel and the
/// status line say the verdict first and both choices by number, so that a narrow screen cuts the
/// tail of the model's choice text, never the verdict. At 80x24 the panel had read "→ the model: 2.
/// At the word after the earlier \" paper\", \" light\" · the class:…", the ✗ and the class's
/// choice cut, and at 120x34 in presenter mode the ✗ was cut too.
#[test]
fn a_choice_answered_says_the_verdict_and_both_numbers_first() {
    use nexttoken::protocol::lesson::{Answer, ModelAnswer, QuestionKind};
    let question = asked("attention", 3).unwrap();
    let QuestionKind::Choice(choices) = &question.kind else {
        panic!("step 4 asks a choice: {question:?}")
    };
    let answer = ModelAnswer {
        question: question.clone(),
        value: Answer::Choice(Some(1)),
        shown: format!("2. {}", choices[1].text),
        checks: vec![],
        problem: None,
    };
    for ((w, h), presenter, typed, mark) in [
        ((80, 24), false, '1', "✗"),
        ((120, 34), true, '1', "✗"),
        ((80, 24), false, '2', "✓"),
        ((120, 34), true, '2', "✓"),
    ] {
        let mut app = lesson_asking(
            "attention",
            3,
            vec![],
            (w, h),
            presenter,
            Some(question.clone()),
        );
        press(&mut app, Key::Char('/'));
        press(&mut app, Key::Char(typed));
        press(&mut app, Key::Enter);
        let mut step = step_view(3, vec![], None);
        step.run.answer = Some(answer.clone());
        step.replayed = 0;
        app.update(Msg::Engine(Event::LessonStep(Box::new(step))));
        let screen = screen_text(&app);
        let panel = top_panel(&screen).join("\n");
        let verdict = format!("{mark} the class: {typed} · the model: 2. At the word");
        assert!(panel.contains(&verdict), "{w}x{h}: {verdict:?} in\n{panel}");
        let said = app.status.as_ref().unwrap().text.clone();
        let right = if mark == "✓" {
            "✓ right"
        } else {
            "✗ not this time"
        };
        let status = format!("{right}: the class said {typed} · the model's answer: 2. At");
        assert!(said.starts_with(&status), "{said}");
        let all = screen.join("\n");
        assert!(all.contains(&status), "{w}x{h}: the status line\n{all}");
        // The handout keeps the class's choice with its text.
        let kept = app.predict.answers.last().unwrap();
        assert!(
            kept.class.starts_with(&format!("{typed}. At the word")),
            "{kept:?}"
        );
    }
}

/// Under a lesson at 80x24 the transcript takes the rows its text needs, up to 40% of what the
/// narration leaves: at 30% it showed two lines, and the dice lesson's " unicorn." had scrolled away
/// behind two line breaks. A short text leaves the rows to the panel below.
#[test]
fn under_a_lesson_at_80x24_the_transcript_grows_to_show_its_text() {
    let rows = |app: &App| {
        let s = screen_text(app);
        let top = s
            .iter()
            .position(|l| l.starts_with("┌ Transcript"))
            .unwrap();
        let bottom = s[top..]
            .iter()
            .position(|l| l.starts_with("└ prompt"))
            .unwrap();
        bottom + 1
    };
    let short = lesson_at("dice", 4, vec![], (80, 24), false);
    let mut long = lesson_at("dice", 4, vec![], (80, 24), false);
    let s = long.session.as_mut().unwrap();
    for (i, text) in ["\n", "\n", "What"].iter().enumerate() {
        s.tokens.push(generated(7 + i, 198, text, 0.3));
    }
    s.next.position = 10;
    assert!(
        rows(&long) > rows(&short),
        "{} against {}",
        rows(&long),
        rows(&short)
    );
    let screen = screen_text(&long).join("\n");
    assert!(
        screen.contains("Paris."),
        "the line before the breaks:\n{screen}"
    );
    assert!(!screen.contains("more above"), "{screen}");
}

#[test]
fn presenter_mode() {
    for (w, h) in VIEW_SIZES {
        let app = lesson_at_step_3(w, h, true);
        let screen = screen_text(&app).join("\n");
        // The chosen token's facts in words, not colour alone.
        assert!(
            screen.contains("greedy: the top choice"),
            "{w}x{h}:\n{screen}"
        );
        insta::assert_snapshot!(format!("presenter_{w}x{h}"), screen);
    }
}

/// A chosen token too long for large type is quoted as every other panel quotes it: a leading space
/// as `␣` (the `·` is only the large font's, which has no `␣`).
#[test]
fn presenter_quotes_a_long_token_as_the_other_panels_do() {
    let mut app = lesson_at_step_3(80, 24, true);
    let s = app.session.as_mut().unwrap();
    let long = " extraordinarily";
    s.tokens.push(generated(7, 9999, long, 0.2));
    s.next.position = 8;
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("⟨␣extraordinarily⟩"), "{screen}");
    assert!(!screen.contains("·extraordinarily"), "{screen}");
}

/// A chosen space or mark, a blot in large type, is named beside its p as the other panels name
/// it, once: where large type does not fit, the quoted form in its place is the name. A word is not
/// named beside its p.
#[test]
fn presenter_names_a_space_token_once() {
    for (w, h) in [(80, 24), (100, 30)] {
        let mut app = lesson_at_step_3(w, h, true);
        let s = app.session.as_mut().unwrap();
        s.tokens.push(generated(7, 216, " ", 0.04));
        s.next.position = 8;
        let screen = screen_text(&app).join("\n");
        // The transcript's line for the last token, and the presenter's one name.
        assert_eq!(screen.matches("⟨␣⟩").count(), 2, "{w}x{h}:\n{screen}");
        if (w, h) == (100, 30) {
            assert!(screen.contains("│ ⟨␣⟩ model p 4.0% · rank 1"), "{screen}");
        }
        let s = app.session.as_mut().unwrap();
        s.tokens.push(generated(8, 7042, " Paris", 0.4));
        s.next.position = 9;
        let screen = screen_text(&app).join("\n");
        assert!(
            screen.contains("│ model p 40.0% · rank 1"),
            "{w}x{h}:\n{screen}"
        );
    }
}

#[test]
fn predict_hidden_and_revealed() {
    for (w, h) in VIEW_SIZES {
        let mut app = ready_app(w, h);
        app.predict.on = true;
        insta::assert_snapshot!(
            format!("predict_hidden_{w}x{h}"),
            screen_text(&app).join("\n")
        );
        key(&mut app, '/');
        typing(&mut app, "located");
        app.update(Msg::Engine(Event::SearchResults {
            query: "located".into(),
            hits: vec![hit(3532, " located", 0.03, 3)],
        }));
        press(&mut app, Key::Enter);
        let scored = guess_score(5, &[(3532, " located", 0.03, 3)], &[(7042, " Paris", 0.78)]);
        app.update(Msg::Engine(Event::GuessScored(Box::new(scored))));
        let screen = screen_text(&app).join("\n");
        assert!(screen.contains("your guess"), "{w}x{h}:\n{screen}");
        insta::assert_snapshot!(format!("predict_revealed_{w}x{h}"), screen);
    }
}

/// The guess box while the distribution is hidden: what Enter guesses, the matching tokens in match
/// order, and none of the model's numbers; at the smallest screen and at 120x36.
#[test]
fn the_guess_box_hides_the_models_numbers() {
    for (w, h) in [(80, 24), (120, 36)] {
        let mut app = ready_app(w, h);
        app.predict.on = true;
        key(&mut app, '/');
        typing(&mut app, "Paris");
        app.update(Msg::Engine(Event::SearchResults {
            query: "Paris".into(),
            hits: vec![
                hit(9000, "Paris", 0.0005, 47),
                hit(7042, " Paris", 0.78, 0),
                hit(9001, "Parisian", 0.0001, 400),
            ],
        }));
        let screen = screen_text(&app).join("\n");
        assert!(screen.contains("guesses ⟨␣Paris⟩"), "{w}x{h}:\n{screen}");
        assert!(
            !screen.contains("78.0%") && !screen.contains("#48"),
            "{screen}"
        );
        insta::assert_snapshot!(format!("guess_box_{w}x{h}"), screen);
    }
}

/// A guess of two tokens revealed: the sentence names the whole guess and its token count.
#[test]
fn a_two_token_guess_revealed() {
    let (w, h) = (120, 36);
    let mut app = ready_app(w, h);
    app.predict.on = true;
    key(&mut app, '/');
    typing(&mut app, "Paris and");
    press(&mut app, Key::Enter);
    let scored = guess_score(
        5,
        &[(7042, " Paris", 0.78, 0), (284, " and", 0.07, 2)],
        &[(7042, " Paris", 0.78), (30, ".", 0.55)],
    );
    app.update(Msg::Engine(Event::GuessScored(Box::new(scored))));
    let said = app.status.as_ref().unwrap().text.clone();
    assert!(
        said.starts_with("⟨␣Paris␣and⟩ (2 tokens) 5.5%, first token rank 1 (4.2 bits)"),
        "{said}"
    );
    let screen = screen_text(&app).join("\n");
    assert!(
        screen.contains("your guess ⟨␣Paris␣and⟩ (2 tokens): 5.5% "),
        "{screen}"
    );
    insta::assert_snapshot!(format!("guess_two_tokens_{w}x{h}"), screen);
}

/// The running score on the hidden card's border fits at 80, 120 and 160 columns: whole parts, most
/// important first (top-1, top-5, mean rank, log-probs), never cut mid-part.
#[test]
fn the_score_line_fits_every_width() {
    for (w, h) in [(80, 24), (120, 36), (160, 48)] {
        let mut app = ready_app(w, h);
        app.predict.on = true;
        for (rank, lp, greedy) in [(0, -0.4, true), (12, -9.7, false), (3, -13.3, false)] {
            app.predict.score.record(rank, lp, -0.9, greedy);
        }
        let parts = app.predict.score.parts();
        let screen = screen_text(&app);
        let line = screen
            .iter()
            .find(|l| l.contains("top-1"))
            .unwrap_or_else(|| panic!("{w}x{h}: no score\n{}", screen.join("\n")));
        let at = line.find("1/3 top-1").unwrap();
        let shown: String = line[at..].split(" ─").next().unwrap().trim_end().into();
        let whole = (1..=parts.len()).any(|n| parts[..n].join(" · ") == shown);
        assert!(whole, "{w}x{h}: {shown:?} is not whole parts of {parts:?}");
        assert!(!line.contains('…'), "{w}x{h}: {line}");
        if w == 160 {
            assert!(shown.contains("mean rank 6.0"), "{shown}");
        }
    }
}

/// At 80x24 every built-in step that asks nothing shows its whole narration and a line for each of
/// its checks (one per claim of its `expect`s): the class reads it at once, from the top, so a cut
/// end is never seen (the speed-of-light lesson's "no step beats the speed of light", the dice
/// lesson's three checks of " dog" and the speculative lesson's advice on drafts had been below the
/// panel's edge). A step with a question shows what its answer brought instead
/// (`an_answered_step_shows_what_the_answer_brought`).
#[test]
fn every_builtin_step_without_a_question_fits_at_80x24() {
    for (name, text) in nexttoken::lesson::BUILTINS {
        let file: toml::Table = toml::from_str(text).unwrap();
        let steps = file["step"].as_array().unwrap();
        for (i, step) in steps.iter().enumerate() {
            if asked(name, i).is_some() {
                continue;
            }
            // A claim is a key of an `expect` table, but for what only qualifies one.
            let claims = step["actions"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|a| a.get("expect").and_then(|e| e.as_table()))
                .flat_map(|e| e.keys())
                .filter(|k| !["token", "js_steps"].contains(&k.as_str()))
                .count();
            let check = Outcome {
                line: 1,
                what: "expect".into(),
                observed: "held".into(),
                status: Status::Passed,
            };
            let app = lesson_at(name, i, vec![check; claims], (80, 24), false);
            let screen = screen_text(&app).join("\n");
            assert!(
                !screen.contains("more than fits"),
                "{name} step {}:\n{screen}",
                i + 1
            );
        }
    }
}

/// The narration's keys are those that step the lesson from the screen as it is: with the sampler
/// panel open, ← → lower and raise a setting, and the title had still said "← →: lesson steps"
/// (the dice lesson's last step opens that panel). It says to close the panel first, and → moves
/// the setting, not the lesson.
#[test]
fn the_lesson_keys_say_to_close_a_popup_that_takes_them_first() {
    let mut app = lesson_at("dice", 5, vec![], (80, 24), false);
    let keys = |app: &App| {
        let screen = screen_text(app);
        let panel = top_panel(&screen).join("\n");
        let at = panel
            .find(": lesson steps")
            .expect("the keys are on the panel");
        panel[..at]
            .rsplit(['─', '┐', '┘', '┌', '└'])
            .next()
            .unwrap()
            .trim()
            .to_string()
    };
    assert_eq!(keys(&app), "← →");
    press(&mut app, Key::Char('s'));
    assert_eq!(app.mode, nexttoken::app::keymap::Mode::Sampler);
    assert_eq!(keys(&app), "esc, then ← →");
    let step = app.lesson.as_ref().unwrap().at;
    press(&mut app, Key::Right);
    assert_eq!(app.lesson.as_ref().unwrap().at, step, "→ is the panel's");
    press(&mut app, Key::Esc);
    assert_eq!(keys(&app), "← →");
}

/// A step that reads a chat prompt shows the transcript from its start, where the narration points
/// ("a hidden system message comes first"); at 80x24 it had shown the prompt's last rows.
#[test]
fn a_chat_prompt_is_shown_from_its_start() {
    let mut step = step_view(1, vec![], None);
    step.view.tokens[0].token = tv(1, "<|im_start|>");
    step.view.tokens.truncate(5);
    let words = (0..80).map(|i| generated(5 + i, 300 + i as u32, " word", 0.5));
    step.view.tokens.extend(words);
    step.view
        .tokens
        .iter_mut()
        .for_each(|t| t.source = Source::Prompt);
    step.view.prompt_len = step.view.tokens.len();
    step.view.next.position = step.view.tokens.len();
    let app = lesson_shown("chat-template", step.clone(), (80, 24), false);
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("<|im_start|>"), "{screen}");
    assert!(screen.contains("more below"), "{screen}");
    // A step that reads no chat prompt follows the text's end, as before.
    let app = lesson_shown("typewriter", step, (80, 24), false);
    let screen = screen_text(&app).join("\n");
    assert!(!screen.contains("<|im_start|>"), "{screen}");
}

/// An answer that cannot be read keeps the box open and says why where the box is: "4" to a question
/// of three choices had seemed to do nothing (the status line gives way to the box).
#[test]
fn an_answer_that_cannot_be_read_says_why_beside_the_box() {
    let question = asked("attention", 3);
    let mut app = lesson_asking("attention", 3, vec![], (80, 24), false, question);
    key(&mut app, '/');
    typing(&mut app, "4");
    assert!(press(&mut app, Key::Enter).is_empty());
    assert_eq!(app.mode, nexttoken::app::keymap::Mode::Answer, "still open");
    let screen = screen_text(&app);
    let last = screen.last().unwrap();
    assert!(
        last.contains("the class's answer> 4") && last.contains("answer with"),
        "{last}"
    );
}
