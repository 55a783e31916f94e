//! The attention map with keys before its window, as snapshots at 80x24, 100x30 and 160x48 with
//! targeted asserts: the first key keeps its column, what is hidden is said and summed from the data,
//! the "looks most at" line shows in every mode, and a wide character keeps the columns aligned.

use crate::common;

use common::*;
use nexttoken::app::App;

fn screen(app: &App) -> String {
    screen_text(app).join("\n")
}

/// The attention panel's lines: the screen cut to the panel's columns, from its title to its foot.
fn attention_panel(app: &App) -> Vec<String> {
    let a = nexttoken::ui::layout::areas(app)
        .attention
        .expect("the attention panel is on screen");
    let buf = render_buffer(app);
    (a.y..a.y + a.height)
        .map(|y| {
            (a.x..a.x + a.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect()
        })
        .collect()
}

fn render_buffer(app: &App) -> ratatui::buffer::Buffer {
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(
        app.screen.width,
        app.screen.height,
    ))
    .unwrap();
    t.draw(|f| nexttoken::ui::draw(f, app)).unwrap();
    t.backend().buffer().clone()
}

#[test]
fn the_first_key_shows_at_the_projector_size() {
    // 15 tokens, all inside the engine's window of 16: every key fits, "The" first.
    let app = long_path_app(100, 30, 15, 16);
    let panel = attention_panel(&app);
    let first_chars: String = words()[..15]
        .iter()
        .map(|w| w.trim().chars().next().unwrap())
        .filter(|c| c.len_utf8() == 1)
        .collect();
    let labels: String = panel[1]
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '.')
        .collect();
    assert!(labels.starts_with('T'), "{panel:#?}");
    assert_eq!(
        &labels[..first_chars.len().min(10)],
        &first_chars[..10],
        "{panel:#?}"
    );
    assert!(!panel.iter().any(|l| l.contains('┆')), "nothing is hidden");
}

#[test]
fn attention_says_what_it_hides() {
    for (w, h) in VIEW_SIZES {
        let app = long_path_app(w, h, 40, 16);
        let win = app.session.as_ref().unwrap().attention.clone();
        assert_eq!(win.start, 24);
        let panel = attention_panel(&app);
        let text = panel.join("\n");
        // Key 0 ("The") keeps its column, apart from the window behind a gap marker.
        assert!(text.contains('┆'), "{text}");
        let hidden = panel
            .iter()
            .find(|l| l.contains("┆ ") && l.contains('%'))
            .unwrap();
        // "┆ N keys …: X% …": the keys 1..=N are not drawn, and X is what the newest row gives them,
        // from the data: all of its weight less key 0's and the drawn keys'.
        let n: usize = hidden
            .split_whitespace()
            .find_map(|w| w.parse().ok())
            .unwrap();
        let row = win.len - 1;
        let expect: f32 = (0..win.n_head)
            .map(|head| {
                let drawn: f32 = (n + 1 - win.start..win.len)
                    .map(|c| win.get(0, head, row, c))
                    .sum();
                1.0 - win.first(0, head, row) - drawn
            })
            .sum::<f32>()
            / win.n_head as f32;
        let want = nexttoken::fmt::pct(expect);
        assert!(hidden.contains(&want), "{hidden} should say {want}");
        assert!(text.contains("looks most at"), "{text}");
        // The newest row's cell in the gap column: a dark shade where that weight is a quarter or
        // more (a row looking at a hidden key is not drawn as looking at nothing), else the mark.
        let column = |l: &String| l.chars().position(|c| c == '┆');
        let gap = panel.iter().find_map(column).unwrap();
        let newest = panel
            .iter()
            .find(|l| l.contains('▶') && !l.contains('%'))
            .unwrap();
        let cell = newest.chars().nth(gap).unwrap();
        match expect >= 0.25 {
            true => assert!("▓█".contains(cell), "{expect}: {newest}"),
            false => assert_eq!(cell, '┆', "{expect}: {newest}"),
        }
        insta::assert_snapshot!(format!("attention_hidden_{w}x{h}"), screen(&app));
    }
}

#[test]
fn looks_most_at_shows_for_the_mean_and_every_head() {
    for (w, h) in VIEW_SIZES {
        let mut app = long_path_app(w, h, 40, 16);
        for _ in 0..=N_HEAD {
            let text = attention_panel(&app).join("\n");
            assert!(text.contains("most at"), "{:?}\n{text}", app.focus.head);
            typing(&mut app, "}");
        }
    }
}

