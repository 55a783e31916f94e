//! The lab on screen: the compare view (two paths, and teacher forcing against free running), the
//! repetition panel with its loop alert, underlined repeats, and the keys that ask for them.

use crate::common;

use common::*;
use nexttoken::app::keymap::{Key, Mode};
use nexttoken::app::{Msg, SidePanel};
use nexttoken::protocol::{
    AlignedStep, Command, Comparison, Event, PathSummary, PathToken, Source, TokenRecord,
};

fn token(id: u32, text: &str, forced: bool, logprob: f64, rank: usize, entropy: f64) -> PathToken {
    PathToken {
        token: tv(id, text),
        forced,
        prob: logprob.exp(),
        logprob,
        rank,
        entropy,
        top1: tv(7042, " Paris"),
    }
}

/// Two paths forked at their first generated step (index 0, "step 1" on screen): A took " Paris", B
/// was forced to " Berlin"; they agree again from index 1 ("step 2").
fn comparison() -> Comparison {
    let a = [
        (7042, " Paris", -0.26, 1.47),
        (30, ".", -0.41, 1.20),
        (198, "\n", -1.01, 3.41),
        (198, "\n", -0.73, 2.98),
        (504, "The", -1.92, 4.91),
    ];
    let b = [
        (11452, " Berlin", -7.01, 1.47),
        (30, ".", -0.45, 1.48),
        (198, "\n", -1.28, 3.78),
        (198, "\n", -0.90, 3.56),
        (504, "The", -1.94, 5.00),
    ];
    let js = [0.0, 0.012, 0.049, 0.015, 0.016];
    let steps = (0..5)
        .map(|i| AlignedStep {
            step: i,
            a: Some(token(a[i].0, a[i].1, false, a[i].2, 0, a[i].3)),
            b: Some(token(
                b[i].0,
                b[i].1,
                i == 0,
                b[i].2,
                if i == 0 { 27 } else { 0 },
                b[i].3,
            )),
            kl_ab: Some(js[i] * 3.5),
            kl_ba: Some(js[i] * 4.0),
            js: Some(js[i]),
            same_top1: true,
        })
        .collect();
    let summary = |leaf, text: &str, lp: f64, forced: f64, mean: f64, own| PathSummary {
        leaf,
        text: text.into(),
        tokens: 5,
        logprob: lp,
        forced_logprob: forced,
        free_mean_logprob: Some(mean),
        free_tokens: own,
    };
    Comparison {
        fork_step: Some(0),
        a: summary(9, " Paris.\n\nThe", -4.33, 0.0, -0.87, 5),
        b: summary(14, " Berlin.\n\nThe", -11.58, -7.01, -1.14, 4),
        steps,
        mean_js: 0.023,
        rejoined_at: Some(1),
    }
}

fn compared(w: u16, h: u16, reference: bool) -> nexttoken::app::App {
    let mut app = ready_app(w, h);
    if reference {
        key(&mut app, 'r');
        typing(&mut app, " Berlin.");
        let cmds = press(&mut app, Key::Enter);
        assert!(matches!(&cmds[..], [Command::Reference { text }] if text == " Berlin."));
    }
    app.update(Msg::Engine(Event::Compared {
        comparison: Box::new(comparison()),
        view: None,
    }));
    app
}

/// Where one path has ended there is no top token to compare: the last column says "—", as the
/// divergence does, not "≠" (which had claimed the tops differ at steps B never reached).
#[test]
fn a_step_past_one_paths_end_is_neither_same_nor_different() {
    let mut app = ready_app(100, 30);
    let mut c = comparison();
    let last = c.steps.last_mut().unwrap();
    last.b = None;
    last.kl_ab = None;
    last.kl_ba = None;
    last.js = None;
    last.same_top1 = false;
    c.steps[1].same_top1 = false;
    app.update(Msg::Engine(Event::Compared {
        comparison: Box::new(c),
        view: None,
    }));
    let screen = screen_text(&app);
    let row = |step: &str| {
        screen
            .iter()
            .find(|l| l.contains(&format!("│ {step}  ")) || l.contains(&format!("│{step}  ")))
            .unwrap_or_else(|| panic!("no step {step}: {}", screen.join("\n")))
            .trim_end_matches([' ', '│'])
            .to_string()
    };
    assert!(row("5").ends_with('—'), "{}", row("5"));
    assert!(row("2").ends_with('≠'), "{}", row("2"));
    assert!(row("3").ends_with('='), "{}", row("3"));
}

