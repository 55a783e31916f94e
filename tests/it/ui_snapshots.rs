//! Whole-screen snapshots on ratatui's `TestBackend` at 80x24, 100x30 and 160x48, from report fixtures: what a
//! teacher sees. Review changes with `cargo insta review` (or `INSTA_UPDATE=always` and read the .snap).

use crate::common;

use common::*;
use nexttoken::app::keymap::Key;
use nexttoken::app::{App, Msg, ThemeKind};
use nexttoken::protocol::{Event, Source};
use ratatui::backend::TestBackend;
use ratatui::style::Modifier;
use ratatui::Terminal;

/// The smallest full screen, the projector, and a wide terminal.
const SIZES: [(u16, u16); 3] = [(80, 24), (100, 30), (160, 48)];

fn render(app: &App) -> Terminal<TestBackend> {
    let mut terminal =
        Terminal::new(TestBackend::new(app.screen.width, app.screen.height)).unwrap();
    terminal
        .draw(|frame| nexttoken::ui::draw(frame, app))
        .unwrap();
    terminal
}

fn screen(app: &App) -> String {
    render(app).backend().to_string()
}

fn keys(app: &mut App, keys: &str) {
    for c in keys.chars() {
        app.update(Msg::Key(Key::Char(c)));
    }
}

fn step(app: &mut App, report: nexttoken::protocol::StepReport) {
    app.update(Msg::Engine(Event::Stepped(report)));
}

/// After one sampled step: " Paris" committed, the next distribution shown.
fn after_first_step(w: u16, h: u16) -> App {
    let mut app = ready_app(w, h);
    keys(&mut app, " ");
    step(&mut app, step_after_is(0, Source::Sampled, true, 9.1));
    app
}

#[test]
fn loading() {
    let mut app = App::new(config(80, 24));
    app.update(Msg::Engine(Event::Loading("reading weights".into())));
    insta::assert_snapshot!(screen(&app));
}

#[test]
fn prefilled_first_distribution() {
    for (w, h) in SIZES {
        let app = ready_app(w, h);
        let s = screen(&app);
        assert!(s.contains("⟨␣Paris⟩"), "candidates show token texts");
        insta::assert_snapshot!(format!("prefilled_{w}x{h}"), s);
    }
}

#[test]
fn first_step() {
    for (w, h) in SIZES {
        let app = after_first_step(w, h);
        let s = screen(&app);
        assert!(s.contains("step 1"));
        insta::assert_snapshot!(format!("first_step_{w}x{h}"), s);
    }
}

#[test]
fn after_forcing_a_token() {
    for (w, h) in SIZES {
        let mut app = ready_app(w, h);
        keys(&mut app, "2");
        step(&mut app, step_after_is(1, Source::Forced, true, 9.3));
        let s = screen(&app);
        assert!(
            s.contains("is ⚑the"),
            "the forced token is marked in the transcript"
        );
        assert!(s.contains("⚑ forced ⟨␣the⟩"), "and its surprise is shown");
        insta::assert_snapshot!(format!("forced_{w}x{h}"), s);
    }
}

/// Several steps in, attention on layer 2, head 2 (a previous-token head).
fn attention_app(w: u16, h: u16) -> App {
    let mut app = after_first_step(w, h);
    for (pos, text, p) in [(6, ".", 0.55), (7, " It", 0.31), (8, " is", 0.42)] {
        keys(&mut app, " ");
        step(
            &mut app,
            later_step(pos, text, p, true, 8.7 + pos as f64 * 0.1),
        );
    }
    keys(&mut app, "]}}");
    app
}

#[test]
fn attention_panel() {
    for (w, h) in SIZES {
        let app = attention_app(w, h);
        let s = screen(&app);
        assert!(s.contains("layer 2/2 · head 2/3"));
        insta::assert_snapshot!(format!("attention_{w}x{h}"), s);
    }
}

