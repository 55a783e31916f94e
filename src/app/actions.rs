//! What each key's `Action` does once `update.rs` has sent it to its group: stepping and forcing, the
//! path (rewinds, comparisons, saving), the panels and views, the attention focus, the engine's
//! settings and the text boxes. Scrolling stays in `update.rs` beside the scroll it clamps.

use super::keymap::{self, Action, Mode};
use super::sampler_panel::{self, FIELDS};
use super::AUTOPLAY_INTERVALS_MS;
use super::{App, Busy, SidePanel};
use crate::protocol::{Command, SamplerSettings};

impl App {
    /// Handles quitting, stepping, autoplay, the candidate selection and forcing, and cancelling a read.
    pub(super) fn play_action(&mut self, action: Action) -> Vec<Command> {
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
            Action::Cancel if matches!(self.busy, Busy::Reading { .. }) => {
                self.say("cancelling: the old prompt and its tree stay");
                return vec![Command::Cancel];
            }
            // Not this group's (`dispatch` sends it elsewhere), or a `Cancel` with nothing to cancel.
            _ => {}
        }
        vec![]
    }

    /// Handles rewinding (one token, to the fork, to a clicked token), comparing paths and saving.
    pub(super) fn path_action(&mut self, action: Action) -> Vec<Command> {
        match action {
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
            Action::RewindTo(position) => return self.rewind_to(position),
            Action::OpenCompare => return self.compare_with_left(),
            Action::CompareBranch => return self.compare_with_selected(),
            Action::SaveSession => return self.save_session(),
            // Not this group's: `dispatch` sends it elsewhere.
            _ => {}
        }
        vec![]
    }

    /// Handles opening and switching panels and views: branches, sampler, help, the side panel, the
    /// chain, chat, and the hidden, predict and presenter modes.
    pub(super) fn panel_action(&mut self, action: Action) -> Vec<Command> {
        match action {
            Action::OpenBranches => {
                let branches = self.session.as_ref().map(|s| s.branches.as_slice());
                self.selection.branch = branches
                    .and_then(|b| b.iter().position(|b| b.current))
                    .unwrap_or(0);
                self.mode = Mode::Branches;
            }
            Action::OpenSampler => self.mode = Mode::Sampler,
            Action::ToggleChain => self.screen.show_chain = !self.screen.show_chain,
            Action::NextPanel => self.next_panel(),
            Action::ToggleChat => return self.toggle_chat(),
            Action::ToggleHelp => {
                self.mode = Mode::Help;
                self.screen.help_scroll = 0;
            }
            Action::ToggleHidden => self.toggle_hidden(),
            Action::ToggleJoinCard => self.toggle_join_card(),
            Action::ToggleBoard => self.toggle_board(),
            Action::TogglePredict => self.toggle_predict(),
            Action::ToggleDraft => self.toggle_draft(),
            Action::TogglePresenter => {
                self.presenter.on = !self.presenter.on;
                let state = if self.presenter.on { "on" } else { "off" };
                self.say(format!("presenter mode {state}"));
            }
            // Not this group's: `dispatch` sends it elsewhere.
            _ => {}
        }
        vec![]
    }

    /// Handles the next side panel: in presenter mode one more panel or none, else the next of the
    /// panels in turn (the A/B panel only with a model B).
    fn next_panel(&mut self) {
        let (b, d, c) = (
            self.has_model_b(),
            self.draft().is_some(),
            self.class.is_some(),
        );
        // The panels in turn; A/B only with a model B, the round only with a draft, the class only
        // in class mode.
        let after = |p: SidePanel| match p {
            SidePanel::Attention => Some(SidePanel::Timing),
            SidePanel::Timing => Some(SidePanel::Repetition),
            SidePanel::Repetition if b => Some(SidePanel::ModelB),
            SidePanel::Repetition | SidePanel::ModelB if d => Some(SidePanel::Round),
            SidePanel::Repetition | SidePanel::ModelB | SidePanel::Round if c => {
                Some(SidePanel::Class)
            }
            SidePanel::Repetition | SidePanel::ModelB | SidePanel::Round | SidePanel::Class => None,
        };
        if self.presenter.on {
            self.presenter.side = match self.presenter.side {
                None => Some(SidePanel::Attention),
                Some(p) => after(p),
            }
        } else {
            self.screen.side = after(self.screen.side).unwrap_or(SidePanel::Attention);
        }
    }

    /// Handles what the attention panel focuses on: the layer, the head and how far back its key
    /// columns scroll.
    pub(super) fn focus_action(&mut self, action: Action) -> Vec<Command> {
        match action {
            Action::PrevLayer | Action::NextLayer => {
                let n = self.n_layer().max(1);
                let up = action == Action::NextLayer;
                self.focus.layer = (self.focus.layer + if up { 1 } else { n - 1 }) % n;
            }
            Action::PrevHead | Action::NextHead => self.cycle_head(action == Action::NextHead),
            Action::OlderKeys | Action::NewerKeys if self.screen.map.areas.attention.is_none() => {
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
            // Not this group's: `dispatch` sends it elsewhere.
            _ => {}
        }
        vec![]
    }

    /// Handles the settings the engine runs by: the sampler's fields and the KV cache.
    pub(super) fn setting_action(&mut self, action: Action) -> Vec<Command> {
        match action {
            Action::Decrease | Action::Increase => {
                let before = self.sampler.settings.clone();
                let setting = FIELDS[self.sampler.field];
                let up = action == Action::Increase;
                let limit = sampler_panel::adjust(setting, &mut self.sampler.settings, up);
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
            Action::ToggleKvCache => {
                let on = !self.kv_cache_on();
                let label = if on {
                    "rebuilding the KV cache"
                } else {
                    "dropping the KV cache"
                };
                return self.request(Command::SetKvCache { on }, label);
            }
            // Not this group's: `dispatch` sends it elsewhere.
            _ => {}
        }
        vec![]
    }

    /// Handles the text boxes: opening one, closing it, submitting it, and editing the text in it.
    pub(super) fn text_action(&mut self, action: Action) -> Vec<Command> {
        match action {
            // A lesson question that is not about a token is answered in a box of its own.
            Action::OpenSearch if self.open_answer() => {}
            Action::OpenSearch => self.open_text(Mode::Search, String::new()),
            Action::OpenForceText => self.open_text(Mode::ForceText, String::new()),
            Action::OpenPrompt => self.open_text(Mode::Prompt, self.prompt.text.clone()),
            Action::OpenReference => self.open_text(Mode::Reference, String::new()),
            Action::Close => {
                if self.mode == Mode::Compare && self.lab.reference {
                    self.say_free_run_kept();
                }
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
            // Not this group's: `dispatch` sends it elsewhere.
            _ => {}
        }
        vec![]
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
}
