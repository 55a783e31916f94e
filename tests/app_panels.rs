//! State tests for the panels and selections around the main loop: search, prompt edit, chat, branches,
//! help, layer/head choice, and the keymap table itself. Same style as `app_state.rs`.

mod common;

use common::*;
use nexttoken::app::keymap::{self, Key, Mode, Scope, KEYMAP};
use nexttoken::app::{HeadSel, Msg};
use nexttoken::protocol::{BranchInfo, Command, Event};

#[test]
fn layer_and_head_selection_cycle() {
    let mut app = ready_app(80, 24);
    key(&mut app, ']');
    assert_eq!(app.layer, 1);
    key(&mut app, ']');
    assert_eq!(app.layer, 0, "wraps after the last of {N_LAYER} layers");
    key(&mut app, '[');
    assert_eq!(app.layer, 1);
    let mut seen = vec![];
    for _ in 0..4 {
        key(&mut app, '}');
        seen.push(app.head);
    }
    use HeadSel::*;
    assert_eq!(seen, vec![Head(0), Head(1), Head(2), Mean]);
    key(&mut app, '{');
    assert_eq!(app.head, Head(2));
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
    };
    // A late answer to an older query is ignored.
    app.update(Msg::Engine(Event::SearchResults {
        query: "L".into(),
        hits: vec![hit(1, "L")],
    }));
    assert!(app.search_hits.is_empty());
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
    assert_eq!(app.input, PROMPT);
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
    assert_eq!(app.prompt, "The capital of France was");
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
    assert!(app.chat);
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
        current,
    };
    view.branches = vec![branch(0, true), branch(1, false)];
    app.update(Msg::Engine(Event::Synced(view)));
    key(&mut app, 'b');
    assert_eq!(app.mode, Mode::Branches);
    assert_eq!(app.branch_selected, 0, "starts on the current branch");
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
    assert_eq!(app.input, "Paris");
    // Outside a text box a paste does nothing (it must not fire the keys it contains).
    app.update(Msg::Key(Key::Esc));
    assert!(app.update(Msg::Paste("nnnn".into())).is_empty());
}
