//! `App::update`: folds one `Msg` into the state and returns the `Command`s for the engine. Pure: no I/O,
//! no clock (time comes in `Msg::Tick`).

use super::keymap::{self, Action, Key, Mode};
use super::{App, Busy, Msg, StatusLine};

/// Transcript lines one notch of the mouse wheel scrolls.
const WHEEL_LINES: usize = 3;
use crate::protocol::Command;

impl App {
    /// Folds one message into the state; returns what to send to the engine (usually nothing or one).
    pub fn update(&mut self, msg: Msg) -> Vec<Command> {
        if let Msg::Measured(map) = msg {
            self.screen.map = map;
            return vec![];
        }
        // The clock's tick moves no text and reveals nothing: no need to hash the text for it.
        let tick = matches!(msg, Msg::Tick { .. });
        let mut cmds = self.fold(msg);
        self.note_exploring(&cmds);
        if !tick {
            self.note_seen();
        }
        if cmds.is_empty() {
            cmds = self.continue_lesson();
        }
        if cmds.is_empty() {
            cmds = self.rank_class();
        }
        cmds
    }

    fn fold(&mut self, msg: Msg) -> Vec<Command> {
        match msg {
            Msg::Key(key) => self.on_key(key),
            Msg::Click { column, row } => self.on_click(column, row),
            Msg::Resize { width, height } => {
                self.resize(width, height);
                vec![]
            }
            Msg::Tick { now_ms } => self.on_tick(now_ms),
            Msg::Engine(event) => self.on_event(event),
            Msg::Class(msg) => self.on_class(msg),
            // One edit for the whole paste: a search asks once, not once per character.
            Msg::Paste(text) if self.mode.is_text_input() => self.paste(&text),
            Msg::Paste(_) => vec![],
            Msg::Wheel { up } => {
                self.scroll(if up {
                    WHEEL_LINES as isize
                } else {
                    -(WHEEL_LINES as isize)
                });
                vec![]
            }
            Msg::Measured(_) => vec![],
        }
    }

    fn on_key(&mut self, key: Key) -> Vec<Command> {
        let action = keymap::lookup(self.mode, key);
        // Behind the "too small" card nothing acts but quitting (resizing needs no key).
        if self.too_small() && action != Some(Action::Quit) {
            return vec![];
        }
        self.status = None;
        if self.confirm.is_some() && action != self.confirm {
            // Any other key keeps the work that a second press would have dropped.
            self.confirm = None;
            self.say("kept as it was");
        }
        if let Some(action) = action {
            return self.apply(action);
        }
        match key {
            Key::Char(c) if self.mode.is_text_input() => self.type_char(c),
            _ => vec![],
        }
    }

    fn apply(&mut self, action: Action) -> Vec<Command> {
        // The lesson keys (`lesson.rs`), what a hidden distribution refuses (`predict.rs`), then the
        // lens and the head map and the keys their panels use their own way (`inspect.rs`). Before
        // them all: what a prompt being read refuses (`requests.rs`).
        if self.refused_while_reading(action) {
            return vec![];
        }
        self.close_join_card(action);
        if let Some(cmds) = self.lesson_action(action) {
            return cmds;
        }
        if self.hidden_refuses(action) {
            self.hidden_hint();
            return vec![];
        }
        if let Some(cmds) = self.inspect_action(action) {
            return cmds;
        }
        self.dispatch(action)
    }

    /// Sends an action to the group of actions it belongs to (`actions.rs`, and scrolling here).
    fn dispatch(&mut self, action: Action) -> Vec<Command> {
        match action {
            Action::Quit
            | Action::Step
            | Action::ToggleAutoplay
            | Action::Faster
            | Action::Slower
            | Action::Up
            | Action::Down
            | Action::Accept
            | Action::Pick(_)
            | Action::Cancel => self.play_action(action),
            Action::Rewind
            | Action::RewindToFork
            | Action::RewindTo(_)
            | Action::OpenCompare
            | Action::CompareBranch
            | Action::SaveSession => self.path_action(action),
            Action::OpenBranches
            | Action::OpenSampler
            | Action::ToggleChain
            | Action::NextPanel
            | Action::ToggleChat
            | Action::ToggleHelp
            | Action::ToggleHidden
            | Action::TogglePredict
            | Action::TogglePresenter
            | Action::ToggleDraft
            | Action::ToggleJoinCard
            | Action::ToggleBoard => self.panel_action(action),
            Action::ClassSamples => self.class_samples(),
            Action::PrevLayer
            | Action::NextLayer
            | Action::PrevHead
            | Action::NextHead
            | Action::OlderKeys
            | Action::NewerKeys => self.focus_action(action),
            Action::Decrease | Action::Increase | Action::ResetSampler | Action::ToggleKvCache => {
                self.setting_action(action)
            }
            Action::OpenSearch
            | Action::OpenForceText
            | Action::OpenPrompt
            | Action::OpenReference
            | Action::Close
            | Action::Submit
            | Action::DeleteChar
            | Action::DeleteForward
            | Action::DeleteToLineStart
            | Action::DeleteWordBack
            | Action::CursorLeft
            | Action::CursorRight
            | Action::LineStart
            | Action::LineEnd
            | Action::NewLine
            | Action::ToggleHitOrder => self.text_action(action),
            Action::ScrollUp | Action::ScrollDown | Action::ScrollTop | Action::ScrollBottom => {
                self.scroll_action(action)
            }
            // Answered by `lesson_action` and `inspect_action` in `apply`.
            Action::OpenLens
            | Action::OpenHeadMap
            | Action::Reinspect
            | Action::NextScore
            | Action::NextLessonStep
            | Action::PrevLessonStep
            | Action::BackToLesson => vec![],
        }
    }

