//! The branch list and the help, as snapshots with targeted asserts: labelled columns and the text
//! around each fork; help that says what is below when it does not fit, and explains the screen.

use crate::common;

use common::*;
use nexttoken::app::{App, Msg};
use nexttoken::protocol::*;

fn screen(app: &App) -> String {
    screen_text(app).join("\n")
}

fn branch(
    id: usize,
    len: usize,
    fork: usize,
    lp: f32,
    text: [&str; 2],
    current: bool,
) -> BranchInfo {
    BranchInfo {
        id,
        len,
        fork_position: fork,
        mean_logprob: lp,
        preview: format!("{}{}", text[0], text[1]),
        before_fork: text[0].into(),
        after_fork: text[1].into(),
        current,
        class_choices: 0,
        forced_at_fork: false,
    }
}

#[test]
fn branch_list_labels_its_columns() {
    for (w, h) in VIEW_SIZES {
        let mut app = long_path_app(w, h, 12, 16);
        let mut view = app.session.clone().unwrap();
        view.branches = vec![
            branch(
                11,
                7,
                12,
                -1.21,
                ["France is Paris. It is a city 🙂", ""],
                true,
            ),
            branch(
                14,
                3,
                7,
                -2.05,
                ["of France is Paris.", " It is the capital\nof"],
                false,
            ),
            branch(
                19,
                9,
                9,
                -0.87,
                ["is Paris. It", " was a city of light, known for"],
                false,
            ),
        ];
        app.update(Msg::Engine(Event::Synced(view)));
        typing(&mut app, "b");
        let s = screen(&app);
        assert!(s.contains("tokens") && s.contains("forks at"), "{s}");
        // Numbers a user can act on: the list's own order from 1, and the step where each branch
        // leaves the path on screen, counted as the status bar counts (prompt of 5: position 7 is
        // the third generated token). No internal node id, no absolute position.
        let row = |n: &str| {
            s.lines()
                .find(|l| l.contains(n) && l.contains("-2.05"))
                .unwrap_or_else(|| panic!("no row {n} in\n{s}"))
                .to_string()
        };
        assert!(row("  2 ").contains("step 3"), "{s}");
        let first = s.lines().find(|l| l.contains("-1.21")).unwrap();
        assert!(first.contains("▶●  1 ") && first.contains("—"), "{first}");
        assert!(
            s.lines()
                .any(|l| l.contains("  3 ") && l.contains("step 5")),
            "{s}"
        );
        assert!(!s.contains("@7") && !s.contains(" 14 "), "{s}");
        assert!(s.contains("capital↵"), "newlines show: {s}");
        insta::assert_snapshot!(format!("branches_{w}x{h}"), s);
    }
}

#[test]
fn help_at_the_smallest_size_says_what_is_below() {
    let mut app = ready_app(60, 20);
    typing(&mut app, "?");
    let s = screen(&app);
    assert!(s.contains("more lines below"), "{s}");
    assert!(s.contains("closes"), "{s}");
    for line in s.lines() {
        assert!(!line.contains("…"), "no help entry is cut: {line}");
    }
    insta::assert_snapshot!("help_60x20", s);
}

/// At 80 columns every sentence of the help is whole somewhere as it scrolls: none runs past the
/// popup's edge (ratatui cuts such a line without a mark).
#[test]
fn help_at_80_columns_cuts_no_sentence() {
    use nexttoken::app::keymap::Key;
    let mut app = ready_app(80, 24);
    typing(&mut app, "?");
    let mut seen = String::new();
    for _ in 0..60 {
        seen.push_str(&screen(&app));
        press(&mut app, Key::Down);
    }
    let flat: String = seen
        .lines()
        .map(|l| l.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(flat.contains("head map) lists its keys."), "{seen}");
}

#[test]
fn help_explains_colours_quotes_and_marks() {
    let mut app = ready_app(160, 48);
    typing(&mut app, "?");
    let s = screen(&app);
    for want in [
        "⟨␣Paris⟩",
        "␣ a space",
        "≥50%",
        "<1%",
        "masked",
        "◀ next",
        "░",
    ] {
        assert!(s.contains(want), "{want} missing:\n{s}");
    }
}

/// The timing panel says what TTFT and TPOT mean, and a bar too short to hold its number shows none:
/// the number would sit alone just above the step labels and read as one of them.
#[test]
fn timing_explains_its_terms_and_short_bars_carry_no_number() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = long_path_app(w, h, 6, 16);
        let mut view = app.session.clone().unwrap();
        view.prefill.ms = 1000.0;
        view.decode_ms = vec![9.0; 6];
        view.decode_kv = vec![true; 6];
        app.update(Msg::Engine(Event::Synced(view)));
        if w < 120 {
            press(&mut app, nexttoken::app::keymap::Key::Tab);
        }
        let s = screen(&app);
        let key = if w < 120 {
            "TTFT 1st token · TPOT per token"
        } else {
            "TTFT = time to first token · TPOT = time per output token"
        };
        assert!(s.contains(key), "{w}x{h}:\n{s}");
        let lines: Vec<&str> = s.lines().collect();
        let labels = lines
            .iter()
            .position(|l| l.contains("│ P    "))
            .unwrap_or_else(|| panic!("{w}x{h}: no bar labels in\n{s}"));
        let above = lines[labels - 1];
        assert!(
            above.contains("1000"),
            "the prefill bar holds its number: {above}"
        );
        assert!(
            !above.contains("9.0"),
            "{w}x{h}: a short bar's number: {above}"
        );
    }
}