#[test]
fn columns_stay_aligned_around_a_wide_character() {
    use nexttoken::ui::attention_grid::{key_labels, query_row, Grid};
    let app = long_path_app(160, 48, 20, 16);
    let session = app.session.as_ref().unwrap();
    let win = &session.attention;
    let theme = nexttoken::ui::theme::Theme::new(app.screen.theme);
    for (width, rows) in [(90, 40), (60, 20), (34, 14)] {
        let g = Grid::fit(win, width, rows, 0).unwrap();
        let labels = key_labels(&g, &session.tokens, &theme);
        let cells = query_row(&app, &g, win, &session.tokens, win.len - 1, &theme);
        let widths = |l: &ratatui::text::Line| -> Vec<usize> {
            l.spans
                .iter()
                .map(|s| unicode_width::UnicodeWidthStr::width(s.content.as_ref()))
                .collect()
        };
        for label in &labels {
            assert_eq!(widths(label), widths(&cells), "width {width}: {label:?}");
        }
    }
}

#[test]
fn a_window_without_first_key_weights_draws_no_sink_and_still_says_what_it_hides() {
    let mut app = long_path_app(80, 24, 40, 16);
    let mut view = app.session.clone().unwrap();
    view.attention.forget_first_key();
    app.update(nexttoken::app::Msg::Engine(
        nexttoken::protocol::Event::Synced(view),
    ));
    let text = attention_panel(&app).join("\n");
    assert!(
        !text.contains('┆'),
        "no sink column without its weights:\n{text}"
    );
    // Keys 0..start+hidden are left out, and the line counts them from position 0.
    assert!(
        text.contains("keys hidden") || text.contains("not drawn"),
        "{text}"
    );
    assert!(text.contains("looks most at"), "{text}");
}

/// Emoji that are more than one character (a variation selector, a skin tone, a family joined by
/// zero-width joiners) keep every key column where its label is, across and written downwards.
#[test]
fn columns_stay_aligned_around_emoji_sequences() {
    use nexttoken::ui::attention_grid::{key_labels, query_row, Grid};
    let mut app = long_path_app(160, 48, 20, 16);
    let mut view = app.session.clone().unwrap();
    for (pos, text) in [(10, "❤️"), (12, " 👍🏽"), (15, "👨‍👩‍👧"), (18, "🇫🇷")]
    {
        view.tokens[pos].token.text = text.into();
    }
    app.update(nexttoken::app::Msg::Engine(
        nexttoken::protocol::Event::Synced(view),
    ));
    let session = app.session.as_ref().unwrap();
    let win = &session.attention;
    let theme = nexttoken::ui::theme::Theme::new(app.screen.theme);
    let widths = |l: &ratatui::text::Line| -> Vec<usize> {
        l.spans
            .iter()
            .map(|s| unicode_width::UnicodeWidthStr::width(s.content.as_ref()))
            .collect()
    };
    for (width, rows) in [(90, 40), (60, 20), (34, 14), (40, 30)] {
        let g = Grid::fit(win, width, rows, 0).unwrap();
        let labels = key_labels(&g, &session.tokens, &theme);
        for r in g.first_row..g.len {
            let cells = query_row(&app, &g, win, &session.tokens, r, &theme);
            for label in &labels {
                assert_eq!(widths(label), widths(&cells), "width {width}: {label:?}");
            }
        }
    }
    // And on screen: every row of the panel ends at its right border.
    for (w, h) in VIEW_SIZES {
        let mut app = app.clone();
        app.update(nexttoken::app::Msg::Resize {
            width: w,
            height: h,
        });
        let area = nexttoken::ui::layout::areas(&app).attention.unwrap();
        let buf = render_buffer(&app);
        for y in area.y + 1..area.y + area.height - 1 {
            let right = buf[(area.x + area.width - 1, y)].symbol().to_string();
            assert_eq!(right, "│", "{w}x{h} row {y}");
        }
    }
}

/// On a sliding-window layer (Gemma 3's local layers) the keys older than the window are marked `×`,
/// a glyph of their own (the future stays `·`: colour never the only cue), and the legend names both;
/// on a global layer the same row sees every key. The title says which kind the layer is.
#[test]
fn a_sliding_window_layer_marks_the_keys_outside_its_window() {
    for (w, h) in [(80, 24), (100, 30), (160, 48)] {
        let mut app = long_path_app(w, h, 8, 16);
        let newest = |app: &App, mark: char| {
            let panel = attention_panel(app);
            let row = panel
                .iter()
                .find(|l| l.contains('▶'))
                .expect("the newest row");
            row.matches(mark).count()
        };
        assert_eq!(newest(&app, '×'), 0, "a global layer sees all 8 keys");
        assert!(
            !screen(&app).contains("global"),
            "one kind of layer: no word"
        );
        // As a llama model reports it: every layer without a window.
        app.model.as_mut().unwrap().windows = vec![None, None];
        assert!(!screen(&app).contains("global"), "all global: no word");
        // Layer 1 local with a window of 3, layer 2 global (Gemma's pattern, in small).
        app.model.as_mut().unwrap().windows = vec![Some(3), None];
        assert_eq!(newest(&app, '×'), 5, "{}", screen(&app));
        assert_eq!(newest(&app, '·'), 0, "{}", screen(&app));
        let panel = attention_panel(&app).join("\n");
        assert!(panel.contains("× outside its window of 3 keys"), "{panel}");
        assert!(panel.contains("· masked (future)"), "{panel}");
        let s = screen(&app);
        let title = s.lines().find(|l| l.contains("Attention")).unwrap();
        assert!(title.contains("local"), "{w}x{h}: {title}");
        if w >= 160 {
            assert!(title.contains("layer 1/2 · local (window 3)"), "{title}");
            insta::assert_snapshot!(format!("attention_local_{w}x{h}"), s);
        }
        // The next layer is global.
        key(&mut app, ']');
        let s = screen(&app);
        let title = s.lines().find(|l| l.contains("Attention")).unwrap();
        assert!(title.contains("global"), "{w}x{h}: {title}");
        assert_eq!(newest(&app, '×'), 0);
    }
}

