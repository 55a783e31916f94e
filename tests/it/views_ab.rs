//! The A/B panel on screen: model B's distribution beside model A's at the tip, the top-1 verdict, the
//! divergence and the running count of flips, the strip along the path; and `Tab`, which offers the
//! panel only when a model B is loaded.

use crate::common;

use common::*;
use nexttoken::app::keymap::Key;
use nexttoken::app::{App, Msg, SidePanel};
use nexttoken::protocol::{AbCandidate, AbStep, AbView, Event, Source};

fn step(position: usize, a: (u32, &str, f32), b: (u32, &str, f32), js: f64) -> AbStep {
    AbStep {
        position,
        a_top: tv(a.0, a.1),
        a_top_prob: a.2,
        b_top: tv(b.0, b.1),
        b_top_prob: b.2,
        same_top1: a.0 == b.0,
        kl_ab: js * 3.0,
        kl_ba: js * 3.5,
        js,
        b_chosen: None,
    }
}

/// B (2-bit) after "… France is": it prefers " capital" where A says " Paris".
fn ab_after_is() -> AbView {
    let next = [
        (3575, " capital", 0.18),
        (7042, " Paris", 0.12),
        (260, " the", 0.09),
    ];
    AbView {
        label: "q2_k".into(),
        detail: Some("q2_k on 210 matrices".into()),
        matrix_types: vec![("q2_k".into(), 210)],
        steps: vec![step(
            5,
            (7042, " Paris", 0.78),
            (3575, " capital", 0.18),
            0.548,
        )],
        next: next
            .iter()
            .enumerate()
            .map(|(i, &(id, text, prob))| AbCandidate {
                token: tv(id, text),
                prob,
                a_prob: [0.0012, 0.78, 0.06][i],
                a_rank: [40, 0, 1][i],
            })
            .collect(),
        next_entropy: 4.1,
        error: None,
        b_pass: (5, 31.5),
        by_text: false,
        b_tokens: vec![],
    }
}

fn ab_app(w: u16, h: u16) -> App {
    let mut app = App::new(config(w, h));
    app.update(Msg::Engine(Event::Loaded(model_info())));
    let mut view = prefilled();
    view.ab = Some(ab_after_is());
    app.update(Msg::Engine(Event::Synced(view)));
    app
}

#[test]
fn model_b_opens_beside_model_a_with_the_verdict_and_the_flips() {
    for (w, h) in [(80, 24), (160, 48)] {
        let app = ab_app(w, h);
        assert_eq!(app.screen.side, SidePanel::ModelB);
        let screen = screen_text(&app).join("\n");
        for want in [
            "B · q2_k",
            "top-1 differs",
            "JS 0.548",
            "flips",
            "⟨␣capital⟩",
            "q2_k on 210 matrices",
            "✗",
        ] {
            assert!(screen.contains(want), "{w}x{h}: no {want:?} in\n{screen}");
        }
        if w >= 120 {
            assert!(screen.contains("B read 5 tok in 31.5 ms"), "{screen}");
        }
        insta::assert_snapshot!(format!("model_b_{w}x{h}"), screen);
    }
}

/// A step folds B's new view in: the strip grows, the count follows, the verdict turns.
#[test]
fn a_step_carries_model_bs_view_along() {
    let mut app = ab_app(160, 48);
    let mut report = step_after_is(0, Source::Sampled, true, 9.0);
    let mut ab = ab_after_is();
    ab.steps[0].b_chosen = Some((0.12, 1));
    ab.steps
        .push(step(6, (30, ".", 0.55), (30, ".", 0.61), 0.021));
    report.ab = Some(ab);
    app.update(Msg::Engine(Event::Stepped(report)));
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("same top-1"), "{screen}");
    assert!(screen.contains("top-1 flips 1 of 2"), "{screen}");
    assert!(screen.contains("A · the session's model"), "{screen}");
    assert!(screen.contains("JS 0.021"), "{screen}");
    assert!(
        screen.contains("✗·"),
        "the strip marks the flip then the agreement:\n{screen}"
    );
}

