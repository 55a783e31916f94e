//! The text boxes as a user edits them: a cursor that moves and deletes where it is, a multi-line prompt
//! editor whose lines reach the engine as lines, the search list by probability with true ranks,
//! rewinding by clicking a token, and scrolling the attention keys.

use crate::common;

use common::*;
use nexttoken::app::keymap::{Action, Key, Mode};
use nexttoken::app::{App, Msg};
use nexttoken::protocol::{Command, Event};
use nexttoken::ui::layout;
use ratatui::backend::{Backend, TestBackend};
use ratatui::Terminal;

/// The app with the prompt editor open on `text` (the prompt it starts from replaced).
fn editing(text: &str) -> App {
    let mut app = ready_app(80, 24);
    key(&mut app, 'p');
    while !app.input.text().is_empty() {
        press(&mut app, Key::Backspace);
    }
    app.update(Msg::Paste(text.into()));
    app
}

/// The text with `|` where the cursor is.
fn marked(app: &App) -> String {
    let mut s = app.input.text().to_string();
    s.insert(app.input.editor.cursor(), '|');
    s
}

/// Where the terminal's cursor is after a frame, and the screen's rows.
fn cursor_and_rows(app: &App) -> ((u16, u16), Vec<String>) {
    let mut t = Terminal::new(TestBackend::new(app.screen.width, app.screen.height)).unwrap();
    t.draw(|f| nexttoken::ui::draw(f, app)).unwrap();
    let p = t.backend_mut().get_cursor_position().unwrap();
    let buf = t.backend().buffer().clone();
    let rows = (0..buf.area.height)
        .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect())
        .collect();
    ((p.x, p.y), rows)
}

#[test]
fn the_cursor_moves_and_typing_goes_in_where_it_is() {
    let mut app = editing("Q: 2+2?\nA: 4");
    assert_eq!(
        marked(&app),
        "Q: 2+2?\nA: 4|",
        "a paste leaves the cursor after it"
    );
    press(&mut app, Key::Left);
    press(&mut app, Key::Left);
    typing(&mut app, "=");
    assert_eq!(marked(&app), "Q: 2+2?\nA:=| 4");
    press(&mut app, Key::Up);
    assert_eq!(marked(&app), "Q: |2+2?\nA:= 4", "↑ keeps the column");
    press(&mut app, Key::Home);
    typing(&mut app, ">");
    assert_eq!(marked(&app), ">|Q: 2+2?\nA:= 4");
    press(&mut app, Key::End);
    press(&mut app, Key::Down);
    assert_eq!(marked(&app), ">Q: 2+2?\nA:= 4|");
    press(&mut app, Key::Ctrl('a'));
    press(&mut app, Key::Delete);
    assert_eq!(marked(&app), ">Q: 2+2?\n|:= 4");
    press(&mut app, Key::Ctrl('e'));
    press(&mut app, Key::Ctrl('w'));
    assert_eq!(marked(&app), ">Q: 2+2?\n:= |");
    press(&mut app, Key::Ctrl('u'));
    assert_eq!(marked(&app), ">Q: 2+2?\n|");
    press(&mut app, Key::Backspace);
    assert_eq!(marked(&app), ">Q: 2+2?|", "backspace joins the lines");
    // A paste goes in at the cursor, with its line breaks.
    press(&mut app, Key::Ctrl('a'));
    app.update(Msg::Paste("one\r\ntwo\n".into()));
    assert_eq!(marked(&app), "one\ntwo\n|>Q: 2+2?");
}

#[test]
fn enter_reads_the_prompt_and_alt_enter_or_ctrl_j_breaks_the_line() {
    let mut app = editing("Q: 2+2?");
    assert!(press(&mut app, Key::AltEnter).is_empty());
    typing(&mut app, "A: 4");
    press(&mut app, Key::Ctrl('j'));
    typing(&mut app, "Q: 3+3?");
    assert_eq!(app.mode, Mode::Prompt, "a new line does not submit");
    let cmds = press(&mut app, Key::Enter);
    // The tree holds no generated work, so the prompt goes at once, its lines intact.
    assert_eq!(
        cmds,
        vec![Command::Prefill {
            prompt: "Q: 2+2?\nA: 4\nQ: 3+3?".into(),
            chat: false
        }]
    );
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.prompt.text, "Q: 2+2?\nA: 4\nQ: 3+3?");
}

#[test]
fn reopening_the_editor_shows_the_prompt_with_its_lines_and_the_cursor_at_its_end() {
    let mut app = editing("a\nb\nc");
    press(&mut app, Key::Enter);
    app.update(Msg::Engine(Event::Synced(prefilled())));
    key(&mut app, 'p');
    assert_eq!(marked(&app), "a\nb\nc|");
    let (cursor, rows) = cursor_and_rows(&app);
    // The three lines are three rows of the box, one under the other, and the terminal's cursor sits
    // after the "c".
    let row_a = rows.iter().position(|r| r.contains("a↵")).unwrap();
    let col = rows[row_a].chars().position(|ch| ch == 'a').unwrap();
    let at = |row: usize| rows[row].chars().nth(col);
    assert_eq!(
        (at(row_a + 1), at(row_a + 2)),
        (Some('b'), Some('c')),
        "{rows:#?}"
    );
    assert_eq!(cursor, (col as u16 + 1, row_a as u16 + 2));
    assert!(
        rows.iter().any(|r| r.contains("enter ok · esc cancel")),
        "the hint stays: {rows:#?}"
    );
    assert!(rows.iter().any(|r| r.contains("alt-enter")), "{rows:#?}");
}

