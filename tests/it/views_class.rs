//! The class panel on screen at 80x24 and 160x48: while the class guesses, the count and never what;
//! at the reveal the class's guesses beside the model's probability of each, the two entropies, the
//! share that guessed the model's top choice, the log-probabilities each way and the leaderboard; the join
//! card with its QR code.

use crate::common;

use common::*;
use nexttoken::app::{App, Msg};
use nexttoken::protocol::class::{ClassMsg, JoinCard, StudentId, TokenRanks};
use nexttoken::protocol::*;

fn card() -> JoinCard {
    JoinCard {
        qr: nexttoken::class::qr::lines("http://192.0.2.7:7878/?code=123456"),
        url: "http://192.0.2.7:7878/".into(),
        code: "123456".into(),
        max: 200,
        local_only: None,
    }
}

fn gt(id: u32, text: &str, prob: f32, rank: usize) -> GuessToken {
    GuessToken {
        token: tv(id, text),
        prob,
        logprob: prob.ln(),
        rank,
    }
}

/// Class mode on the fixture session, four students joined.
fn class_app(w: u16, h: u16) -> App {
    let mut app = ready_app(w, h).with_class(card());
    for (i, name) in ["Ada", "Bob", "Cy", "Dee"].iter().enumerate() {
        let student = StudentId(i as u64 + 1);
        update(
            &mut app,
            Msg::Class(ClassMsg::Joined {
                student,
                name: (*name).into(),
            }),
        );
    }
    app
}

/// The reveal: three guessed " Paris", one " London"; the engine's ranks.
fn revealed(w: u16, h: u16) -> App {
    let mut app = class_app(w, h);
    key(&mut app, 'h');
    let position = app.class_stage().unwrap().position;
    let (paris, london) = (tv(7042, " Paris"), tv(4528, " London"));
    let guesses = vec![
        (StudentId(1), paris.clone()),
        (StudentId(2), paris.clone()),
        (StudentId(3), paris),
        (StudentId(4), london),
    ];
    let cmds = update(&mut app, Msg::Class(ClassMsg::Closed { position, guesses }));
    assert!(
        matches!(&cmds[..], [Command::RankTokens { .. }]),
        "{cmds:?}"
    );
    let ranks = TokenRanks {
        position,
        tokens: vec![gt(4528, " London", 0.012, 2), gt(7042, " Paris", 0.78, 0)],
        top: vec![gt(7042, " Paris", 0.78, 0), gt(260, " the", 0.075, 1)],
        entropy: 0.98,
    };
    update(&mut app, Msg::Engine(Event::TokensRanked(Box::new(ranks))));
    app
}

#[test]
fn while_the_class_guesses_the_panel_counts_and_never_shows_what() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = class_app(w, h);
        let text = screen_text(&app).join("\n");
        assert!(
            text.contains("Join the class") && text.contains("join code 123456"),
            "{text}"
        );
        assert!(
            text.contains('▀') || text.contains('▄'),
            "the QR code: {text}"
        );
        key(&mut app, 'J');
        let position = app.class_stage().unwrap().position;
        update(
            &mut app,
            Msg::Class(ClassMsg::Guessed { position, count: 3 }),
        );
        let text = screen_text(&app).join("\n");
        assert!(
            !text.contains("Join the class"),
            "J closes the card: {text}"
        );
        assert!(text.contains("3 of 4 have guessed"), "{w}x{h}: {text}");
        assert!(
            text.contains("class: 4 joined · 3 guessed · code 123456"),
            "{text}"
        );
        assert!(!text.contains("Paris"), "{text}");
    }
}

#[test]
fn a_class_on_loopback_is_told_to_open_the_same_port_to_the_room() {
    let local = JoinCard {
        url: "http://127.0.0.1:7979/".into(),
        local_only: Some(7979),
        ..card()
    };
    let app = ready_app(80, 24).with_class(local);
    let text = screen_text(&app).join("\n");
    assert!(
        text.contains("--class 0.0.0.0:7979 lets the room in"),
        "the port the class was started on: {text}"
    );
    let app = ready_app(80, 24).with_class(card());
    let text = screen_text(&app).join("\n");
    assert!(!text.contains("lets the room in"), "{text}");
}

#[test]
fn the_reveal_shows_the_class_beside_the_model_at_80x24_and_160x48() {
    for (w, h) in [(80, 24), (160, 48)] {
        let app = revealed(w, h);
        let screen = screen_text(&app);
        let text = screen.join("\n");
        for want in [
            "⟨␣Paris⟩",
            "⟨␣London⟩",
            "78.0%",
            "guessed by 3 of 4",
            "entropy: class 0.8 bits",
        ] {
            assert!(text.contains(want), "{w}x{h}: {want} missing\n{text}");
        }
        if h >= 48 {
            for want in ["leaderboard", "Ada", "Dee", "log p: model of the class"] {
                assert!(text.contains(want), "{w}x{h}: {want} missing\n{text}");
            }
        }
        insta::assert_snapshot!(format!("class_reveal_{w}x{h}"), text);
    }
}

#[test]
fn the_leaderboard_hides_with_w() {
    let mut app = revealed(160, 48);
    assert!(screen_text(&app).join("\n").contains("leaderboard"));
    key(&mut app, 'W');
    assert!(!screen_text(&app).join("\n").contains("leaderboard"));
}