/// B's failure is said in the panel; A's session goes on.
#[test]
fn model_bs_failure_is_said_in_its_panel() {
    let mut app = ab_app(120, 40);
    let mut view = prefilled();
    let mut ab = ab_after_is();
    ab.error = Some("model B: out of memory".into());
    view.ab = Some(ab);
    app.update(Msg::Engine(Event::Synced(view)));
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("model B: out of memory"), "{screen}");
}

/// `Tab` goes through the A/B panel only when there is a model B.
#[test]
fn tab_offers_the_ab_panel_only_with_a_model_b() {
    let cycle = |app: &mut App| {
        (0..4)
            .map(|_| {
                press(app, Key::Tab);
                app.screen.side
            })
            .collect::<Vec<_>>()
    };
    let mut with_b = ab_app(160, 48);
    assert_eq!(
        cycle(&mut with_b),
        [
            SidePanel::Attention,
            SidePanel::Timing,
            SidePanel::Repetition,
            SidePanel::ModelB
        ]
    );
    let mut without = ready_app(160, 48);
    assert_eq!(
        cycle(&mut without),
        [
            SidePanel::Timing,
            SidePanel::Repetition,
            SidePanel::Attention,
            SidePanel::Timing
        ]
    );
    assert!(!screen_text(&without).join("\n").contains("Model B"));
}

/// Model B with its own vocabulary: the panel says the two align by text, shows how B splits the
/// text, measures over the next character, and marks B's tokens that A has no token for.
#[test]
fn a_model_b_with_its_own_vocabulary_shows_its_own_tokens() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = App::new(config(w, h));
        app.update(Msg::Engine(Event::Loaded(model_info())));
        let mut view = prefilled();
        let mut ab = ab_after_is();
        ab.label = "gemma-3-270m-q4_k_m.gguf".into();
        ab.detail = None;
        ab.matrix_types.clear();
        ab.by_text = true;
        ab.next[0].a_rank = usize::MAX;
        ab.next[0].a_prob = 0.0;
        let words = ["<bos>", "The", " capital", " of", " France", " is"];
        ab.b_tokens = words
            .iter()
            .enumerate()
            .map(|(i, t)| tv(i as u32 + 2, t))
            .collect();
        view.ab = Some(ab);
        app.update(Msg::Engine(Event::Synced(view)));
        let screen = screen_text(&app).join("\n");
        for want in ["B reads:", "⟨␣France⟩⟨␣is⟩"] {
            assert!(screen.contains(want), "{w}x{h}: no {want:?} in\n{screen}");
        }
        if w < 120 {
            assert!(
                screen.contains("—"),
                "A has no token ⟨␣capital⟩ here:\n{screen}"
            );
        } else {
            assert!(screen.contains("JS over the next character"), "{screen}");
            assert!(screen.contains("· by text"), "{screen}");
        }
    }
}

/// With two vocabularies, ids say nothing across them: B's top token is flagged as not A's by its
/// text, even when its id in B's vocabulary is the id of A's top token.
#[test]
fn with_two_vocabularies_tokens_are_matched_by_text_not_id() {
    let mut app = App::new(config(80, 24));
    app.update(Msg::Engine(Event::Loaded(model_info())));
    let mut view = prefilled();
    let mut ab = ab_after_is();
    ab.by_text = true;
    // B's " capital" carries id 7042 in B's vocabulary: A's " Paris" in A's.
    ab.next[0].token.id = 7042;
    view.ab = Some(ab);
    app.update(Msg::Engine(Event::Synced(view)));
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| nexttoken::ui::draw(f, &app)).unwrap();
    let buf = terminal.backend().buffer();
    let lines = screen_text(&app);
    let (y, line) = lines
        .iter()
        .enumerate()
        .find(|(_, l)| l.contains(" 1 ⟨␣capital⟩"))
        .expect("B's top row");
    let col = line[..line.find("⟨␣capital⟩").unwrap()].chars().count() as u16;
    let flagged = nexttoken::ui::theme::Theme::new(app.screen.theme).warn_badge;
    assert_eq!(
        buf[(col, y as u16)].bg,
        flagged.bg.unwrap(),
        "{}",
        lines.join("\n")
    );
}

