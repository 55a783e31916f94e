//! State tests for the panels and selections around the main loop: search, prompt edit, chat, branches,
//! help, layer/head choice, and the keymap table itself. Same style as `app_state.rs`.

use crate::common;

use common::*;
use nexttoken::app::keymap::{self, Key, Mode, Scope, KEYMAP};
use nexttoken::app::{HeadSel, Msg};
use nexttoken::protocol::{BranchInfo, Command, Event};

#[test]
fn layer_and_head_selection_cycle() {
    let mut app = ready_app(80, 24);
    key(&mut app, ']');
    assert_eq!(app.focus.layer, 1);
    key(&mut app, ']');
    assert_eq!(
        app.focus.layer, 0,
        "wraps after the last of {N_LAYER} layers"
    );
    key(&mut app, '[');
    assert_eq!(app.focus.layer, 1);
    let mut seen = vec![];
    for _ in 0..4 {
        key(&mut app, '}');
        seen.push(app.focus.head);
    }
    use HeadSel::*;
    assert_eq!(seen, vec![Head(0), Head(1), Head(2), Mean]);
    key(&mut app, '{');
    assert_eq!(app.focus.head, Head(2));
}

#[test]
fn search_then_force_a_hit() {
    let mut app = ready_app(80, 24);
    key(&mut app, '/');
    assert_eq!(app.mode, Mode::Search);
    let cmds = typing(&mut app, "Ly");
    assert_eq!(cmds.len(), 2);
    assert_eq!(
        cmds[1],
        Command::Search {
            query: "Ly".into(),
            limit: nexttoken::app::SEARCH_LIMIT
        }
    );
    assert!(!app.is_busy(), "a search is not a forward pass");
    let hit = |id, text: &str| nexttoken::protocol::Candidate {
        token: tv(id, text),
        prob: 0.001,
        logprob: -6.9,
        sampled_prob: 0.0,
        rank: 900,
    };
    // A late answer to an older query is ignored.
    app.update(Msg::Engine(Event::SearchResults {
        query: "L".into(),
        hits: vec![hit(1, "L")],
    }));
    assert!(app.input.hits.is_empty());
    app.update(Msg::Engine(Event::SearchResults {
        query: "Ly".into(),
        hits: vec![hit(4500, " Lyon"), hit(4501, "Ly")],
    }));
    press(&mut app, Key::Down);
    assert_eq!(
        press(&mut app, Key::Enter),
        vec![Command::Force { token_id: 4501 }]
    );
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn prompt_edit_prefills_again() {
    let mut app = ready_app(80, 24);
    key(&mut app, 'p');
    assert_eq!(app.input.text(), PROMPT);
    for _ in 0..2 {
        press(&mut app, Key::Backspace);
    }
    typing(&mut app, "was");
    assert_eq!(
        press(&mut app, Key::Enter),
        vec![Command::Prefill {
            prompt: "The capital of France was".into(),
            chat: false
        }]
    );
    assert_eq!(app.prompt.text, "The capital of France was");
}

#[test]
fn chat_toggle_prefills_with_the_template() {
    let mut app = ready_app(80, 24);
    assert_eq!(
        key(&mut app, 'c'),
        vec![Command::Prefill {
            prompt: PROMPT.into(),
            chat: true
        }]
    );
    assert!(app.prompt.chat);
}

#[test]
fn branch_list_switches_branch() {
    let mut app = ready_app(80, 24);
    let mut view = prefilled();
    let branch = |id, current| BranchInfo {
        id,
        len: 3,
        fork_position: 5,
        mean_logprob: -1.2,
        preview: "Paris.".into(),
        before_fork: "The capital of France is".into(),
        after_fork: " Paris.".into(),
        current,
        class_choices: 0,
        forced_at_fork: false,
    };
    view.branches = vec![branch(0, true), branch(1, false)];
    app.update(Msg::Engine(Event::Synced(view)));
    key(&mut app, 'b');
    assert_eq!(app.mode, Mode::Branches);
    assert_eq!(app.selection.branch, 0, "starts on the current branch");
    key(&mut app, 'j');
    assert_eq!(
        press(&mut app, Key::Enter),
        vec![Command::SwitchBranch { id: 1 }]
    );
}

#[test]
fn help_toggles_and_swallows_keys() {
    let mut app = ready_app(80, 24);
    key(&mut app, '?');
    assert_eq!(app.mode, Mode::Help);
    assert_eq!(key(&mut app, ' '), vec![], "no stepping behind the help");
    key(&mut app, '?');
    assert_eq!(app.mode, Mode::Normal);
    key(&mut app, '?');
    press(&mut app, Key::Esc);
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn keymap_has_no_clashes_and_every_row_has_help() {
    let modes = [
        Mode::Normal,
        Mode::Help,
        Mode::Search,
        Mode::ForceText,
        Mode::Prompt,
        Mode::Sampler,
        Mode::Branches,
    ];
    for mode in modes {
        let mut seen = vec![];
        for b in KEYMAP
            .iter()
            .filter(|b| b.scope == Scope::Global || b.scope == Scope::In(mode))
        {
            assert!(!b.help.is_empty());
            for p in b.keys {
                assert!(!seen.contains(p), "{p:?} bound twice in {mode:?}");
                seen.push(*p);
            }
        }
        // Every mode can be left (or is the main screen).
        assert!(mode == Mode::Normal || keymap::lookup(mode, Key::Esc).is_some());
    }
}

#[test]
fn a_paste_types_into_the_search_box_and_searches_once() {
    let mut app = ready_app(80, 24);
    app.update(Msg::Key(Key::Char('/')));
    let cmds = app.update(Msg::Paste("Paris\n".into()));
    assert_eq!(
        cmds,
        vec![Command::Search {
            query: "Paris".into(),
            limit: nexttoken::app::SEARCH_LIMIT
        }]
    );
    assert_eq!(app.input.text(), "Paris");
    // Outside a text box a paste does nothing (it must not fire the keys it contains).
    app.update(Msg::Key(Key::Esc));
    assert!(app.update(Msg::Paste("nnnn".into())).is_empty());
}

/// An app with one generated branch of `len` tokens, so a new prompt would drop work.
fn app_with_work(len: usize) -> nexttoken::app::App {
    app_with_branches(80, 24, &[len])
}

/// `x` in the branch list compares the chosen branch with the path on screen; after a rewind that
/// path is no branch's whole text, and `x` had done nothing at all, under a panel offering it. It says
/// why, and how to compare: switch to a branch first.
#[test]
fn x_after_a_rewind_says_to_switch_to_a_branch_first() {
    let mut app = app_with_branches(80, 24, &[3, 2]);
    let mut view = app.session.clone().unwrap();
    for b in &mut view.branches {
        b.current = false;
    }
    app.update(Msg::Engine(Event::Synced(view)));
    key(&mut app, 'b');
    assert_eq!(app.mode, Mode::Branches);
    key(&mut app, 'j');
    assert!(key(&mut app, 'x').is_empty());
    let said = app.status.as_ref().expect("a message").text.clone();
    assert!(
        said.contains("not a whole branch") && said.contains("enter switches to a branch"),
        "{said}"
    );
    // On a branch, x asks for the comparison.
    let mut view = app.session.clone().unwrap();
    view.branches[0].current = true;
    app.update(Msg::Engine(Event::Synced(view)));
    assert!(matches!(key(&mut app, 'x')[..], [Command::Compare { .. }]));
}

/// A ready app whose tree holds one branch per entry of `lens`, that many generated tokens long.
fn app_with_branches(width: u16, height: u16, lens: &[usize]) -> nexttoken::app::App {
    let mut app = ready_app(width, height);
    let mut view = prefilled();
    view.branches = lens
        .iter()
        .enumerate()
        .map(|(i, &len)| BranchInfo {
            id: 9 + i,
            len,
            fork_position: 5,
            mean_logprob: -1.0,
            preview: " Paris.".into(),
            before_fork: PROMPT.into(),
            after_fork: String::new(),
            current: i == 0,
            class_choices: 0,
            forced_at_fork: false,
        })
        .collect();
    app.update(Msg::Engine(Event::Synced(view)));
    app
}

/// The screen's last row (the status line where messages and text boxes go).
fn last_row(app: &nexttoken::app::App) -> String {
    screen_text(app).pop().unwrap()
}

#[test]
fn the_drop_warning_is_on_screen_while_the_prompt_is_edited() {
    for width in [80, 100] {
        let mut app = app_with_branches(width, 24, &[17, 4]);
        key(&mut app, 'p');
        typing(&mut app, "!");
        assert!(last_row(&app).contains("prompt: line 1 of 1"));
        press(&mut app, Key::Enter);
        let row = last_row(&app);
        assert!(
            row.contains(
                "new prompt drops 2 branches (longest 17 tokens): press enter again to go ahead"
            ),
            "{width} columns: {row:?}"
        );
        assert_eq!(app.mode, Mode::Prompt);
        // Any other key takes the warning back and shows the text box's line again.
        press(&mut app, Key::Left);
        let row = last_row(&app);
        assert!(row.contains("prompt: line 1 of 1"), "{row:?}");
        assert!(!row.contains("press enter again"), "{row:?}");
    }
}

#[test]
fn the_chat_switch_warning_shows_the_key_to_press_whole() {
    for width in [80, 100] {
        let mut app = app_with_branches(width, 24, &[17, 4]);
        key(&mut app, 'c');
        let row = last_row(&app);
        assert!(
            row.contains("chat on drops 2 branches (longest 17 tokens): press c again to go ahead"),
            "{width} columns: {row:?}"
        );
    }
}

#[test]
fn a_new_prompt_or_chat_switch_asks_before_dropping_work() {
    let mut app = app_with_work(7);
    key(&mut app, 'p');
    typing(&mut app, "!");
    assert_eq!(press(&mut app, Key::Enter), vec![], "the first Enter warns");
    let said = app.status.clone().unwrap().text;
    assert!(said.contains("drops 1 branch (longest 7 tokens)"), "{said}");
    assert_eq!(
        app.mode,
        Mode::Prompt,
        "the editor stays open with the text"
    );
    assert_eq!(
        press(&mut app, Key::Enter),
        vec![Command::Prefill {
            prompt: format!("{PROMPT}!"),
            chat: false
        }],
        "the second Enter goes ahead"
    );

    let mut app = app_with_work(3);
    assert_eq!(
        key(&mut app, 'c'),
        vec![],
        "chat on would drop the tree: asks first"
    );
    assert_eq!(key(&mut app, 'j'), vec![], "another key keeps the work");
    assert!(app.status.clone().unwrap().text.contains("kept"));
    assert_eq!(key(&mut app, 'c'), vec![], "and asks again");
    assert_eq!(
        key(&mut app, 'c'),
        vec![Command::Prefill {
            prompt: PROMPT.into(),
            chat: true
        }]
    );
}

#[test]
fn a_pasted_prompt_keeps_its_lines_and_a_search_does_not() {
    let mut app = ready_app(80, 24);
    key(&mut app, 'p');
    for _ in 0..PROMPT.len() {
        press(&mut app, Key::Backspace);
    }
    app.update(Msg::Paste("Q: 2+2?\r\nA: 4\nQ: 3+3?\nA:".into()));
    assert_eq!(app.input.text(), "Q: 2+2?\nA: 4\nQ: 3+3?\nA:");
    assert_eq!(
        press(&mut app, Key::Enter),
        vec![Command::Prefill {
            prompt: "Q: 2+2?\nA: 4\nQ: 3+3?\nA:".into(),
            chat: false
        }]
    );
    let mut app = ready_app(80, 24);
    key(&mut app, '/');
    app.update(Msg::Paste("Par\nis".into()));
    assert_eq!(app.input.text(), "Paris");
}

#[test]
fn step_presses_during_a_step_are_queued_not_lost() {
    let mut app = ready_app(80, 24);
    assert_eq!(key(&mut app, ' '), vec![Command::Step]);
    for _ in 0..5 {
        assert_eq!(key(&mut app, ' '), vec![], "one command in flight");
    }
    assert_eq!(app.queued_steps, 3, "a few are kept");
    assert!(app.status.clone().unwrap().text.contains("already queued"));
    let mut sent = 0;
    for i in 0..4 {
        let cmds = app.update(Msg::Engine(Event::Stepped(later_step(
            5 + i,
            " x",
            0.5,
            true,
            9.0,
        ))));
        sent += cmds.iter().filter(|c| **c == Command::Step).count();
    }
    assert_eq!(
        sent, 3,
        "each queued press becomes a step when the last one is answered"
    );
    assert!(!app.is_busy());
}

#[test]
fn behind_the_too_small_card_only_quit_acts() {
    let mut app = ready_app(80, 24);
    app.update(Msg::Resize {
        width: 40,
        height: 10,
    });
    for c in [' ', 'p', 'v', '1', '/'] {
        assert_eq!(key(&mut app, c), vec![], "{c:?} acted behind the card");
    }
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(key(&mut app, 'q'), vec![Command::Quit]);
}

#[test]
fn rewind_to_the_last_fork() {
    let mut app = ready_app(80, 24);
    for i in 0..4 {
        app.update(Msg::Engine(Event::Stepped(later_step(
            5 + i,
            " w",
            0.5,
            true,
            9.0,
        ))));
    }
    assert_eq!(key(&mut app, 'U'), vec![], "no fork yet");
    let mut view = app.session.clone().unwrap();
    let b = |id, fork_position, current| branch_info(id, 4, fork_position, current);
    view.branches = vec![b(1, 6, false), b(2, 7, false), b(3, 9, true)];
    app.update(Msg::Engine(Event::Synced(view)));
    assert_eq!(
        key(&mut app, 'U'),
        vec![Command::Rewind { n: 2 }],
        "back to position 7"
    );
}

#[test]
fn the_help_scrolls_on_a_small_screen() {
    let mut app = ready_app(60, 20);
    key(&mut app, '?');
    let top = screen_text(&app).join("\n");
    assert!(top.contains("more lines below"), "{top}");
    for _ in 0..200 {
        press(&mut app, Key::Down);
    }
    let max = app.screen.help_scroll;
    assert!(max > 0);
    let bottom = screen_text(&app).join("\n");
    assert_ne!(top, bottom, "scrolling shows other lines");
    assert!(
        !bottom.contains("more lines below"),
        "the end is reached and stays put:\n{bottom}"
    );
    press(&mut app, Key::Up);
    assert_eq!(app.screen.help_scroll, max - 1);
    key(&mut app, '?');
    key(&mut app, '?');
    assert_eq!(app.screen.help_scroll, 0, "help opens at the top");
}

#[test]
fn enter_while_busy_keeps_what_was_typed() {
    let mut app = ready_app(80, 24);
    key(&mut app, ' ');
    key(&mut app, 'i');
    typing(&mut app, "Lyon");
    assert!(!press(&mut app, Key::Enter).contains(&Command::ForceText {
        text: "Lyon".into()
    }));
    assert_eq!((app.mode, app.input.text()), (Mode::ForceText, "Lyon"));
    app.update(Msg::Engine(Event::Stepped(step_after_is(
        0,
        nexttoken::protocol::Source::Sampled,
        true,
        9.0,
    ))));
    assert_eq!(
        press(&mut app, Key::Enter),
        vec![Command::ForceText {
            text: "Lyon".into()
        }]
    );
}

#[test]
fn the_text_box_shows_line_breaks_and_how_forced_text_tokenises() {
    let mut app = ready_app(100, 30);
    key(&mut app, 'p');
    app.update(Msg::Paste("\nA: 4".into()));
    // The prompt editor draws its lines as lines, `↵` where each one breaks.
    let rows = screen_text(&app);
    let line = rows.iter().position(|r| r.contains("is↵")).unwrap();
    assert!(rows[line + 1].contains("A: 4"), "{rows:#?}");
    press(&mut app, Key::Esc);
    key(&mut app, 'i');
    typing(&mut app, "Lyon");
    let pieces = vec![tv(58, "Ly"), tv(257, "on")];
    app.update(Msg::Engine(Event::Tokenized {
        text: "Lyon".into(),
        tokens: pieces,
    }));
    let s = screen_text(&app).join("\n");
    assert!(s.contains("→ 2 tokens: ⟨Ly⟩⟨on⟩"), "{s}");
    // A preview longer than the line is cut with "…"; the keys stay whole.
    let text = " go outside and play in the garden with the dog";
    typing(&mut app, text);
    let many: Vec<_> = text
        .split(' ')
        .skip(1)
        .map(|w| tv(900, &format!(" {w}")))
        .collect();
    app.update(Msg::Engine(Event::Tokenized {
        text: format!("Lyon{text}"),
        tokens: many,
    }));
    let last = screen_text(&app).pop().unwrap();
    assert!(last.trim_end().ends_with("enter ok · esc cancel"), "{last}");
    assert!(last.contains("→ 10") && last.contains('…'), "{last}");
}

#[test]
fn the_transcript_colour_key_shows_in_short_where_the_full_one_does_not_fit() {
    let bottom = |w, h| {
        let app = ready_app(w, h);
        let screen = screen_text(&app);
        screen
            .into_iter()
            .find(|l| l.contains("prompt 5 tokens"))
            .unwrap()
    };
    let row = bottom(80, 24);
    assert!(row.contains(" colour = p: ≥50% ≥20% ≥5% ≥1% <1% "), "{row}");
    let row = bottom(100, 30);
    assert!(
        row.contains(" colour = p when chosen: ≥50% ≥20% ≥5% ≥1% <1% "),
        "{row}"
    );
}