#[test]
fn the_editor_view_follows_the_cursor_through_a_long_prompt() {
    let text: Vec<String> = (0..60).map(|i| format!("line {i}")).collect();
    let mut app = editing(&text.join("\n"));
    let shows = |app: &App, s: &str| {
        let (_, rows) = cursor_and_rows(app);
        rows.iter()
            .any(|r| r.contains(&format!("{s}↵")) || r.contains(&format!("{s} ")))
    };
    assert!(shows(&app, "line 59"), "the end, where the cursor is");
    assert!(!shows(&app, "line 0"));
    for _ in 0..59 {
        press(&mut app, Key::Up);
    }
    assert_eq!(app.input.editor.line(), (0, 60));
    assert!(shows(&app, "line 0"), "the view went up with the cursor");
    let (cursor, rows) = cursor_and_rows(&app);
    assert!(rows[cursor.1 as usize].contains("line 0"), "{rows:#?}");
}

#[test]
fn search_and_forced_text_edit_at_the_cursor_and_draw_it() {
    let mut app = ready_app(80, 24);
    key(&mut app, '/');
    typing(&mut app, "Lon");
    assert!(
        press(&mut app, Key::Left).is_empty(),
        "a cursor move asks nothing"
    );
    let cmds = typing(&mut app, "y");
    assert_eq!(
        cmds,
        vec![Command::Search {
            query: "Loyn".into(),
            limit: nexttoken::app::SEARCH_LIMIT
        }]
    );
    let (cursor, rows) = cursor_and_rows(&app);
    let line = &rows[cursor.1 as usize];
    let at = line.find("Loyn").unwrap();
    // The cursor sits before the "n" (columns count characters: the line is ASCII up to it).
    assert_eq!(
        cursor.0 as usize,
        line[..at].chars().count() + 3,
        "{line:?}"
    );
    press(&mut app, Key::Esc);
    key(&mut app, 'i');
    typing(&mut app, " Paris is");
    press(&mut app, Key::Ctrl('w'));
    assert_eq!(app.input.text(), " Paris ");
}

#[test]
fn search_hits_show_their_rank_and_sort_by_probability() {
    let mut app = ready_app(100, 30);
    key(&mut app, '/');
    typing(&mut app, "ly");
    app.update(Msg::Engine(Event::SearchResults {
        query: "ly".into(),
        hits: vec![
            hit(4501, "ly", 0.00003, 9120),
            hit(4500, " Lyon", 0.0012, 212),
        ],
    }));
    let text = screen_text(&app).join("\n");
    assert!(text.contains("#9121") && text.contains("#213"), "{text}");
    assert!(text.contains("by match"), "{text}");
    let row = |app: &App, s: &str| screen_text(app).iter().position(|r| r.contains(s)).unwrap();
    assert!(
        row(&app, "⟨ly⟩") < row(&app, "⟨␣Lyon⟩"),
        "match order first"
    );
    let tab = nexttoken::app::keymap::key_for(Mode::Search, Action::ToggleHitOrder);
    assert_eq!(tab.as_deref(), Some("tab"));
    press(&mut app, Key::Tab);
    assert!(screen_text(&app).join("\n").contains("by probability"));
    assert!(row(&app, "⟨␣Lyon⟩") < row(&app, "⟨ly⟩"), "likeliest first");
    // Enter forces the hit highlighted in the order shown.
    assert_eq!(
        press(&mut app, Key::Enter),
        vec![Command::Force { token_id: 4500 }]
    );
}

/// A search hit's "list" column is its row in the next-token panel, counted among the rows the panel
/// shows: the engine sent 30 candidates, the panel had room for 16, and a hit read "list #17 ... its
/// row among the 30 shown", a row no one could see or select.
#[test]
fn a_hits_list_row_counts_only_the_rows_on_screen() {
    let mut app = ready_app(100, 30);
    let mut view = app.session.clone().unwrap();
    let first = view.next.candidates[0].clone();
    view.next.candidates = (0..30)
        .map(|i| nexttoken::protocol::Candidate {
            token: tv(20_000 + i, &format!(" w{i}")),
            rank: i as usize,
            ..first.clone()
        })
        .collect();
    app.update(Msg::Engine(Event::Synced(view)));
    let rows = app.candidates_on_screen().len();
    assert!((5..30).contains(&rows), "{rows} rows fit");
    key(&mut app, '/');
    typing(&mut app, "w");
    app.update(Msg::Engine(Event::SearchResults {
        query: "w".into(),
        hits: vec![hit(20_001, " w1", 0.01, 1), hit(20_025, " w25", 0.001, 25)],
    }));
    let text = screen_text(&app).join("\n");
    let line = |s: &str| text.lines().find(|l| l.contains(s)).unwrap().to_string();
    assert!(line("⟨␣w1⟩").contains("#2"), "{text}");
    assert!(line("⟨␣w25⟩").contains("—"), "not on screen: {text}");
    assert!(text.contains(&format!("among the {rows} shown")), "{text}");
}