/// Where the timing panel has no room for its chart (under a lesson at 80x24), each step's time
/// takes one row, and the chart's key, which had stood on the border under nothing, is gone. The
/// reading-vs-writing lesson points at exactly this: without the cache the last passes take longer.
/// The 21 cache-off steps do not fit, so the row is those steps condensed, each mark the fastest of
/// its share, as the lesson's check reads them: the first cache-off pass ran slow after a pause
/// (44.5 ms), the rest grew from 35.0, and the row says "35.0→43.5", where the newest steps alone had
/// read flat. On a projector (120x34, presenter) the row has room for every step, and had shown the
/// newest 27, two cached steps' 19 ms at its start; now the cache-off run alone, each mark the fastest
/// of its share (at most 8 marks), as at 80x24. With room (160x48), the chart and its key, and no row.
#[test]
fn a_timing_panel_too_short_for_its_chart_gives_the_steps_one_row() {
    use nexttoken::app::SidePanel;
    let steps = 29;
    let mut view = long_path_app(80, 24, steps + 5, 16).session.unwrap();
    view.decode_ms = [
        vec![4.2; 8],
        vec![44.5],
        (0..20).map(|i| 35.0 + i as f64 * 0.5).collect(),
    ]
    .concat();
    view.decode_kv = [vec![true; 8], vec![false; 21]].concat();
    view.last_pass.kv_cache_on = false;
    view.last_pass.tokens_fed = steps + 5;
    for (w, h) in [(80, 24), (120, 34), (160, 48)] {
        let lesson = nexttoken::lesson::builtin("reading-vs-writing")
            .unwrap()
            .unwrap();
        let mut app = App::new(config(w, h)).with_lesson(lesson);
        app.update(Msg::Engine(Event::Loaded(model_info())));
        app.update(Msg::Engine(Event::Synced(view.clone())));
        // Step 4, "The work grows with length", run: its narration above the panels.
        app.update(lesson_step_ran(3, view.clone()));
        app.screen.side = SidePanel::Timing;
        if w == 120 {
            app.presenter.on = true;
            app.presenter.side = Some(SidePanel::Timing);
        }
        let s = screen(&app);
        let row = s.lines().find(|l| l.contains("│steps "));
        if w < 160 {
            let row = row.unwrap_or_else(|| panic!("{w}x{h}: no row of steps:\n{s}"));
            // The cache-off steps, 9 to 29; the first share's fastest (35.0, not the slow 44.5)
            // a mark lower than the last share's (43.5) on a scale from zero.
            assert!(row.contains("steps 9-29 ▇"), "{row}");
            assert!(row.contains("█ 35.0→43.5 ms"), "{row}");
            assert!(!s.contains("P = prefill"), "a key under no chart:\n{s}");
        } else {
            assert!(row.is_none(), "{s}");
            assert!(s.contains("P = prefill"), "{s}");
        }
    }
}

