//! `App::update`: folds one `Msg` into the state and returns the `Command`s for the engine. Pure: no I/O,
//! no clock (time comes in `Msg::Tick`).

use super::keymap::{self, Action, Key, Mode};
use super::sampler_panel::FIELDS;
use super::{layout, App, Busy, HeadSel, Msg, SidePanel, StatusLine};
use super::{AUTOPLAY_INTERVALS_MS, SEARCH_LIMIT};
use crate::protocol::{Command, SamplerSettings};

impl App {
    /// Folds one message into the state; returns what to send to the engine (usually nothing or one).
    pub fn update(&mut self, msg: Msg) -> Vec<Command> {
        match msg {
            Msg::Key(key) => self.on_key(key),
            Msg::Click { column, row } => match layout::candidate_at(self, column, row) {
                Some(i) if self.mode == Mode::Normal => self.force_candidate(i),
                _ => vec![],
            },
            Msg::Resize { width, height } => {
                self.width = width;
                self.height = height;
                vec![]
            }
            Msg::Tick { now_ms } => self.on_tick(now_ms),
            Msg::Engine(event) => self.on_event(event),
            Msg::Paste(text) if self.mode.is_text_input() => {
                // One edit for the whole paste: a search asks once, not once per character.
                self.input.extend(text.chars().filter(|c| !c.is_control()));
                self.after_edit()
            }
            Msg::Paste(_) => vec![],
        }
    }

    fn on_key(&mut self, key: Key) -> Vec<Command> {
        if let Some(action) = keymap::lookup(self.mode, key) {
            self.status = None;
            return self.apply(action);
        }
        match key {
            Key::Char(c) if self.mode.is_text_input() => {
                self.input.push(c);
                self.after_edit()
            }
            _ => vec![],
        }
    }

    fn apply(&mut self, action: Action) -> Vec<Command> {
        match action {
            Action::Quit => {
                self.quit = true;
                return vec![Command::Quit];
            }
            Action::Step => return self.request(Command::Step, "stepping"),
            Action::ToggleAutoplay => {
                self.autoplay = !self.autoplay;
                // Step on the very next tick rather than a whole interval later.
                self.last_auto_ms = self.now_ms.saturating_sub(self.autoplay_interval_ms());
                let state = if self.autoplay { "on" } else { "off" };
                self.say(format!("autoplay {state}, {}", self.autoplay_label()));
            }
            Action::Faster | Action::Slower => {
                self.speed = if action == Action::Faster {
                    (self.speed + 1).min(AUTOPLAY_INTERVALS_MS.len() - 1)
                } else {
                    self.speed.saturating_sub(1)
                };
                self.say(format!("autoplay speed {}", self.autoplay_label()));
            }
            Action::Up | Action::Down => self.move_selection(action == Action::Up),
            Action::Accept => return self.force_candidate(self.selected),
            Action::Pick(n) => return self.force_candidate(n as usize - 1),
            Action::OpenSearch => self.open_text(Mode::Search, String::new()),
            Action::OpenForceText => self.open_text(Mode::ForceText, String::new()),
            Action::OpenPrompt => self.open_text(Mode::Prompt, self.prompt.clone()),
            Action::Rewind if self.step_count() == 0 => {
                self.say("nothing to rewind: the prompt stays");
            }
            Action::Rewind => return self.request(Command::Rewind { n: 1 }, "rewinding"),
            Action::OpenBranches => {
                let branches = self.session.as_ref().map(|s| s.branches.as_slice());
                self.branch_selected = branches
                    .and_then(|b| b.iter().position(|b| b.current))
                    .unwrap_or(0);
                self.mode = Mode::Branches;
            }
            Action::OpenSampler => self.mode = Mode::Sampler,
            Action::ToggleChain => self.show_chain = !self.show_chain,
            Action::ToggleKvCache => {
                let on = !self.kv_cache;
                let cmds = self.request(Command::SetKvCache { on }, "switching KV cache");
                if !cmds.is_empty() {
                    self.kv_cache = on;
                }
                return cmds;
            }
            Action::PrevLayer | Action::NextLayer => {
                let n = self.n_layer().max(1);
                let up = action == Action::NextLayer;
                self.layer = (self.layer + if up { 1 } else { n - 1 }) % n;
            }
            Action::PrevHead | Action::NextHead => self.cycle_head(action == Action::NextHead),
            Action::NextPanel => {
                self.side = match self.side {
                    SidePanel::Attention => SidePanel::Timing,
                    SidePanel::Timing => SidePanel::Attention,
                }
            }
            Action::ToggleChat => return self.toggle_chat(),
            Action::ToggleHelp => self.mode = Mode::Help,
            Action::Close => {
                self.mode = Mode::Normal;
                self.input.clear();
                self.search_hits.clear();
            }
            Action::Submit => return self.submit(),
            Action::DeleteChar => {
                self.input.pop();
                return self.after_edit();
            }
            Action::Decrease | Action::Increase => {
                FIELDS[self.sampler_field].adjust(&mut self.settings, action == Action::Increase);
                return self.send_settings();
            }
            Action::ResetSampler => {
                self.settings = SamplerSettings::default();
                return self.send_settings();
            }
        }
        vec![]
    }

