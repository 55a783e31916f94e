//! Predict-then-reveal on the real model: the class's guess typed as a word is matched as the model
//! continues the text (" Paris" after "… is"), scored by the engine aside (the session unchanged), and a
//! guess of two tokens (" Notre Dame") is scored as a sequence: the product of what forcing each token
//! records.

use crate::common;
use crate::support;

use nexttoken::app::keymap::Key;
use nexttoken::app::{App, Msg};
use nexttoken::protocol::{Command, Event};
use support::{events, pump};

/// The "done when": `--predict` at 120x36 on "The capital of France is"; typing "Paris" shows
/// hits with no % and no rank; Enter scores ⟨␣Paris⟩, the model's top-1, and the score reads 1/1 top-1.
#[test]
fn typing_paris_guesses_space_paris_and_scores_top_1() {
    let (mut s, info) = support::real_session_info();
    let mut app = App::new(common::config(120, 36));
    app.predict.on = true;
    let first = app.update(Msg::Engine(Event::Loaded(info)));
    pump(&mut app, &mut s, first);
    assert!(app.distribution_hidden());
    let before = s.view().unwrap();

    let mut cmds = common::key(&mut app, '/');
    cmds.extend(common::typing(&mut app, "Paris"));
    pump(&mut app, &mut s, cmds);
    assert!(
        app.input.hits.iter().any(|h| h.token.text == " Paris"),
        "the search finds ⟨␣Paris⟩: {:?}",
        app.input.hits
    );
    let screen = common::screen_text(&app);
    let overlay = common::boxed(&screen, " Your guess: Paris ");
    let screen = screen.join("\n");
    assert!(overlay.len() > 3, "the guess box is open:\n{screen}");
    for line in &overlay {
        assert!(
            !line.contains('%') && !line.contains('#') && !line.contains("rank"),
            "a number of the model's in the guess box: {line}\n{screen}"
        );
    }
    assert!(screen.contains("guesses ⟨␣Paris⟩"), "{screen}");

    let cmds = common::press(&mut app, Key::Enter);
    assert_eq!(
        cmds,
        vec![Command::ScoreGuess {
            text: " Paris".into()
        }]
    );
    pump(&mut app, &mut s, cmds);
    assert_eq!(s.view().unwrap(), before, "scoring changed the session");
    let reveal = app.predict.last.as_ref().expect("revealed");
    assert_eq!(reveal.score.tokens.len(), 1);
    assert_eq!(reveal.guess.token.text, " Paris");
    assert_eq!(reveal.guess.rank, 0, "the model's top-1");
    let top = &before.next.candidates.iter().find(|c| c.rank == 0).unwrap();
    assert_eq!(top.token.text, " Paris");
    assert_eq!(reveal.guess.prob, top.prob, "the distribution's own number");
    assert!(reveal.score.is_greedy);
    let score = app.predict.score;
    assert_eq!((score.guesses, score.hits1, score.hits5), (1, 1, 1));
    assert_eq!(app.predict.answers.len(), 1);
    assert!(app.predict.answers[0].correct);
    assert_eq!(app.predict.answers[0].class, "' Paris'");
    let screen = common::screen_text(&app).join("\n");
    assert!(screen.contains("1/1 top-1"), "{screen}");
    assert!(screen.contains("your guess ⟨␣Paris⟩"), "{screen}");

    a_lesson_asks_again_here(&mut app, &mut s);
}