/// In the one-row chart a token a speculative round wrote is a `*`, not a height: its time is a share
/// of the round's, and two rounds of 400 ms had squashed every plain step to the bottom tick. The
/// scale and the times are the plain steps'.
#[test]
fn the_one_row_chart_marks_a_rounds_tokens_apart() {
    use nexttoken::app::SidePanel;
    let steps = 29;
    let mut view = long_path_app(80, 24, steps + 5, 16).session.unwrap();
    view.decode_ms = (0..steps).map(|i| 62.0 + i as f64 * 0.5).collect();
    view.decode_kv = vec![true; steps];
    view.decode_round = vec![false; steps];
    for i in [26, 27] {
        view.decode_ms[i] = 400.0;
        view.decode_round[i] = true;
    }
    let lesson = nexttoken::lesson::builtin("reading-vs-writing")
        .unwrap()
        .unwrap();
    let mut app = App::new(config(80, 24)).with_lesson(lesson);
    app.update(Msg::Engine(Event::Loaded(model_info())));
    app.update(Msg::Engine(Event::Synced(view.clone())));
    app.update(lesson_step_ran(3, view.clone()));
    app.screen.side = SidePanel::Timing;
    let s = screen(&app);
    let row = s
        .lines()
        .find(|l| l.contains("-29 "))
        .unwrap_or_else(|| panic!("no row of steps:\n{s}"));
    // Steps 23-29: four plain steps of 73-74.5 ms fill their cells, then the rounds' two tokens,
    // then the newest plain step; the times are the first and last plain steps shown, and the mark
    // is keyed where the word "steps" stood.
    let inside = row.split('│').rev().nth(1).unwrap().trim_end();
    assert!(
        inside.contains("23-29 ████**█ 73.0→76.0 ms * round"),
        "{row}"
    );
    assert!(!inside.contains("400"), "{row}");
    // Without a round among them, the steps keep their word and no key.
    let mut short = view.clone();
    short.decode_ms = vec![70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0];
    short.decode_kv.truncate(9);
    short.decode_round = vec![false; 9];
    app.update(Msg::Engine(Event::Synced(short.clone())));
    app.update(lesson_step_ran(3, short));
    let s = screen(&app);
    let row = s.lines().find(|l| l.contains("│steps ")).unwrap();
    assert!(
        row.contains("│steps 1-9 ") && !row.contains("round"),
        "{row}"
    );
}

/// The transcript's last row leaves out a figure that does not fit, whole: in presenter mode at
/// 80x24 "−log p 0.92" had been cut to "−log p 0", a number that reads as another. Wide, all three
/// figures show.
#[test]
fn the_newest_tokens_figures_are_left_out_whole_never_cut() {
    for (w, h) in [(80, 24), (160, 48)] {
        let mut app = long_path_app(w, h, 30, 16);
        app.presenter.on = true;
        let screen = screen_text(&app);
        let line = screen
            .iter()
            .find(|l| l.contains("sampled ⟨"))
            .unwrap_or_else(|| panic!("{w}x{h}: no info line\n{}", screen.join("\n")));
        assert!(line.contains("p 40.0%"), "{line}");
        match w {
            80 => assert!(!line.contains("−log"), "{line}"),
            _ => assert!(line.contains("rank #1  −log p 0.92"), "{line}"),
        }
    }
}

/// A short attention panel (a projector's side panel under a lesson's narration) gives up its
/// legend before its matrix: at 100x30 in presenter mode the attention lesson's induction-head step
/// had shown only its "looks most at" line over blank rows.
#[test]
fn a_short_attention_panel_keeps_its_matrix_before_its_legend() {
    use nexttoken::app::SidePanel;
    // At 100x22 the side panel has seven rows inside: the key labels, three query rows, the hidden
    // keys' line and "looks most at", no legend; with more rows, the legend too.
    for (h, legend) in [(22, false), (30, true)] {
        let mut app = long_path_app(100, h, 30, 16);
        app.presenter.on = true;
        app.presenter.side = Some(SidePanel::Attention);
        let screen = screen_text(&app).join("\n");
        let newest = screen
            .lines()
            .find(|l| l.contains("▶  year ▒▒"))
            .unwrap_or_else(|| panic!("100x{h}: no matrix row\n{screen}"));
        assert!(newest.contains('░'), "{newest}");
        let rows = screen.lines().filter(|l| l.contains(" ▒▒")).count();
        assert!(rows >= 3, "100x{h}: {rows} query rows\n{screen}");
        assert!(screen.contains("looks most at"), "{screen}");
        assert_eq!(
            screen.contains("masked (future)"),
            legend,
            "100x{h}:\n{screen}"
        );
    }
}

/// A branch whose own first token was forced shows ⚑ after the fork mark, as the transcript and the
/// compare view mark it (the list had shown "…France is Paris▸," for a forced ",").
#[test]
fn the_branch_list_marks_a_forced_first_token() {
    let mut app = ready_app(100, 30);
    let mut view = app.session.clone().unwrap();
    let mut forced = branch(1, 2, 6, -2.0, ["France is Paris", ","], false);
    forced.forced_at_fork = true;
    view.branches = vec![
        branch(0, 2, 6, -1.0, ["France is Paris", "."], true),
        forced,
        branch(2, 2, 6, -1.5, ["France is Paris", "!"], false),
    ];
    app.update(Msg::Engine(Event::Synced(view)));
    key(&mut app, 'b');
    let s = screen(&app);
    assert!(s.contains("Paris▸⚑,"), "{s}");
    assert!(s.contains("Paris▸!") && !s.contains("▸⚑!"), "{s}");
}