#[test]
fn the_compare_view_opens_on_a_comparison_and_shows_both_paths() {
    for (w, h) in [(80, 24), (160, 48)] {
        let app = compared(w, h, false);
        assert_eq!(app.mode, Mode::Compare);
        let screen = screen_text(&app).join("\n");
        for want in [
            "Compare paths",
            "⟨␣Paris⟩",
            "⚑⟨␣Berlin⟩",
            "-7.01",
            "0.049",
            "fork at step 1",
        ] {
            assert!(screen.contains(want), "{w}x{h}: no {want:?} in\n{screen}");
        }
        // Steps counted from 1, as the status bar counts them.
        assert!(screen.contains("same tokens again from step 2"), "{screen}");
        assert!(screen.contains("▸1 "), "the fork's row is step 1: {screen}");
        assert!(!screen.contains("▸0 "), "{screen}");
        insta::assert_snapshot!(format!("compare_{w}x{h}"), screen);
    }
}

/// The mean of each path's own tokens says what it is over: the tokens from the fork on, and how
/// many. It had read "then -0.59 per own token" of a mean over 4 of a path's 8 own tokens (which
/// averaged -0.80), and B's "-0.05 per own token" was one token. Here the fork is at step 4 and A
/// and B chose 3 tokens themselves before it: they are not in the means, and the lines say so, in
/// words where both fit and both shorter at 80 columns, where the count and the mean stay whole.
#[test]
fn the_mean_of_own_tokens_says_it_is_from_the_fork_on_and_over_how_many() {
    let mut c = comparison();
    c.fork_step = Some(3);
    c.rejoined_at = None;
    (c.a.logprob, c.a.forced_logprob, c.a.tokens) = (-22.04, -15.6, 10);
    (c.a.free_mean_logprob, c.a.free_tokens) = (Some(-0.59), 4);
    (c.b.free_mean_logprob, c.b.free_tokens) = (Some(-0.05), 1);
    let wide = [
        "A: log p -22.0 over 10 tokens (-15.6 of it forced); mean -0.59 over its 4 own tokens from the fork on",
        "B: log p -11.6 over 5 tokens (-7.0 of it forced); mean -0.05 over its 1 own token from the fork on",
    ];
    let narrow = [
        "A: log p -22.0 over 10 tokens (-15.6 forced) · 4 own from the fork: mean -0.59",
        "B: log p -11.6 over 5 tokens (-7.0 forced) · 1 own from the fork: mean -0.05",
    ];
    for ((w, h), want) in [((160, 48), wide), ((80, 24), narrow)] {
        let screen = screen_text(&compared_with(w, h, c.clone())).join("\n");
        for line in want {
            assert!(screen.contains(line), "{w}x{h}: {line:?} in\n{screen}");
        }
        assert!(!screen.contains("per own token"), "{screen}");
    }
    // Paths that do not differ: the mean is over each whole path's own tokens, and names no fork.
    c.fork_step = None;
    let screen = screen_text(&compared_with(160, 48, c)).join("\n");
    let line = "A: log p -22.0 over 10 tokens (-15.6 of it forced); mean -0.59 over its 4 own tokens\u{20}";
    assert!(screen.contains(line), "{screen}");
}

/// The compare view open on `c`, at `w`x`h`.
fn compared_with(w: u16, h: u16, c: Comparison) -> nexttoken::app::App {
    let mut app = ready_app(w, h);
    app.update(Msg::Engine(Event::Compared {
        comparison: Box::new(c),
        view: None,
    }));
    app
}

/// KL both ways is on screen: in columns where the table has room, else on a line for the step at the
/// top of the table, which ↑/↓ move.
#[test]
fn the_compare_view_shows_kl_both_ways() {
    for w in [100, 160] {
        let screen = screen_text(&compared(w, 30, false)).join("\n");
        let head = screen.lines().find(|l| l.contains("step A")).unwrap();
        assert!(head.contains("KL(A‖B) KL(B‖A)"), "{w}: {head}");
        let row = screen.lines().find(|l| l.contains(" 3    ⟨↵⟩")).unwrap();
        assert!(row.contains("0.172   0.196  0.049"), "{w}: {row}");
        let screen = screen_text(&compared(w, 30, true)).join("\n");
        assert!(screen.contains("KL(free‖ref) KL(ref‖free)"), "{screen}");
    }
    let mut app = compared(80, 24, false);
    press(&mut app, Key::Down);
    press(&mut app, Key::Down);
    let screen = screen_text(&app).join("\n");
    assert!(
        !screen.contains("KL(A‖B) KL(B‖A)"),
        "no room for columns at 80"
    );
    assert!(
        screen.contains("step 3 (top row): KL(A‖B) 0.172 · KL(B‖A) 0.196 · JS 0.049"),
        "{screen}"
    );
    let mut app = compared(80, 24, true);
    press(&mut app, Key::Down);
    let screen = screen_text(&app).join("\n");
    assert!(
        screen.contains("step 2 (top row): KL(free‖ref) 0.042 · KL(ref‖free) 0.048 · JS 0.012"),
        "{screen}"
    );
}

