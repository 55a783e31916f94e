//! Class mode on the teacher's screen, with the real model: the room's messages folded into the app
//! (a join, a count, the guesses closed at the reveal), the engine's ranking of the guesses, the class
//! beside the model, each student scored, and "the class samples" (`C`) forcing its most popular
//! guess, marked as the class's choice in the transcript, the branch list and the saved answers.

use crate::common;
use crate::support;

use nexttoken::app::{App, Msg};
use nexttoken::engine::session::Session;
use nexttoken::export::{render, Format};
use nexttoken::protocol::class::{Ask, ClassMsg, JoinCard, StudentId};
use nexttoken::protocol::{Command, Event, ModelInfo, Source, TokenView};
use support::pump;

fn card() -> JoinCard {
    JoinCard {
        url: "http://192.0.2.7:7878/".into(),
        code: "123456".into(),
        qr: vec![],
        max: 200,
        local_only: None,
    }
}

fn token(s: &Session, text: &str) -> TokenView {
    s.vocabulary()
        .into_iter()
        .find(|t| t.text == text)
        .unwrap_or_else(|| panic!("no token {text:?}"))
}

/// The app in class mode on "The capital of France is", three students joined.
fn class_app(s: &mut Session, info: ModelInfo) -> (App, [StudentId; 3]) {
    let mut app = App::new(common::config(120, 36)).with_class(card());
    let first = app.update(Msg::Engine(Event::Loaded(info)));
    pump(&mut app, s, first);
    let ids = [StudentId(1), StudentId(2), StudentId(3)];
    for (id, name) in ids.iter().zip(["Ada", "Bob", "<b>Eve</b>"]) {
        let joined = ClassMsg::Joined {
            student: *id,
            name: name.into(),
        };
        assert!(app.update(Msg::Class(joined)).is_empty());
    }
    (app, ids)
}

/// The reveal's poll of two " Paris" and one " London": the engine's own numbers beside the class's.
fn the_class_stands_beside_the_model(app: &App, paris: &TokenView, london: &TokenView) {
    let next = app.session.as_ref().unwrap().next.clone();
    let raw = |id: u32| next.candidates.iter().find(|c| c.token.id == id).unwrap();
    let poll = app.class_poll().expect("the reveal's poll").clone();
    assert_eq!(poll.guesses(), 3);
    assert_eq!(&poll.rows[0].guess.token, paris);
    assert_eq!(poll.rows[0].count, 2);
    assert_eq!(poll.rows[0].guess.prob, raw(paris.id).prob);
    assert_eq!(poll.rows[1].guess.rank, raw(london.id).rank);
    assert_eq!(poll.model_top[0].token.id, next.candidates[0].token.id);
    assert!((poll.share_top1() - 2.0 / 3.0).abs() < 1e-9);
    let h = -(2.0f64 / 3.0) * (2.0f64 / 3.0).log2() - (1.0f64 / 3.0) * (1.0f64 / 3.0).log2();
    assert!((poll.class_entropy_bits() - h).abs() < 1e-9);
    assert!((poll.model_entropy_bits() - f64::from(next.entropy) / 2f64.ln()).abs() < 1e-4);
}

#[test]
fn the_reveal_ranks_the_class_beside_the_model_and_scores_each_student() {
    let (mut s, info) = support::real_session_info();
    let (mut app, [ada, bob, eve]) = class_app(&mut s, info);
    let stage = app.class_stage().unwrap();
    assert_eq!(stage.ask, Ask::Open, "class mode asks at every step");
    assert_eq!(stage.text, common::PROMPT);
    let count = ClassMsg::Guessed {
        position: stage.position,
        count: 3,
    };
    app.update(Msg::Class(count));
    let screen = common::screen_text(&app).join("\n");
    assert!(screen.contains("3 of 3 have guessed"), "{screen}");
    assert!(screen.contains("join code 123456"), "{screen}");
    assert!(
        !screen.contains("Paris"),
        "nothing of the model, nor of the guesses: {screen}"
    );

    // The teacher's reveal: the stage shows it; the room closes and hands over the guesses.
    let cmds = common::key(&mut app, 'h');
    assert!(cmds.is_empty());
    assert_eq!(app.class_stage().unwrap().ask, Ask::Shown);
    let (paris, london) = (token(&s, " Paris"), token(&s, " London"));
    let closed = ClassMsg::Closed {
        position: stage.position,
        guesses: vec![
            (ada, paris.clone()),
            (bob, paris.clone()),
            (eve, london.clone()),
        ],
    };
    let cmds = app.update(Msg::Class(closed));
    assert!(
        matches!(&cmds[..], [Command::RankTokens { position, tokens }] if *position == stage.position && tokens.len() == 2),
        "{cmds:?}"
    );
    let before = s.view().unwrap();
    pump(&mut app, &mut s, cmds);
    assert_eq!(
        s.view().unwrap(),
        before,
        "ranking leaves the session unchanged"
    );

    the_class_stands_beside_the_model(&app, &paris, &london);

    // Each student scored; the room is handed their results in the stage.
    let results = app.class_stage().unwrap().results.expect("published");
    let eves = &results.students[&eve];
    assert_eq!(eves.guess.as_ref().unwrap().token, london);
    assert_eq!(
        (eves.score.top1, eves.score.place, eves.score.of),
        (0, 3, 3)
    );
    assert_eq!(results.students[&ada].score.top1, 1);
    let screen = common::screen_text(&app).join("\n");
    assert!(
        screen.contains("⟨␣Paris⟩") && screen.contains("⟨␣London⟩"),
        "{screen}"
    );
    assert!(screen.contains("guessed by 2 of 3"), "{screen}");
    assert!(
        screen.contains("<b>Eve</b>"),
        "a name is shown as typed text: {screen}"
    );
    let answer = app.predict.answers.last().unwrap();
    assert_eq!(
        (answer.kind.as_str(), answer.class.as_str()),
        ("class", "' Paris'")
    );
}

