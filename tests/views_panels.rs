//! The branch list and the help, as snapshots with targeted asserts: labelled columns and the text
//! around each fork; help that says what is below when it does not fit, and explains the screen.

mod common;

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
