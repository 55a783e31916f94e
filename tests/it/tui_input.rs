//! `tui::to_msg`: what the terminal's events become before `App::update` sees them.

use crossterm::event::{
    Event as CtEvent, KeyCode, KeyEvent, KeyEventKind, KeyEventState, KeyModifiers, MouseButton,
    MouseEvent, MouseEventKind,
};
use nexttoken::app::{Key, Msg};
use nexttoken::cmd::tui::to_msg;

fn key(code: KeyCode, modifiers: KeyModifiers, kind: KeyEventKind) -> CtEvent {
    CtEvent::Key(KeyEvent {
        code,
        modifiers,
        kind,
        state: KeyEventState::NONE,
    })
}

fn press(code: KeyCode) -> Option<Msg> {
    to_msg(key(code, KeyModifiers::NONE, KeyEventKind::Press))
}

fn mouse(kind: MouseEventKind, column: u16, row: u16) -> CtEvent {
    CtEvent::Mouse(MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    })
}

#[test]
fn keys_become_app_keys() {
    assert_eq!(press(KeyCode::Char(' ')), Some(Msg::Key(Key::Char(' '))));
    assert_eq!(press(KeyCode::Enter), Some(Msg::Key(Key::Enter)));
    assert_eq!(press(KeyCode::Esc), Some(Msg::Key(Key::Esc)));
    assert_eq!(press(KeyCode::Backspace), Some(Msg::Key(Key::Backspace)));
    assert_eq!(press(KeyCode::Up), Some(Msg::Key(Key::Up)));
    assert_eq!(press(KeyCode::BackTab), Some(Msg::Key(Key::Tab)));
    assert_eq!(press(KeyCode::F(5)), None, "unbound keys are dropped");
}

#[test]
fn ctrl_letters_are_lower_case_and_releases_are_ignored() {
    let ctrl_c = key(
        KeyCode::Char('C'),
        KeyModifiers::CONTROL,
        KeyEventKind::Press,
    );
    assert_eq!(to_msg(ctrl_c), Some(Msg::Key(Key::Ctrl('c'))));
    let release = key(
        KeyCode::Char('n'),
        KeyModifiers::NONE,
        KeyEventKind::Release,
    );
    assert_eq!(to_msg(release), None, "a key counts once, on press");
    let repeat = key(KeyCode::Char('n'), KeyModifiers::NONE, KeyEventKind::Repeat);
    assert_eq!(
        to_msg(repeat),
        Some(Msg::Key(Key::Char('n'))),
        "a held key repeats"
    );
}

#[test]
fn left_clicks_resizes_and_pastes_pass_through() {
    let click = mouse(MouseEventKind::Down(MouseButton::Left), 7, 3);
    assert_eq!(to_msg(click), Some(Msg::Click { column: 7, row: 3 }));
    assert_eq!(to_msg(mouse(MouseEventKind::Moved, 1, 1)), None);
    assert_eq!(
        to_msg(mouse(MouseEventKind::Down(MouseButton::Right), 1, 1)),
        None
    );
    assert_eq!(
        to_msg(CtEvent::Resize(100, 30)),
        Some(Msg::Resize {
            width: 100,
            height: 30
        })
    );
    assert_eq!(
        to_msg(CtEvent::Paste("a\nb".into())),
        Some(Msg::Paste("a\nb".into()))
    );
    assert_eq!(to_msg(CtEvent::FocusGained), None);
}

#[test]
fn text_box_keys_become_app_keys() {
    assert_eq!(press(KeyCode::Delete), Some(Msg::Key(Key::Delete)));
    assert_eq!(press(KeyCode::Home), Some(Msg::Key(Key::Home)));
    // Alt-Enter (Esc then Enter from the terminal) breaks a line in the prompt editor; so does Ctrl-J,
    // which a raw-mode terminal sends as the byte 0x0A.
    let alt_enter = key(KeyCode::Enter, KeyModifiers::ALT, KeyEventKind::Press);
    assert_eq!(to_msg(alt_enter), Some(Msg::Key(Key::AltEnter)));
    let ctrl_j = key(
        KeyCode::Char('j'),
        KeyModifiers::CONTROL,
        KeyEventKind::Press,
    );
    assert_eq!(to_msg(ctrl_j), Some(Msg::Key(Key::Ctrl('j'))));
    assert_eq!(press(KeyCode::Enter), Some(Msg::Key(Key::Enter)));
}

/// `Msg::Measured` is what its doc says: it changes nothing but the screen map and asks nothing of the
/// engine; and the terminal loop's `update` sends it after every message, so the map is the screen's.
#[test]
fn measured_changes_only_the_map_and_the_loop_sends_it_after_every_message() {
    use crate::common::{long_app, screen_text};
    use nexttoken::app::{Msg, ScreenMap};
    let app = long_app(80, 24, 40);
    let mut other = app.clone();
    let cmds = other.update(Msg::Measured(ScreenMap::default()));
    assert!(cmds.is_empty());
    assert_eq!(other.screen.map, ScreenMap::default());
    other.screen.map = app.screen.map.clone();
    assert_eq!(
        format!("{other:?}"),
        format!("{app:?}"),
        "nothing else changed"
    );
    // The map the loop keeps is the one the view measures of the state now, and it finds the tokens
    // where the screen shows them.
    assert_eq!(app.screen.map, nexttoken::ui::measure(&app));
    let spot = app.screen.map.tokens.last().expect("tokens on screen");
    let row = &screen_text(&app)[spot.y as usize];
    let drawn: String = row
        .chars()
        .skip(spot.x as usize)
        .take(spot.width as usize)
        .collect();
    let text = &app.session.as_ref().unwrap().tokens[spot.position]
        .token
        .text;
    assert_eq!(drawn.trim(), text.trim(), "{row}");
}

/// The loop measures after every message at any terminal size, too small ones included: never a panic.
#[test]
fn measuring_a_tiny_or_empty_screen_is_fine() {
    use crate::common::long_app;
    use nexttoken::app::Msg;
    for (w, h) in [(0, 0), (1, 1), (3, 2), (10, 5), (40, 10)] {
        let mut app = long_app(80, 24, 30);
        nexttoken::cmd::tui::update(
            &mut app,
            Msg::Resize {
                width: w,
                height: h,
            },
        );
        let map = nexttoken::ui::measure(&app);
        assert!(
            map.tokens.iter().all(|s| s.x < w.max(1) && s.y < h.max(1)),
            "{w}x{h}"
        );
        for k in ['?', 'j', 'L', 'H'] {
            nexttoken::cmd::tui::update(&mut app, Msg::Key(nexttoken::app::Key::Char(k)));
        }
    }
}

/// The loop measures after every message but the clock's tick, and the help and the lens are measured
/// only while open.
#[test]
fn the_tick_is_not_measured_and_closed_views_are_not_either() {
    use crate::common::long_app;
    use nexttoken::app::{Key, Msg, ScreenMap};
    use nexttoken::cmd::tui::update;
    let mut app = long_app(80, 24, 30);
    assert_eq!(app.screen.map.help_max_scroll, 0, "the help is closed");
    app.screen.map = ScreenMap::default();
    update(&mut app, Msg::Tick { now_ms: 1 });
    assert_eq!(app.screen.map, ScreenMap::default(), "no measure on a tick");
    update(&mut app, Msg::Key(Key::Char('?')));
    assert!(
        app.screen.map.help_max_scroll > 0,
        "the open help scrolls at 80x24"
    );
    assert_eq!(app.screen.map, nexttoken::ui::measure(&app));
}