#[test]
fn scrolled_back_keys_show_what_the_newer_gap_holds_and_name_no_missing_column() {
    // A window of 32 keys: more than the columns at 80x24 and 100x30, so the keys scroll (at 160x48
    // they all fit).
    for (w, h) in [(80, 24), (100, 30)] {
        let mut app = long_path_app(w, h, 40, 32);
        // Layer 2's previous-token head: the newest row looks mostly at the key before it.
        app.focus.layer = 1;
        app.focus.head = nexttoken::app::HeadSel::Head(1);
        let looks = |app: &App| {
            let panel = attention_panel(app);
            panel
                .iter()
                .find(|l| l.contains("most at"))
                .cloned()
                .unwrap()
        };
        let before = looks(&app);
        assert!(
            !before.contains("not drawn") && !before.contains('┆'),
            "{before}"
        );
        for _ in 0..3 {
            key(&mut app, '<');
        }
        assert_eq!(app.focus.key_scroll, 3, "{w}x{h}");
        let panel = attention_panel(&app);
        let text = panel.join("\n");
        let win = app.session.as_ref().unwrap().attention.clone();
        let row = win.len - 1;
        // The newer keys the scroll left out have a gap column on the right, on every row: the
        // newest row's cell holds their weight (dark where it is a quarter or more); a row older
        // than all of them cannot see them and shows the mask.
        let gap = panel[1].chars().collect::<Vec<_>>();
        let gap = gap.iter().rposition(|&c| c == '┆').expect(&text);
        let newest = panel
            .iter()
            .position(|l| l.contains('▶') && !l.contains("looks most"))
            .unwrap();
        let newer: f32 = (win.len - 3..win.len).map(|c| win.get(1, 1, row, c)).sum();
        assert!(
            newer > 0.5,
            "the previous token is among the newer keys: {newer}"
        );
        let cell = |i: usize| panel[i].chars().nth(gap).unwrap();
        assert!("▓█".contains(cell(newest)), "{newer}: {text}");
        assert_eq!(cell(newest - 3), '·', "{text}");
        assert_eq!(cell(newest - 2), '┆', "{text}");
        // The line under the matrix gives the newer keys' weight apart from the older ones'.
        let hidden = panel.iter().find(|l| l.contains("3 newer")).expect(&text);
        let want = nexttoken::fmt::pct(newer);
        assert!(hidden.contains(&want), "{hidden} should say {want}");
        // "Looks most at" names the previous token, which has no column now: it says so.
        let after = looks(&app);
        assert!(
            after.contains("(not drawn)") || after.contains(" ┆"),
            "{after}"
        );
        insta::assert_snapshot!(format!("attention_scrolled_{w}x{h}"), screen(&app));
    }
}

/// A quoted token too long for its room is cut inside its brackets, so it still reads as one token
/// (the draw line had shown "⟨␣equatio… (#8 of 27"), and the attention summary's first figure keeps
/// its unit however narrow the panel (it had read "21.…").
#[test]
fn a_cut_token_keeps_its_bracket_and_a_figure_its_unit() {
    use nexttoken::fmt::fit_quoted;
    assert_eq!(fit_quoted("⟨␣equation⟩", 8), "⟨␣equa…⟩");
    assert_eq!(fit_quoted("⟨␣is⟩", 8), "⟨␣is⟩");
    for (w, h) in [(60, 20), (80, 24)] {
        let app = long_app(w, h, 12);
        let screen = screen_text(&app).join("\n");
        let line = screen
            .lines()
            .find(|l| l.contains("most at"))
            .unwrap_or_else(|| panic!("{screen}"));
        let after = line.split("most at").nth(1).unwrap();
        assert!(after.contains('%'), "{w}x{h}: {line}");
    }
}