/// A q2_k model B whose rows mostly do not fit q2_k's blocks (SmolLM2: 30 matrices q2_k, 181 fell back
/// to q4_0): the title does not call it "q2_k" alone, and the note on the types fits the border at
/// every size. The note is the engine's own, from `RequantReport::summary`; the title reads the types
/// as data (`RequantReport::matrix_types`), never by parsing the note.
#[test]
fn a_requantised_b_that_fell_back_says_so_and_its_note_fits() {
    use nexttoken::engine::requant::{Requant, RequantReport};
    let mut report = RequantReport::default();
    report.counts.insert("q2_k".into(), 30);
    report.counts.insert("q4_0".into(), 181);
    let detail = report.summary(Requant::Q2K);
    let types = report.matrix_types();
    assert_eq!(
        types,
        vec![("q4_0".to_string(), 181), ("q2_k".to_string(), 30)]
    );
    for (w, h) in [(80, 24), (120, 36), (160, 48)] {
        let mut app = ab_app(w, h);
        let mut view = app.session.clone().unwrap();
        let ab = view.ab.as_mut().unwrap();
        ab.detail = Some(detail.clone());
        ab.matrix_types = types.clone();
        app.update(Msg::Engine(Event::Synced(view)));
        let screen = screen_text(&app);
        let all = screen.join("\n");
        // The title line: "q2_k" never stands alone as what B is.
        let title = screen
            .iter()
            .find(|l| l.contains('┌') && l.contains("B · "))
            .unwrap();
        assert!(
            title.contains("q4_0") || title.contains("/211"),
            "{w}x{h}: {title}"
        );
        // Nor does the header of B's own list, where there is one.
        if let Some(list) = screen
            .iter()
            .find(|l| l.contains("A · the session's model"))
        {
            assert!(list.contains("q4_0"), "{w}x{h}: {list}");
        }
        assert!(
            all.contains("181") || all.contains("q4_0"),
            "{w}x{h}:\n{all}"
        );
        // The bottom border carries the note on the types whole, in one of its forms, never cut.
        let whole = [
            format!(" {detail} "),
            " 181 of 211 matrices fell back to q4_0: rows not a multiple of 256 ".to_string(),
            " 181/211 fell back to q4_0 (rows not ×256) ".to_string(),
            " q2_k 30 · q4_0 181 ".to_string(),
        ];
        assert!(
            screen
                .iter()
                .any(|l| l.contains('└') && whole.iter().any(|f| l.contains(f.as_str()))),
            "{w}x{h}: no whole note in\n{all}"
        );
        if (w, h) != (120, 36) {
            insta::assert_snapshot!(format!("model_b_fell_back_{w}x{h}"), all);
        }
    }
}

/// The headline's figures give way whole: at 80x24 it had read "A ⟨␣Paris⟩ 78.0%" with B's top
/// token cut off, and at 100x30 "B ⟨␣The⟩ 13." (13.6%). Where all do not fit the two top tokens stay
/// (they differ), or a shared top token is said once with both percentages.
#[test]
fn the_headline_never_cuts_a_figure() {
    let head = |app: &App| {
        let screen = screen_text(app);
        let line = screen
            .iter()
            .find(|l| l.contains("top-1 differs") || l.contains("same top-1"))
            .unwrap()
            .clone();
        line.rsplit("││")
            .next()
            .unwrap()
            .trim_end_matches('│')
            .trim()
            .to_string()
    };
    let app = ab_app(80, 24);
    assert_eq!(head(&app), "top-1 differs   B ⟨␣capital⟩");
    let app = ab_app(100, 30);
    assert_eq!(head(&app), "top-1 differs   A ⟨␣Paris⟩ · B ⟨␣capital⟩");
    // The same top token: said once, both percentages whole; at 80 columns the percentages alone.
    for (w, h, want) in [
        (100, 30, "same top-1   ⟨␣Paris⟩: A 78.0% · B 13.6%"),
        (80, 24, "same top-1   A 78.0% · B 13.6%"),
    ] {
        let mut app = ab_app(w, h);
        let mut view = app.session.clone().unwrap();
        let ab = view.ab.as_mut().unwrap();
        ab.steps[0].b_top = tv(7042, " Paris");
        ab.steps[0].b_top_prob = 0.136;
        ab.steps[0].same_top1 = true;
        app.update(Msg::Engine(Event::Synced(view)));
        assert_eq!(head(&app), want);
    }
}