#[test]
fn the_class_samples_its_most_popular_guess_marked_as_the_class_s_choice() {
    let (mut s, info) = support::real_session_info();
    let (mut app, [ada, bob, eve]) = class_app(&mut s, info);
    let position = app.class_stage().unwrap().position;
    // Before the reveal, C is refused: the choice is known only at the reveal.
    assert!(common::key(&mut app, 'C').is_empty());
    common::key(&mut app, 'h');
    let london = token(&s, " London");
    let guesses = vec![
        (ada, london.clone()),
        (bob, london.clone()),
        (eve, token(&s, " Paris")),
    ];
    let cmds = app.update(Msg::Class(ClassMsg::Closed { position, guesses }));
    pump(&mut app, &mut s, cmds);
    // The class's choice is not the model's: London is forced, as the class's.
    let cmds = common::key(&mut app, 'C');
    assert_eq!(
        cmds,
        [Command::ClassChoice {
            token_id: london.id
        }]
    );
    pump(&mut app, &mut s, cmds);
    let view = app.session.as_ref().unwrap();
    let last = view.tokens.last().unwrap();
    assert_eq!((last.token.id, last.source), (london.id, Source::Class));
    assert_eq!(
        s.view().unwrap().tokens.last().unwrap().source,
        Source::Class
    );
    let branch = view.branches.iter().find(|b| b.current).unwrap();
    assert_eq!(branch.class_choices, 1);
    let screen = common::screen_text(&app).join("\n");
    assert!(screen.contains("the class's choice"), "{screen}");
    // Saved, and in both handouts.
    let saved = s.to_saved().unwrap();
    let node = saved
        .nodes
        .iter()
        .find(|n| n.record.source == Source::Class);
    assert_eq!(node.map(|n| n.record.token.id), Some(london.id));
    for format in [Format::Html, Format::Md] {
        let handout = render(&saved, "class.json", format);
        assert!(handout.contains("the class's choice"), "{format:?}");
    }
    // The next step is a new question.
    assert_eq!(app.class_stage().unwrap().ask, Ask::Open);
    assert_eq!(app.class_stage().unwrap().position, position + 1);
}

#[test]
fn a_failed_ranking_is_not_shown_as_scoring_for_ever() {
    let (mut s, info) = support::real_session_info();
    let (mut app, [ada, _, _]) = class_app(&mut s, info);
    let position = app.class_stage().unwrap().position;
    common::key(&mut app, 'h');
    let guesses = vec![(ada, token(&s, " Paris"))];
    let cmds = app.update(Msg::Class(ClassMsg::Closed { position, guesses }));
    assert!(matches!(&cmds[..], [Command::RankTokens { .. }]));
    assert!(common::screen_text(&app)
        .join("\n")
        .contains("Scoring the class's guesses"));
    let failed = Event::Failed {
        what: nexttoken::protocol::Failure::Guess,
        reason: "no distribution at position 9".into(),
    };
    app.update(Msg::Engine(failed));
    let screen = common::screen_text(&app).join("\n");
    assert!(!screen.contains("Scoring the class's guesses"), "{screen}");
    assert!(screen.contains("could not score the guess"), "{screen}");
}