    /// Handles scrolling the transcript: a page back or forward, the start, the newest line.
    fn scroll_action(&mut self, action: Action) -> Vec<Command> {
        match action {
            Action::ScrollUp | Action::ScrollDown => {
                let page = self
                    .screen
                    .map
                    .areas
                    .transcript
                    .height
                    .saturating_sub(4)
                    .max(1);
                let up = action == Action::ScrollUp;
                self.scroll(if up { page as isize } else { -(page as isize) });
            }
            Action::ScrollTop => self.screen.scroll_back = self.max_scroll_back(),
            Action::ScrollBottom => self.screen.scroll_back = 0,
            // Not this group's: `dispatch` sends it elsewhere.
            _ => {}
        }
        vec![]
    }

    /// A left click: on a candidate, force it; on a generated token in the transcript, rewind to just
    /// before it. Only on the main screen, and not behind the "too small" card.
    fn on_click(&mut self, column: u16, row: u16) -> Vec<Command> {
        if self.mode != Mode::Normal || self.too_small() {
            return vec![];
        }
        self.status = None;
        let map = &self.screen.map;
        if let Some(i) = map.candidate_at(column, row, self.candidates().len()) {
            if self.refused_while_reading(Action::Accept) {
                return vec![];
            }
            return self.force_candidate(i);
        }
        match self.screen.map.token_at(column, row) {
            Some(position) => self.apply(Action::RewindTo(position)),
            None => vec![],
        }
    }

    /// Moves the transcript `lines` back (negative: forward). The view clamps to what there is.
    fn scroll(&mut self, lines: isize) {
        let back = self.screen.scroll_back.min(self.max_scroll_back());
        self.screen.scroll_back = back
            .saturating_add_signed(lines)
            .min(self.max_scroll_back());
    }

    /// How far back the transcript can scroll: its lines past one screenful, as the view measured them
    /// (the wrapping is the view's).
    fn max_scroll_back(&self) -> usize {
        self.screen.map.transcript_max_scroll
    }

    /// A settings change re-ranks the current distribution: `SetSampler`, never a forward pass.
    pub(super) fn send_settings(&mut self) -> Vec<Command> {
        if self.is_busy() {
            self.sampler.dirty = true;
            return vec![];
        }
        self.sampler.dirty = false;
        self.busy = Busy::Working("re-ranking".into());
        vec![Command::SetSampler(self.sampler.settings.clone())]
    }

    /// The terminal's new size. Autoplay stops while the screen is too small to draw what it does, and
    /// says so when the screen is big enough again (it waits for a key to go on).
    fn resize(&mut self, width: u16, height: u16) {
        self.screen.width = width;
        self.screen.height = height;
        if self.too_small() {
            if self.autoplay.on {
                self.autoplay.on = false;
                self.autoplay.paused_by_size = true;
            }
        } else if std::mem::take(&mut self.autoplay.paused_by_size) {
            let key = keymap::hint_key(Mode::Normal, Action::ToggleAutoplay);
            self.say(format!(
                "autoplay paused while the terminal was too small: {key} plays on"
            ));
        }
    }

    fn on_tick(&mut self, now_ms: u64) -> Vec<Command> {
        self.now_ms = now_ms;
        let due = now_ms.saturating_sub(self.autoplay.last_ms) >= self.autoplay_interval_ms();
        let ended = self.ended_with().is_some();
        let waiting = self.awaiting_guess();
        if self.autoplay.on
            && due
            && !self.is_busy()
            && self.mode == Mode::Normal
            && !ended
            && !waiting
            && !self.too_small()
        {
            self.autoplay.last_ms = now_ms;
            return self.request(Command::Step, "stepping");
        }
        vec![]
    }

    pub(super) fn say(&mut self, text: impl Into<String>) {
        self.status = Some(StatusLine {
            text: text.into(),
            error: false,
        });
    }

    pub(super) fn say_error(&mut self, text: String) {
        self.status = Some(StatusLine { text, error: true });
    }
}