#[test]
fn the_teacher_forcing_view_labels_the_reference() {
    for (w, h) in [(80, 24), (160, 48)] {
        let app = compared(w, h, true);
        let screen = screen_text(&app).join("\n");
        for want in ["Teacher forcing", "reference", "free", "perplexity", "#28"] {
            assert!(screen.contains(want), "{w}x{h}: no {want:?} in\n{screen}");
        }
        // NLL is the reference's mean negative log-prob: 11.58 / 5.
        assert!(screen.contains("NLL 2.32"), "{screen}");
        insta::assert_snapshot!(format!("reference_{w}x{h}"), screen);
    }
}

#[test]
fn x_compares_the_path_on_screen_with_the_path_left_last() {
    let mut app = ready_app(100, 30);
    // One path only: x says how to make a second one.
    assert!(key(&mut app, 'x').is_empty());
    assert!(app
        .status
        .as_ref()
        .unwrap()
        .text
        .contains("one path so far"));
    let mut view = app.session.clone().unwrap();
    let info = |id, fork_position, current| branch_info(id, 3, fork_position, current);
    view.branches = vec![info(9, 5, false), info(14, 7, false), info(20, 8, true)];
    app.update(Msg::Engine(Event::Synced(view)));
    assert_eq!(key(&mut app, 'x'), vec![Command::Compare { a: 20, b: 14 }]);
    // In the branch list: the selected branch.
    app.update(Msg::Engine(Event::Compared {
        comparison: Box::new(comparison()),
        view: None,
    }));
    press(&mut app, Key::Esc);
    key(&mut app, 'b');
    press(&mut app, Key::Up);
    press(&mut app, Key::Up);
    assert_eq!(key(&mut app, 'x'), vec![Command::Compare { a: 20, b: 9 }]);
}

#[test]
fn the_compare_view_scrolls_and_closes() {
    let mut app = compared(80, 24, false);
    press(&mut app, Key::Down);
    press(&mut app, Key::Down);
    assert_eq!(app.lab.scroll, 2);
    for _ in 0..10 {
        press(&mut app, Key::Down);
    }
    assert_eq!(app.lab.scroll, 4, "stops at the last step");
    press(&mut app, Key::Esc);
    assert_eq!(app.mode, Mode::Normal);
}

/// An app whose generated text loops: "a b c d" four times after the prompt.
fn looping_app(w: u16, h: u16) -> nexttoken::app::App {
    looping_app_of(w, h, 16)
}

/// An app whose path ends in `n` generated tokens of the loop " and so on,".
fn looping_app_of(w: u16, h: u16, n: usize) -> nexttoken::app::App {
    let mut app = ready_app(w, h);
    let mut view = app.session.clone().unwrap();
    let unit = [(301, " and"), (302, " so"), (303, " on"), (304, ",")];
    for i in 0..n {
        let (id, text) = unit[i % 4];
        let p = (0.3 + 0.04 * i as f32).min(0.99);
        view.tokens.push(TokenRecord {
            token: tv(id, text),
            position: 5 + i,
            source: Source::Greedy,
            prob: p,
            logprob: p.ln(),
            rank: 0,
            entropy: (3.0 - 0.18 * i as f32).max(0.1),
        });
    }
    view.decode_ms = vec![10.0; n];
    view.decode_kv = vec![true; n];
    update(&mut app, Msg::Engine(Event::Synced(view)));
    app
}

#[test]
fn a_loop_is_named_in_the_status_bar_and_the_transcript() {
    for (w, h) in [(80, 24), (160, 48)] {
        let app = looping_app(w, h);
        let screen = screen_text(&app).join("\n");
        assert!(
            screen.contains("loop: period 4, ×4.0, since step 1"),
            "{w}x{h}:\n{screen}"
        );
    }
}