#[test]
fn attention_mask_blocks_the_upper_triangle() {
    let app = attention_app(160, 48);
    let s = screen(&app);
    // The attention panel is the left column, below the transcript: row i of the 9x9 matrix has
    // 8 - i masked cells, and the newest row (▶) has none.
    let left: Vec<String> = s.lines().map(|l| l.chars().take(92).collect()).collect();
    let start = left.iter().position(|l| l.contains("Attention")).unwrap();
    let rows: Vec<&String> = left[start + 2..]
        .iter()
        .filter(|l| l.contains("·") && !l.contains("masked") || l.contains("▶"))
        .take(9)
        .collect();
    assert_eq!(rows.len(), 9, "{rows:#?}");
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.matches('·').count(), 8 - i, "row {i}: {row}");
    }
    assert!(rows[8].contains("▶"), "the newest row is marked");
}

#[test]
fn kv_cache_off() {
    for (w, h) in SIZES {
        let mut app = ready_app(w, h);
        keys(&mut app, "v");
        let mut view = prefilled();
        view.last_pass.kv_cache_on = false;
        app.update(Msg::Engine(Event::Synced(view)));
        if w < 120 {
            // The small layout shows timing in place of attention.
            app.update(Msg::Key(Key::Tab));
        }
        keys(&mut app, " ");
        step(&mut app, step_after_is(0, Source::Sampled, false, 21.0));
        for (pos, text, p) in [
            (6, ".", 0.55),
            (7, " It", 0.31),
            (8, " is", 0.42),
            (9, " a", 0.2),
        ] {
            keys(&mut app, " ");
            // No cache: every pass re-reads the whole sequence, so it costs more each time.
            step(
                &mut app,
                later_step(pos, text, p, false, 21.0 + 4.2 * (pos - 5) as f64),
            );
        }
        let s = screen(&app);
        assert!(s.contains("KV CACHE OFF"));
        insta::assert_snapshot!(format!("kv_off_{w}x{h}"), s);
    }
}

#[test]
fn sampler_chain_view() {
    for (w, h) in SIZES {
        let mut app = ready_app(w, h);
        keys(&mut app, "t");
        insta::assert_snapshot!(format!("chain_{w}x{h}"), screen(&app));
    }
}

#[test]
fn sampler_panel() {
    let mut app = ready_app(80, 24);
    keys(&mut app, "s");
    insta::assert_snapshot!(screen(&app));
}

#[test]
fn search_panel() {
    let mut app = ready_app(80, 24);
    keys(&mut app, "/Ly");
    let hit = |id, text: &str, prob, rank| nexttoken::protocol::Candidate {
        token: tv(id, text),
        prob,
        logprob: prob.ln(),
        sampled_prob: 0.0,
        rank,
    };
    app.update(Msg::Engine(Event::SearchResults {
        query: "Ly".into(),
        hits: vec![
            hit(4500, " Lyon", 0.0012, 212),
            hit(4501, "Ly", 0.00003, 9120),
        ],
    }));
    insta::assert_snapshot!(screen(&app));
}

#[test]
fn help() {
    for (w, h) in SIZES {
        let mut app = ready_app(w, h);
        keys(&mut app, "?");
        let s = screen(&app);
        assert!(s.contains("force candidate by number"));
        insta::assert_snapshot!(format!("help_{w}x{h}"), s);
    }
}

#[test]
fn too_small() {
    let mut app = ready_app(80, 24);
    app.update(Msg::Resize {
        width: 50,
        height: 15,
    });
    let s = screen(&app);
    assert!(s.contains("needs 60x20"));
    insta::assert_snapshot!(s);
}

#[test]
fn no_color_shows_boundaries_with_bars() {
    let mut app = after_first_step(80, 24);
    app.screen.theme = ThemeKind::NoColor;
    let terminal = render(&app);
    let s = terminal.backend().to_string();
    assert!(s.contains("The| capital| of| France| is| Paris"));
    let buf = terminal.backend().buffer();
    for cell in buf.content() {
        assert_eq!(
            cell.fg,
            ratatui::style::Color::Reset,
            "NO_COLOR: no colours"
        );
        assert_eq!(cell.bg, ratatui::style::Color::Reset);
    }
}