/// A lesson step that asks a new question where `app`'s last guess was made does not show that guess
/// as its own.
fn a_lesson_asks_again_here(app: &mut App, s: &mut nexttoken::engine::session::Session) {
    // The dice lesson's last step, revealed with no guess, had shown step 1's (it rewound there).
    let question = nexttoken::lesson::parse(
        "q",
        "q.toml",
        "title = \"q\"\nsummary = \"q\"\nminutes = 1\n[[step]]\nnarration = \"q\"\nactions = [\n  { prompt = \"x\" },\n  { ask = \"Which now?\" },\n]\n",
    )
    .unwrap()
    .steps[0]
        .actions
        .iter()
        .find_map(|a| match a {
            nexttoken::protocol::lesson::Action::Ask(q) => Some(q.clone()),
            _ => None,
        });
    let run = nexttoken::lesson::StepRun {
        index: 0,
        outcomes: vec![],
        tui: vec![],
        question,
        answer: None,
    };
    let step = nexttoken::protocol::LessonStepView {
        run,
        replayed: 0,
        earlier_failure: None,
        written_for: None,
        view: s.view().unwrap(),
    };
    app.update(Msg::Engine(Event::LessonStep(Box::new(step))));
    assert!(app.predict.last.is_none());
    common::press(app, Key::Char('h'));
    let screen = common::screen_text(app).join("\n");
    assert!(!screen.contains("your guess"), "{screen}");
}

/// A guess of two tokens is a sequence: its probability is the product of the probabilities forcing
/// each token records in a second session, each rank is the forced token's, and the session that
/// scored it is unchanged.
#[test]
fn a_two_token_guess_is_the_product_of_forcing_its_tokens() {
    let prompt = "The most famous cathedral in Paris is";
    let guess = nexttoken::protocol::as_continuation(prompt, "Notre Dame");
    let (mut s, _) = support::real_session_info();
    let (mut twin, _) = support::real_session_info();
    for x in [&mut s, &mut twin] {
        let p = Command::Prefill {
            prompt: prompt.into(),
            chat: false,
        };
        assert!(matches!(events(x, p).last(), Some(Event::Synced(_))));
    }
    let ids = s.encode(&guess).unwrap();
    assert_eq!(ids.len(), 2, "{guess:?} is two tokens in SmolLM2: {ids:?}");
    let before = s.view().unwrap();
    let ev = events(
        &mut s,
        Command::ScoreGuess {
            text: guess.clone(),
        },
    );
    let [Event::GuessScored(g)] = ev.as_slice() else {
        panic!("{ev:?}");
    };
    assert_eq!(s.view().unwrap(), before, "the session is unchanged");
    assert_eq!(g.tokens.iter().map(|t| t.token.id).collect::<Vec<_>>(), ids);

    let mut product = 1.0f64;
    for t in &g.tokens {
        let ev = events(
            &mut twin,
            Command::Force {
                token_id: t.token.id,
            },
        );
        let [Event::Stepped(r)] = ev.as_slice() else {
            panic!("{ev:?}");
        };
        assert_eq!((t.prob, t.rank), (r.committed.prob, r.committed.rank));
        product *= f64::from(r.committed.prob);
    }
    assert!(
        (g.prob() - product).abs() <= 1e-6 * product,
        "{} vs {product}",
        g.prob()
    );
    assert_eq!(g.greedy.len(), 2);
    assert_eq!(
        g.is_greedy,
        g.greedy.iter().map(|t| t.id).eq(ids.iter().copied())
    );
    let top = before.next.candidates.iter().find(|c| c.rank == 0).unwrap();
    assert_eq!((g.top1.id, g.top1_prob), (top.token.id, top.prob));
    assert_eq!(g.greedy[0], g.top1);
}

/// A guess that is the model's top token but for its capitals ("paris" for ⟨␣Paris⟩) is scored as
/// typed, a different token, and the reveal says why: the model's is ⟨␣Paris⟩, and capitals count.
#[test]
fn a_guess_wrong_only_in_its_capitals_says_case_counts() {
    let (mut s, info) = support::real_session_info();
    let mut app = App::new(common::config(120, 36));
    app.predict.on = true;
    let first = app.update(Msg::Engine(Event::Loaded(info)));
    pump(&mut app, &mut s, first);
    let mut cmds = common::key(&mut app, '/');
    cmds.extend(common::typing(&mut app, "paris"));
    pump(&mut app, &mut s, cmds);
    let cmds = common::press(&mut app, Key::Enter);
    pump(&mut app, &mut s, cmds);
    let reveal = app.predict.last.as_ref().expect("revealed");
    assert_ne!(reveal.guess.rank, 0, "⟨␣paris⟩ is another token");
    let screen = common::screen_text(&app).join("\n");
    assert!(
        screen.contains("the model's top choice: ⟨␣Paris.⟩ 51.0% (capitals count)"),
        "{screen}"
    );
}