/// The loop alert (centred) and the scroll note (right) share the transcript's top border: neither
/// is cut; the note shortens, then goes, to leave the alert whole.
#[test]
fn the_loop_alert_and_the_scroll_note_do_not_collide() {
    for (w, h, note) in [
        (120, 36, Some("↑9 · ↓8")),
        (160, 48, Some("↓ 6 more below (end)")),
        (80, 24, None),
    ] {
        let mut app = looping_app_of(w, h, 600);
        press(&mut app, Key::PageUp);
        let top = screen_text(&app).remove(0);
        let alert = " loop: period 4, ×150.0, since step 1 ";
        assert!(top.contains(alert), "{w}x{h}: {top}");
        let after = top.split(alert).nth(1).unwrap();
        assert!(
            after.starts_with('─'),
            "{w}x{h}, cut after the alert: {top}"
        );
        match note {
            Some(n) => assert!(top.contains(&format!("─ {n} ")), "{w}x{h}: {top}"),
            None => assert!(!top.contains("more"), "{w}x{h}: {top}"),
        }
    }
}

#[test]
fn the_repetition_panel_charts_the_trap() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = looping_app(w, h);
        press(&mut app, Key::Tab);
        press(&mut app, Key::Tab);
        assert_eq!(app.screen.side, SidePanel::Repetition);
        let screen = screen_text(&app).join("\n");
        for want in ["Repetition", "p(chosen) per step", "entropy per step"] {
            assert!(screen.contains(want), "{w}x{h}: no {want:?} in\n{screen}");
        }
        // The loop goes on with " and" (one period back); it is not among the candidates shown.
        assert!(screen.contains("out of the top"), "{screen}");
        insta::assert_snapshot!(format!("repetition_{w}x{h}"), screen);
    }
}

/// With the engine's figures for the loop token, the panel shows it before and after the chain even
/// when a penalty pushed it far below the rows on screen.
#[test]
fn the_loop_token_shows_before_and_after_the_penalties_wherever_it_ranks() {
    let mut app = looping_app(100, 30);
    let mut view = app.session.clone().unwrap();
    view.next.loop_next = Some(nexttoken::protocol::TokenFate {
        token: tv(301, " and"),
        prob: 0.981,
        rank: 0,
        sampled_prob: 0.0,
        sampled_rank: 39,
    });
    app.update(Msg::Engine(Event::Synced(view.clone())));
    press(&mut app, Key::Tab);
    press(&mut app, Key::Tab);
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("next ⟨␣and⟩ model 98.1% #1"), "{screen}");
    assert!(screen.contains("→ sampler: cut (#40 by score)"), "{screen}");
    view.next.loop_next.as_mut().unwrap().sampled_prob = 0.052;
    app.update(Msg::Engine(Event::Synced(view)));
    let screen = screen_text(&app).join("\n");
    assert!(screen.contains("→ sampler 5.2% #40"), "{screen}");
}

#[test]
fn repeated_trigrams_are_underlined_and_nothing_else() {
    use ratatui::style::Modifier;
    let app = looping_app(100, 30);
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 30)).unwrap();
    terminal.draw(|f| nexttoken::ui::draw(f, &app)).unwrap();
    let buf = terminal.backend().buffer();
    // The transcript's first text row: the prompt, then the loop.
    let row: Vec<(String, bool)> = (1..99)
        .map(|x| {
            let c = &buf[(x, 1)];
            (
                c.symbol().to_string(),
                c.modifier.contains(Modifier::UNDERLINED),
            )
        })
        .collect();
    let text: String = row.iter().map(|(s, _)| s.as_str()).collect();
    let underlined: String = row
        .iter()
        .map(|(s, u)| if *u { s.as_str() } else { "_" })
        .collect();
    // The first copy of the unit and the first two tokens of the second are new; from the third
    // token of the second copy on, every token completes a repeated 3-gram.
    assert!(
        text.starts_with("The capital of France is and so on, and so on,"),
        "{text}"
    );
    assert!(!underlined[..40].contains("and so"), "{underlined}");
    assert!(underlined.contains(" on, and so on,"), "{underlined}");
}

/// JS is drawn on one fixed scale, 0 to ln 2 nats: a JS of 0.049 gets a sliver and one of 0.684 a
/// full bar (before, each bar was scaled to the largest shown, so both read `███` on their own); the
/// JS chart's y axis is numbered.
#[test]
fn js_bars_and_chart_use_a_fixed_scale_with_numbers() {
    let bar_of = |js_top: f64| {
        let mut c = comparison();
        c.steps[2].js = Some(js_top);
        let mut app = compared(160, 48, false);
        app.lab.comparison = Some(c);
        let screen = screen_text(&app).join("\n");
        let row = screen
            .lines()
            .find(|l| l.contains(" 3    ⟨↵⟩"))
            .unwrap()
            .to_string();
        (row, screen)
    };
    let (small, _) = bar_of(0.049);
    let (large, screen) = bar_of(0.684);
    let cells = |row: &str| row.chars().filter(|c| "█▉▊▋▌▍▎▏".contains(*c)).count();
    assert!(small.contains("0.049") && cells(&small) == 1, "{small}");
    assert!(large.contains("0.684") && large.contains("███"), "{large}");
    assert!(
        !small.contains("██"),
        "a small JS is not a full bar: {small}"
    );
    // The chart: its scale in nats, numbered.
    assert!(screen.contains("JS per step (nats)"), "{screen}");
    assert!(
        screen.contains("0.69") && screen.contains("0.35"),
        "{screen}"
    );
    assert_eq!(
        nexttoken::fmt::scaled_bar(nexttoken::fmt::JS_MAX - 1e-5, nexttoken::fmt::JS_MAX, 3),
        "███"
    );
    assert_eq!(
        nexttoken::fmt::scaled_bar(0.9, nexttoken::fmt::JS_MAX, 3),
        "██▸"
    );
}

