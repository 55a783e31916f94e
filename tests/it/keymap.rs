//! The keymap table is the one place key names come from: every key hint drawn on screen, and the key
//! table in README.md, must name the keys the table binds. Change a key in `KEYMAP` and these tests
//! fail until the screen (built from the table) and the README agree.

use crate::common;

use common::*;
use nexttoken::app::keymap::{key_for, keys_for, Action, Binding, Mode, Scope, KEYMAP};
use nexttoken::app::{App, Msg};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn screen(app: &App) -> String {
    let mut terminal =
        Terminal::new(TestBackend::new(app.screen.width, app.screen.height)).unwrap();
    terminal
        .draw(|frame| nexttoken::ui::draw(frame, app))
        .unwrap();
    terminal.backend().to_string()
}

/// The key the table binds to `action` in `mode`; a hint for an unbound action is a bug.
fn k(mode: Mode, action: Action) -> String {
    key_for(mode, action).unwrap_or_else(|| panic!("{action:?} has no key in {mode:?}"))
}

fn assert_shows(s: &str, hints: &[String]) {
    for want in hints {
        assert!(s.contains(want.as_str()), "{want:?} missing from\n{s}");
    }
}

#[test]
fn main_screen_hints_name_the_keys_bound_to_their_actions() {
    use Action::*;
    let n = |a| k(Mode::Normal, a);
    // 160x48 shows every panel: transcript, distribution, attention and timing.
    let s = screen(&ready_app(160, 48));
    assert_shows(
        &s,
        &[
            format!(
                " {} {} layer · {} {} head ",
                n(PrevLayer),
                n(NextLayer),
                n(PrevHead),
                n(NextHead)
            ),
            format!(" {} → chain ", n(ToggleChain)),
            format!(" {}: KV cache ", n(ToggleKvCache)),
            format!("press {} to generate the first token", n(Step)),
        ],
    );
}

#[test]
fn help_and_panel_hints_name_the_keys_that_close_them() {
    let mut app = ready_app(80, 24);
    key(&mut app, '?');
    let close = keys_for(Mode::Help, Action::Close);
    assert!(close.len() >= 2, "help closes with at least two keys");
    assert_shows(
        &screen(&app),
        &[
            format!(" {} or {} closes ", close[0], close[1]),
            format!(" help · {} closes", close[0]),
        ],
    );

    let mut app = ready_app(80, 24);
    key(&mut app, 's');
    let close = k(Mode::Sampler, Action::Close);
    assert_shows(&screen(&app), &[format!(" sampler · {close} closes")]);
}

#[test]
fn text_input_hint_names_its_submit_and_cancel_keys() {
    for (open, mode) in [
        ('/', Mode::Search),
        ('i', Mode::ForceText),
        ('p', Mode::Prompt),
    ] {
        let mut app = ready_app(80, 24);
        key(&mut app, open);
        let want = format!(
            "{} ok · {} cancel",
            k(mode, Action::Submit),
            k(mode, Action::Close)
        );
        assert_shows(&screen(&app), &[want]);
    }
}

#[test]
fn too_small_screen_names_the_quit_key() {
    let mut app = ready_app(80, 24);
    app.update(Msg::Resize {
        width: 50,
        height: 15,
    });
    let want = format!("resize, or {} to quit", k(Mode::Normal, Action::Quit));
    assert_shows(&screen(&app), &[want]);
}

/// The key cells of README.md's key table, one list per row: the names written in backticks.
fn readme_key_rows() -> Vec<Vec<String>> {
    let readme = include_str!("../../README.md");
    let mut lines = readme
        .lines()
        .skip_while(|l| !l.starts_with("| keys | does |"));
    assert!(
        lines.next().is_some(),
        "README.md has no `| keys | does |` table"
    );
    lines
        .skip(1) // the |---|---| rule
        .take_while(|l| l.starts_with('|'))
        .map(|row| {
            let cell = row.split('|').nth(1).unwrap_or_default();
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(String::from)
                .collect()
        })
        .collect()
}

#[test]
fn readme_key_table_matches_the_keymap() {
    let main: Vec<&Binding> = KEYMAP
        .iter()
        .filter(|b| b.scope == Scope::Global || b.scope == Scope::In(Mode::Normal))
        .collect();
    let labels = |b: &Binding| -> Vec<String> { b.keys.iter().map(|p| p.label()).collect() };
    let rows = readme_key_rows();
    assert!(!rows.is_empty(), "README's key table has no rows");
    // Every key the README names is bound on the main screen, and named once.
    let named: Vec<&String> = rows.iter().flatten().collect();
    for (i, key) in named.iter().enumerate() {
        assert!(
            main.iter().any(|b| labels(b).contains(key)),
            "README names `{key}`, which the keymap does not bind on the main screen"
        );
        assert!(!named[..i].contains(key), "README names `{key}` twice");
    }
    // Every main-screen binding is in the README, all its keys in one row.
    for b in main {
        let keys = labels(b);
        assert!(
            rows.iter()
                .any(|row| keys.iter().all(|key| row.contains(key))),
            "README's key table lacks `{}` ({}) in one row",
            b.keys_label(),
            b.help
        );
    }
}

/// The compare view's hint names each key as the keymap binds it (it once said `=`, which is autoplay).
#[test]
fn the_compare_hint_names_the_keymaps_keys() {
    use nexttoken::app::keymap::{hint_key, Action, Mode};
    let hint = nexttoken::ui::compare::no_comparison_hint();
    let x = hint_key(Mode::Branches, Action::CompareBranch);
    assert!(hint.contains(&format!("press {x};")), "{hint}");
    assert!(hint.contains(&format!(
        "({})",
        hint_key(Mode::Normal, Action::OpenBranches)
    )));
    assert!(hint.contains(&format!(
        "with {}",
        hint_key(Mode::Normal, Action::OpenReference)
    )));
    assert!(!hint.contains('='), "{hint}");
}
