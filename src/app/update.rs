//! `App::update`: folds one `Msg` into the state and returns the `Command`s for the engine. Pure: no I/O,
//! no clock (time comes in `Msg::Tick`).

use super::keymap::{self, Action, Key, Mode};
use super::sampler_panel::FIELDS;
use super::AUTOPLAY_INTERVALS_MS;
use super::{App, Busy, Msg, SidePanel, StatusLine};

/// Transcript lines one notch of the mouse wheel scrolls.
const WHEEL_LINES: usize = 3;
use crate::protocol::{Command, SamplerSettings};

impl App {
    /// Folds one message into the state; returns what to send to the engine (usually nothing or one).
    pub fn update(&mut self, msg: Msg) -> Vec<Command> {
        if let Msg::Measured(map) = msg {
            self.screen.map = map;
            return vec![];
        }
        let mut cmds = self.fold(msg);
        self.note_exploring(&cmds);
        if cmds.is_empty() {
            cmds = self.continue_lesson();
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
        match action {
            Action::Quit => {
                self.quit = true;
                return vec![Command::Quit];
            }
            Action::Step => return self.step(),
            Action::ToggleAutoplay => {
                self.autoplay.on = !self.autoplay.on;
                self.autoplay_past_confident();
                // Step on the very next tick rather than a whole interval later.
                self.autoplay.last_ms = self.now_ms.saturating_sub(self.autoplay_interval_ms());
                let state = if self.autoplay.on { "on" } else { "off" };
                self.say(format!("autoplay {state}, {}", self.autoplay_label()));
            }
            Action::Faster | Action::Slower => {
                self.autoplay.speed = if action == Action::Faster {
                    (self.autoplay.speed + 1).min(AUTOPLAY_INTERVALS_MS.len() - 1)
                } else {
                    self.autoplay.speed.saturating_sub(1)
                };
                self.say(format!("autoplay speed {}", self.autoplay_label()));
            }
            Action::Up | Action::Down => self.move_selection(action == Action::Up),
            Action::Accept => return self.force_candidate(self.selection.candidate),
            Action::Pick(n) => return self.force_candidate(n as usize - 1),
            // A lesson question that is not about a token is answered in a box of its own.
            Action::OpenSearch if self.open_answer() => {}
            Action::OpenSearch => self.open_text(Mode::Search, String::new()),
            Action::OpenForceText => self.open_text(Mode::ForceText, String::new()),
            Action::OpenPrompt => self.open_text(Mode::Prompt, self.prompt.text.clone()),
            Action::Rewind if self.step_count() == 0 => {
                self.say("nothing to rewind: the prompt stays");
            }
            Action::Rewind => return self.request(Command::Rewind { n: 1 }, "rewinding"),
            Action::RewindToFork => match self.last_fork() {
                Some(pos) => {
                    let n = self.session.as_ref().map_or(0, |s| s.tokens.len() - pos);
                    return self.request(Command::Rewind { n }, "rewinding to the fork");
                }
                None => self.say("no fork on this path: rewind one token at a time"),
            },
            Action::OpenBranches => {
                let branches = self.session.as_ref().map(|s| s.branches.as_slice());
                self.selection.branch = branches
                    .and_then(|b| b.iter().position(|b| b.current))
                    .unwrap_or(0);
                self.mode = Mode::Branches;
            }
            Action::SaveSession => return self.save_session(),
            Action::OpenSampler => self.mode = Mode::Sampler,
            Action::ToggleChain => self.screen.show_chain = !self.screen.show_chain,
            Action::ToggleKvCache => {
                let on = !self.kv_cache_on();
                let label = if on {
                    "rebuilding the KV cache"
                } else {
                    "dropping the KV cache"
                };
                return self.request(Command::SetKvCache { on }, label);
            }
            Action::PrevLayer | Action::NextLayer => {
                let n = self.n_layer().max(1);
                let up = action == Action::NextLayer;
                self.focus.layer = (self.focus.layer + if up { 1 } else { n - 1 }) % n;
            }
            Action::PrevHead | Action::NextHead => self.cycle_head(action == Action::NextHead),
            Action::NextPanel if self.presenter.on => {
                let b = self.has_model_b();
                self.presenter.side = match self.presenter.side {
                    None => Some(SidePanel::Attention),
                    Some(SidePanel::Attention) => Some(SidePanel::Timing),
                    Some(SidePanel::Timing) => Some(SidePanel::Repetition),
                    Some(SidePanel::Repetition) if b => Some(SidePanel::ModelB),
                    Some(SidePanel::Repetition | SidePanel::ModelB) => None,
                }
            }
            Action::NextPanel => {
                let b = self.has_model_b();
                self.screen.side = match self.screen.side {
                    SidePanel::Attention => SidePanel::Timing,
                    SidePanel::Timing => SidePanel::Repetition,
                    SidePanel::Repetition if b => SidePanel::ModelB,
                    SidePanel::Repetition | SidePanel::ModelB => SidePanel::Attention,
                }
            }
            Action::ToggleChat => return self.toggle_chat(),
            Action::ToggleHelp => {
                self.mode = Mode::Help;
                self.screen.help_scroll = 0;
            }
            Action::Cancel if matches!(self.busy, Busy::Reading { .. }) => {
                self.say("cancelling: the old prompt and its tree stay");
                return vec![Command::Cancel];
            }
            Action::Cancel => {}
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
            Action::Close => {
                self.mode = Mode::Normal;
                self.input.editor = Default::default();
                self.input.hits.clear();
            }
            Action::Submit => return self.submit(),
            Action::DeleteChar
            | Action::DeleteForward
            | Action::DeleteToLineStart
            | Action::DeleteWordBack
            | Action::CursorLeft
            | Action::CursorRight
            | Action::LineStart
            | Action::LineEnd
            | Action::NewLine => return self.edit(action),
            Action::ToggleHitOrder => self.toggle_hit_order(),
            Action::OlderKeys | Action::NewerKeys
                if self.screen.map.areas.attention.is_none() =>
            {
                let key = keymap::hint_key(Mode::Normal, Action::NextPanel);
                self.say(format!(
                    "the attention panel is not on screen: {key} shows it"
                ));
            }
            Action::OlderKeys | Action::NewerKeys => {
                let max = self.screen.map.attention_max_key_scroll;
                let s = self.focus.key_scroll.min(max);
                self.focus.key_scroll = if action == Action::OlderKeys {
                    (s + 1).min(max)
                } else {
                    s.saturating_sub(1)
                };
                if action == Action::OlderKeys && s == max {
                    self.say(if max == 0 {
                        "every key the attention window carries is drawn"
                    } else {
                        "the oldest key the attention window carries is drawn"
                    });
                }
            }
            Action::RewindTo(position) => return self.rewind_to(position),
            Action::OpenCompare => return self.compare_with_left(),
            Action::CompareBranch => return self.compare_with_selected(),
            Action::OpenReference => self.open_text(Mode::Reference, String::new()),
            Action::Decrease | Action::Increase => {
                let before = self.sampler.settings.clone();
                let limit = FIELDS[self.sampler.field]
                    .adjust(&mut self.sampler.settings, action == Action::Increase);
                if let Err(note) = limit {
                    self.say(note);
                }
                if self.sampler.settings != before {
                    return self.send_settings();
                }
            }
            Action::ResetSampler => {
                self.sampler.settings = SamplerSettings::default();
                return self.send_settings();
            }
            Action::ToggleHidden => self.toggle_hidden(),
            Action::TogglePredict => self.toggle_predict(),
            Action::TogglePresenter => {
                self.presenter.on = !self.presenter.on;
                let state = if self.presenter.on { "on" } else { "off" };
                self.say(format!("presenter mode {state}"));
            }
            // Answered by `lesson_action` and `inspect_action` above.
            Action::OpenLens
            | Action::OpenHeadMap
            | Action::Reinspect
            | Action::NextScore
            | Action::NextLessonStep
            | Action::PrevLessonStep
            | Action::BackToLesson => {}
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

    /// Rewinds to just before the token at `position`: it and every token after it leave the path (the
    /// old path stays as a branch). The prompt is not rewindable.
    fn rewind_to(&mut self, position: usize) -> Vec<Command> {
        let Some(s) = self.session.as_ref() else {
            return vec![];
        };
        if position < s.prompt_len {
            self.say("the prompt is not rewindable: click a generated token");
            return vec![];
        }
        let n = s.tokens.len().saturating_sub(position);
        if n == 0 {
            return vec![];
        }
        self.request(Command::Rewind { n }, "rewinding to the clicked token")
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