/// Tuning the sampler while a loop is on screen: the sampler panel opens beside the repetition panel,
/// never over it (before, both took the same place), at both sizes.
#[test]
fn the_sampler_panel_leaves_the_repetition_panel_in_view() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = looping_app(w, h);
        press(&mut app, Key::Tab);
        press(&mut app, Key::Tab);
        assert_eq!(app.screen.side, SidePanel::Repetition);
        key(&mut app, 's');
        assert_eq!(app.mode, Mode::Sampler);
        let areas = nexttoken::ui::layout::areas(&app);
        let rep = areas.repetition.expect("the repetition panel stays");
        assert!(
            rep.intersection(areas.sampler).is_empty(),
            "{w}x{h}: {rep:?} {:?}",
            areas.sampler
        );
        let screen = screen_text(&app).join("\n");
        for want in ["Repetition", "loop: period 4", "Sampler", "repeat penalty"] {
            assert!(screen.contains(want), "{w}x{h}: no {want:?} in\n{screen}");
        }
        insta::assert_snapshot!(format!("sampler_beside_loops_{w}x{h}"), screen);
    }
}

/// A comparison longer than the table: the rows shown and the "↓ N more steps" line count every
/// step (the line had taken the last row's place and said one fewer), and every row keeps its `top`
/// mark inside the panel (at 100 columns, with the KL columns, a row had run one column past it).
#[test]
fn a_long_comparison_counts_the_steps_below_and_every_row_fits() {
    for (w, h) in [(80, 24), (100, 30)] {
        let mut c = comparison();
        c.steps = (0..16)
            .map(|i| AlignedStep {
                step: i,
                ..c.steps[i % 5].clone()
            })
            .collect();
        let mut app = ready_app(w, h);
        app.update(Msg::Engine(Event::Compared {
            comparison: Box::new(c),
            view: None,
        }));
        let screen = screen_text(&app);
        let rows: Vec<&String> = screen
            .iter()
            .filter(|l| {
                let rest = l.trim_start_matches('│').trim_start_matches(['▸', ' ']);
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                !digits.is_empty() && l.contains('⟨')
            })
            .collect();
        let more = screen
            .iter()
            .find_map(|l| {
                l.split("↓ ")
                    .nth(1)?
                    .split(" more step")
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or(0usize);
        assert!(more > 0, "{w}x{h}: the table is shorter than 16 steps");
        assert_eq!(rows.len() + more, 16, "{w}x{h}:\n{}", screen.join("\n"));
        for row in rows {
            let inside = row.trim_end().trim_end_matches('│').trim_end();
            assert!(
                inside.ends_with('=') || inside.ends_with('≠'),
                "{w}x{h}: a row without its top mark: {row}"
            );
        }
    }
}

/// A reference compared with free running leaves the free run on screen (the engine's documented
/// choice): closing the view had said nothing, and the class's text seemed to have grown by itself.
/// The status line says what is on screen and how to go back.
#[test]
fn closing_a_reference_comparison_says_the_free_run_is_on_screen() {
    let mut app = compared(100, 30, true);
    assert_eq!(app.mode, Mode::Compare);
    press(&mut app, Key::Esc);
    assert_eq!(app.mode, Mode::Normal);
    let said = app.status.as_ref().expect("a message").text.clone();
    assert!(
        said.contains("the free run's 5 tokens") && said.contains("U goes back"),
        "{said}"
    );
    assert!(screen_text(&app)
        .join("\n")
        .contains("the free run's 5 tokens"));
    // Closing a comparison of two branches says nothing of the kind.
    let mut app = compared(100, 30, false);
    press(&mut app, Key::Esc);
    assert!(app
        .status
        .as_ref()
        .is_none_or(|s| !s.text.contains("free run")));
}
