//! The classroom on screen, as snapshots at the smallest full screen, a projector's 100x30 and a wide
//! terminal: a lesson's narration panel, the predict-then-reveal card (hidden) and the reveal, and
//! presenter mode.

mod common;

use common::*;
use nexttoken::app::keymap::Key;
use nexttoken::app::{App, Msg};
use nexttoken::lesson::{Outcome, Status, StepRun};
use nexttoken::protocol::{Event, LessonStepView, Source};

/// The repetition lesson at its third step ("Where the loop closes"), its check held.
fn lesson_at_step_3(w: u16, h: u16, presenter: bool) -> App {
    let lesson = nexttoken::lesson::builtin("repetition").unwrap().unwrap();
    let mut app = App::new(config(w, h)).with_lesson(lesson);
    app.presenter.on = presenter;
    app.update(Msg::Engine(Event::Loaded(model_info())));
    let mut view = prefilled();
    view.tokens.extend(
        [(7042, " Paris", 0.41), (30, ".", 0.62)]
            .iter()
            .enumerate()
            .map(|(i, &(id, text, p))| generated(5 + i, id, text, p)),
    );
    view.next.position = 7;
    app.update(Msg::Engine(Event::LessonStep(Box::new(LessonStepView {
        run: StepRun {
            index: 2,
            outcomes: vec![Outcome {
                line: 44,
                what: "expect top1 = \" has\"".into(),
                observed: "\" has\" (p 0.5123)".into(),
                status: Status::Passed,
            }],
            tui: vec![],
            question: None,
            answer: None,
        },
        replayed: 3,
        earlier_failure: None,
        view,
    }))));
    app
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
        typing(&mut app, "locat");
        app.update(Msg::Engine(Event::SearchResults {
            query: "locat".into(),
            hits: vec![hit(3532, " located", 0.03, 3)],
        }));
        press(&mut app, Key::Enter);
        let screen = screen_text(&app).join("\n");
        assert!(screen.contains("your guess"), "{w}x{h}:\n{screen}");
        insta::assert_snapshot!(format!("predict_revealed_{w}x{h}"), screen);
    }
}