#[test]
fn colour_themes_alternate_token_backgrounds() {
    for theme in [ThemeKind::Default, ThemeKind::Projector] {
        let mut app = after_first_step(80, 24);
        app.screen.theme = theme;
        let terminal = render(&app);
        let buf = terminal.backend().buffer();
        // "The" starts at (1, 1) inside the border, " capital" right after it.
        let a = buf[(1, 1)].bg;
        let b = buf[(4, 1)].bg;
        assert_ne!(a, b, "neighbouring tokens differ in background");
        if theme == ThemeKind::Projector {
            assert!(buf[(1, 1)].modifier.contains(Modifier::BOLD));
        }
    }
}

#[test]
fn projector_theme_80x24() {
    let mut app = after_first_step(80, 24);
    app.screen.theme = ThemeKind::Projector;
    insta::assert_snapshot!(screen(&app));
}

#[test]
fn special_newline_and_byte_tokens() {
    let mut app = ready_app(80, 24);
    let mut view = prefilled();
    let chat = [
        "<|im_start|>",
        "user",
        "\n",
        "Capital",
        " of",
        " France",
        "?",
        "<|im_end|>",
        "\n",
        "<|im_start|>",
        "assistant",
        "\n",
    ];
    view.tokens = chat
        .iter()
        .enumerate()
        .map(|(i, t)| nexttoken::protocol::TokenRecord {
            token: tv(i as u32 + 1, t),
            position: i,
            source: Source::Prompt,
            prob: 1.0,
            logprob: 0.0,
            rank: 0,
            entropy: 0.0,
        })
        .collect();
    view.prompt_len = view.tokens.len();
    app.prompt.chat = true;
    app.update(Msg::Engine(Event::Synced(view)));
    for (pos, text, p) in [(12, "Paris", 0.61), (13, " ", 0.2), (14, "<E2 9C>", 0.04)] {
        keys(&mut app, " ");
        step(&mut app, later_step(pos, text, p, true, 9.0));
    }
    let s = screen(&app);
    assert!(
        s.contains("<|im_start|>user↵"),
        "special tokens and newlines show"
    );
    assert!(s.contains("<E2 9C>"), "partial UTF-8 shows as bytes");
    insta::assert_snapshot!(s);
}

/// The prompt editor on a few-shot prompt: its lines as lines, the cursor on the second one, the keys at
/// the foot, and the terminal's cursor where typing goes.
#[test]
fn prompt_editor_with_a_multi_line_prompt() {
    for (w, h) in SIZES {
        let mut app = ready_app(w, h);
        keys(&mut app, "p");
        while !app.input.text().is_empty() {
            app.update(Msg::Key(Key::Backspace));
        }
        app.update(Msg::Paste(
            "Q: What is 2+2?\nA: 4\nQ: What is the capital of France, the country west of Germany and north of Spain?\nA:".into(),
        ));
        app.update(Msg::Key(Key::Up));
        app.update(Msg::Key(Key::Up));
        let mut t = render(&app);
        let s = t.backend().to_string();
        assert!(s.contains("A: 4↵"), "{s}");
        assert!(s.contains("enter ok · esc cancel"), "{s}");
        assert!(s.contains("line 2 of 4"), "{s}");
        use ratatui::backend::Backend;
        let p = t.backend_mut().get_cursor_position().unwrap();
        let rows: Vec<&str> = s.lines().collect();
        // The cursor is after "A: 4" ("A:" has two cells, so the column kept from "A:" of line 4 is 2).
        let row = rows[p.y as usize];
        assert!(row.contains("A: 4↵"), "cursor row {}: {row}", p.y);
        insta::assert_snapshot!(format!("prompt_editor_{w}x{h}"), s);
    }
}