    /// Sends a command that needs a reply, unless one is already in flight.
    pub(super) fn request(&mut self, cmd: Command, label: &'static str) -> Vec<Command> {
        if self.model.is_none() {
            self.say("no model loaded yet");
            return vec![];
        }
        if self.is_busy() {
            self.say("busy: one step at a time, wait for the model");
            return vec![];
        }
        self.busy = Busy::Working(label);
        vec![cmd]
    }

    fn force_candidate(&mut self, i: usize) -> Vec<Command> {
        let Some(token_id) = self.candidates().get(i).map(|c| c.token.id) else {
            self.say("no such candidate");
            return vec![];
        };
        self.selected = i;
        self.request(Command::Force { token_id }, "forcing")
    }

    fn move_selection(&mut self, up: bool) {
        let (index, len) = match self.mode {
            Mode::Search => (&mut self.search_selected, self.search_hits.len()),
            Mode::Sampler => (&mut self.sampler_field, FIELDS.len()),
            Mode::Branches => {
                let len = self.session.as_ref().map_or(0, |s| s.branches.len());
                (&mut self.branch_selected, len)
            }
            _ => {
                // Only rows on screen can be selected (the engine may send more than fit).
                let rows = layout::candidate_rows(
                    layout::Areas::compute(self).distribution,
                    self.show_chain,
                );
                let len = self.candidates().len().min(rows.height as usize);
                (&mut self.selected, len)
            }
        };
        *index = if up {
            index.saturating_sub(1)
        } else {
            (*index + 1).min(len.saturating_sub(1))
        };
    }

    fn cycle_head(&mut self, up: bool) {
        let n = self.n_head();
        // The ring is: mean, head 0, head 1, … head n-1, mean …
        let pos = match self.head {
            HeadSel::Mean => 0,
            HeadSel::Head(h) => h + 1,
        };
        let next = (pos + if up { 1 } else { n }) % (n + 1);
        self.head = if next == 0 {
            HeadSel::Mean
        } else {
            HeadSel::Head(next - 1)
        };
    }

    fn open_text(&mut self, mode: Mode, input: String) {
        self.mode = mode;
        self.input = input;
        self.search_hits.clear();
        self.search_selected = 0;
    }

    /// After the typed text changed: a search asks again (no forward pass, so no busy flag).
    fn after_edit(&mut self) -> Vec<Command> {
        if self.mode != Mode::Search {
            return vec![];
        }
        if self.input.is_empty() {
            self.search_hits.clear();
            return vec![];
        }
        vec![Command::Search {
            query: self.input.clone(),
            limit: SEARCH_LIMIT,
        }]
    }

    fn submit(&mut self) -> Vec<Command> {
        let mode = self.mode;
        let text = std::mem::take(&mut self.input);
        self.mode = Mode::Normal;
        match mode {
            Mode::Search => match self.search_hits.get(self.search_selected) {
                Some(hit) => {
                    let token_id = hit.token.id;
                    self.search_hits.clear();
                    self.request(Command::Force { token_id }, "forcing")
                }
                None => {
                    self.say("no hit to force");
                    vec![]
                }
            },
            Mode::ForceText if !text.is_empty() => {
                self.request(Command::ForceText { text }, "teacher-forcing")
            }
            Mode::Prompt if !text.is_empty() => {
                self.prompt = text;
                let cmd = Command::Prefill {
                    prompt: self.prompt.clone(),
                    chat: self.chat,
                };
                self.request(cmd, "prefilling")
            }
            Mode::Branches => {
                let id = self
                    .session
                    .as_ref()
                    .and_then(|s| s.branches.get(self.branch_selected))
                    .map(|b| b.id);
                match id {
                    Some(id) => self.request(Command::SwitchBranch { id }, "switching branch"),
                    None => vec![],
                }
            }
            _ => vec![],
        }
    }

    fn toggle_chat(&mut self) -> Vec<Command> {
        if self.model.as_ref().is_some_and(|m| !m.has_chat_template) {
            self.say_error("this model has no chat template".into());
            return vec![];
        }
        let cmd = Command::Prefill {
            prompt: self.prompt.clone(),
            chat: !self.chat,
        };
        let cmds = self.request(cmd, "prefilling");
        if !cmds.is_empty() {
            self.chat = !self.chat;
        }
        cmds
    }

    /// A settings change re-ranks the current distribution: `SetSampler`, never a forward pass.
    pub(super) fn send_settings(&mut self) -> Vec<Command> {
        if self.is_busy() {
            self.settings_dirty = true;
            return vec![];
        }
        self.settings_dirty = false;
        self.busy = Busy::Working("re-ranking");
        vec![Command::SetSampler(self.settings.clone())]
    }

    fn on_tick(&mut self, now_ms: u64) -> Vec<Command> {
        self.now_ms = now_ms;
        let due = now_ms.saturating_sub(self.last_auto_ms) >= self.autoplay_interval_ms();
        if self.autoplay && due && !self.is_busy() && self.mode == Mode::Normal {
            self.last_auto_ms = now_ms;
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