/// Once the guess is revealed, `/` searches the vocabulary to force a token, and the hints say so
/// (they had said "/ guess" all through predict mode, and a second "guess" of "the" forced "is⚑the",
/// rank #1610); the search, after a word, puts the spaced token first, as a guess reads it.
#[test]
fn after_the_reveal_slash_is_a_search_and_says_so() {
    let (mut app, mut s) = predicting(80, 24);
    let hints = |app: &mut App| {
        app.status = None;
        common::screen_text(app).last().cloned().unwrap_or_default()
    };
    assert!(hints(&mut app).contains("/ guess"), "{}", hints(&mut app));
    guess(&mut app, &mut s, "Paris");
    assert!(!app.awaiting_guess(), "revealed");
    let bottom = hints(&mut app);
    assert!(
        bottom.contains("/ search") && !bottom.contains("guess"),
        "{bottom}"
    );
    let mut cmds = common::key(&mut app, '/');
    cmds.extend(common::typing(&mut app, "the"));
    pump(&mut app, &mut s, cmds);
    let first_hit = &app.input.hits[0].token.text;
    assert_eq!(first_hit, " the", "after \"is\": {:?}", app.input.hits);
}

/// Rewinding to a position whose distribution was revealed shows it again, and nothing there is
/// scored twice (the class had read the answer: a re-guess had counted, "2/4 top-1"); a token forced
/// before it makes a new text, asked anew.
#[test]
fn a_rewind_to_a_revealed_position_does_not_ask_again() {
    let (mut app, mut s) = predicting(80, 24);
    guess(&mut app, &mut s, "Paris");
    let cmds = common::key(&mut app, ' ');
    pump(&mut app, &mut s, cmds);
    assert!(app.awaiting_guess(), "a new position asks");
    guess(&mut app, &mut s, ".");
    let cmds = common::key(&mut app, ' ');
    pump(&mut app, &mut s, cmds);
    assert!(app.awaiting_guess());
    let guesses = app.predict.score.guesses;
    assert_eq!(guesses, 2);
    // Back one: the position whose answer the class saw.
    let cmds = common::key(&mut app, 'u');
    pump(&mut app, &mut s, cmds);
    assert!(!app.awaiting_guess(), "revealed before: shown again");
    assert!(!app.distribution_hidden());
    assert_eq!(app.predict.score.guesses, guesses);
    // Back again, and another token forced: a new text, asked.
    let cmds = common::key(&mut app, 'u');
    pump(&mut app, &mut s, cmds);
    assert!(!app.awaiting_guess());
    let mut cmds = common::key(&mut app, 'i');
    cmds.extend(common::typing(&mut app, " London"));
    cmds.extend(common::press(&mut app, Key::Enter));
    pump(&mut app, &mut s, cmds);
    let text: String = s
        .view()
        .unwrap()
        .tokens
        .iter()
        .map(|t| t.token.text.clone())
        .collect();
    assert!(text.ends_with(" London"), "{text}");
    assert!(app.awaiting_guess(), "after a forced token, a new question");
}

/// `--predict` on the real model at `w`x`h`, the prompt read.
fn predicting(w: u16, h: u16) -> (App, nexttoken::engine::session::Session) {
    let (mut s, info) = support::real_session_info();
    let mut app = App::new(common::config(w, h));
    app.predict.on = true;
    let first = app.update(Msg::Engine(Event::Loaded(info)));
    pump(&mut app, &mut s, first);
    (app, s)
}

/// The class guesses `text` (`/`, the text, enter), scored by the engine.
fn guess(app: &mut App, s: &mut nexttoken::engine::session::Session, text: &str) {
    let mut cmds = common::key(app, '/');
    cmds.extend(common::typing(app, text));
    cmds.extend(common::press(app, Key::Enter));
    pump(app, s, cmds);
}