/// The screen cell of the first character of `needle` in the transcript panel.
fn cell_of(app: &App, needle: &str) -> (u16, u16) {
    let rows = screen_text(app);
    let area = layout::areas(app).transcript;
    for y in area.y..area.y + area.height {
        let row = &rows[y as usize];
        if let Some(i) = row.find(needle) {
            return (row[..i].chars().count() as u16, y);
        }
    }
    panic!("{needle:?} not in the transcript:\n{}", rows.join("\n"));
}

#[test]
fn a_click_on_a_generated_token_rewinds_to_just_before_it() {
    let mut app = long_app(80, 24, 6);
    let tokens = app.session.as_ref().unwrap().tokens.len();
    // " w3" is position 5 + 3; everything from it on goes.
    let (column, row) = cell_of(&app, "w3");
    let cmds = app.update(Msg::Click { column, row });
    assert_eq!(cmds, vec![Command::Rewind { n: tokens - 8 }]);
    assert!(app.is_busy());
    let same = app.session.clone().unwrap();
    app.update(Msg::Engine(Event::Synced(same)));
    // The prompt is not rewindable.
    let (column, row) = cell_of(&app, "capital");
    assert!(app.update(Msg::Click { column, row }).is_empty());
    let said = app
        .status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default();
    assert!(said.contains("prompt is not rewindable"), "{said}");
    // A click outside any token does nothing.
    let area = layout::areas(&app).transcript;
    assert!(app
        .update(Msg::Click {
            column: area.x,
            row: area.y
        })
        .is_empty());
}

#[test]
fn a_click_rewinds_in_a_scrolled_transcript_too() {
    let mut app = long_app(80, 24, 120);
    press(&mut app, Key::PageUp);
    assert!(app.screen.scroll_back > 0);
    let rows = screen_text(&app);
    let area = layout::areas(&app).transcript;
    // The first word drawn in the scrolled view: a click on it rewinds to it.
    let y = area.y + 1;
    let row = &rows[y as usize];
    let word = row
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| w.starts_with('w'))
        .unwrap();
    let i: usize = word[1..].parse().unwrap();
    let (column, row) = (row[..row.find(word).unwrap()].chars().count() as u16, y);
    let tokens = app.session.as_ref().unwrap().tokens.len();
    let cmds = app.update(Msg::Click { column, row });
    assert_eq!(
        cmds,
        vec![Command::Rewind {
            n: tokens - (5 + i)
        }]
    );
}

#[test]
fn the_attention_keys_scroll_back_within_the_window_and_say_where_it_ends() {
    let mut app = long_path_app(80, 24, 40, 16);
    let panel = |app: &App| {
        let area = layout::areas(app).attention.unwrap();
        screen_text(app)[area.y as usize..(area.y + area.height) as usize].join("\n")
    };
    let before = panel(&app);
    assert!(!before.contains("newer"), "{before}");
    key(&mut app, '<');
    assert_eq!(app.focus.key_scroll, 1);
    let after = panel(&app);
    assert!(after.contains("1 newer"), "{after}");
    assert!(after.contains("looks most at"), "{after}");
    assert_ne!(before, after);
    for _ in 0..40 {
        key(&mut app, '<');
    }
    let max = nexttoken::ui::attention::max_key_scroll(&app);
    assert!(max > 1 && app.focus.key_scroll == max);
    let said = app
        .status
        .as_ref()
        .map(|s| s.text.clone())
        .unwrap_or_default();
    assert!(said.contains("oldest key"), "{said}");
    let end = panel(&app);
    assert!(
        end.contains("oldest key carried") || end.contains("end"),
        "{end}"
    );
    // Back to the newest in as many presses.
    for _ in 0..max {
        key(&mut app, '>');
    }
    assert_eq!(app.focus.key_scroll, 0);
    assert_eq!(panel(&app), before);
}

#[test]
fn help_lists_the_text_box_keys_and_how_to_select_with_the_mouse() {
    let mut app = ready_app(160, 48);
    key(&mut app, '?');
    // All of the help, scrolled through.
    let mut text = String::new();
    for _ in 0..60 {
        text += &screen_text(&app).join("\n");
        press(&mut app, Key::Down);
    }
    for want in [
        "ctrl-w",
        "ctrl-u",
        "alt-enter",
        "In a text box",
        "Shift+drag",
    ] {
        assert!(
            text.contains(want),
            "{want:?} missing from the help:\n{text}"
        );
    }
}
