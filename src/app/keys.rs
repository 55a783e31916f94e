//! A key press as the app sees it, and how a key is written on screen (the help and the hints).

/// A key press, reduced to what the app cares about. `tui.rs` builds it from crossterm's `KeyEvent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Char(char),
    /// A letter with Ctrl held, lower-case (`Ctrl('c')`).
    Ctrl(char),
    Enter,
    Esc,
    Backspace,
    Delete,
    /// Enter with Alt held (terminals send it as Esc then Enter).
    AltEnter,
    Tab,
    Up,
    Down,
    Left,
    Right,
    PageUp,
    PageDown,
    Home,
    End,
}

impl Key {
    pub fn label(self) -> String {
        match self {
            Key::Char(' ') => "space".into(),
            Key::Char(c) => c.to_string(),
            Key::Ctrl(c) => format!("ctrl-{c}"),
            Key::Enter => "enter".into(),
            Key::Esc => "esc".into(),
            Key::Backspace => "bksp".into(),
            Key::Delete => "del".into(),
            Key::AltEnter => "alt-enter".into(),
            Key::Tab => "tab".into(),
            Key::Up => "↑".into(),
            Key::Down => "↓".into(),
            Key::Left => "←".into(),
            Key::Right => "→".into(),
            Key::PageUp => "pgup".into(),
            Key::PageDown => "pgdn".into(),
            Key::Home => "home".into(),
            Key::End => "end".into(),
        }
    }
}
