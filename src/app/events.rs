//! Folding the engine's replies (`Event`s) into the app: loaded, synced, stepped, search hits, failures.

use super::keymap::Mode;
use super::{App, Busy};
use crate::protocol::{Command, Event, StepReport, TokenKind};

impl App {
    pub(super) fn on_event(&mut self, event: Event) -> Vec<Command> {
        match event {
            Event::Loading(what) => self.busy = Busy::Loading(what),
            Event::Loaded(info) => {
                self.say(format!("loaded {} in {:.0} ms", info.name, info.load_ms));
                self.model = Some(info);
                self.busy = Busy::Idle;
                let cmd = Command::Prefill {
                    prompt: self.prompt.clone(),
                    chat: self.chat,
                };
                return self.request(cmd, "prefilling");
            }
            Event::Synced(view) => {
                if !self.settings_dirty {
                    self.settings = view.settings.clone();
                }
                self.kv_cache = view.last_pass.kv_cache_on;
                let still_last =
                    self.last_step.as_ref().map(|s| &s.committed) == view.tokens.last();
                if !still_last {
                    self.last_step = None;
                }
                self.selected = self
                    .selected
                    .min(view.next.candidates.len().saturating_sub(1));
                self.branch_selected = self
                    .branch_selected
                    .min(view.branches.len().saturating_sub(1));
                self.layer = self.layer.min(view.attention.n_layer.saturating_sub(1));
                self.session = Some(view);
                return self.finish();
            }
            Event::Stepped(report) => {
                self.fold_step(report);
                return self.finish();
            }
            Event::SearchResults { query, hits } => {
                if self.mode == Mode::Search && query == self.input {
                    self.search_hits = hits;
                    self.search_selected = 0;
                }
            }
            Event::Failed(reason) => {
                if matches!(self.busy, Busy::Loading(_)) {
                    self.say_error(format!("could not load the model: {reason}"));
                } else {
                    self.say_error(reason);
                }
                self.busy = Busy::Idle;
                self.autoplay = false;
                self.settings_dirty = false;
            }
        }
        vec![]
    }

    /// Adds one step's report to the session copy, as if the engine had sent a whole new view.
    fn fold_step(&mut self, report: StepReport) {
        if let Some(s) = self.session.as_mut() {
            s.tokens.truncate(report.committed.position);
            s.tokens.push(report.committed.clone());
            s.next = report.next.clone();
            s.attention = report.attention.clone();
            s.last_pass = report.pass.clone();
            s.decode_ms.push(report.pass.ms);
        }
        if self.autoplay && report.committed.token.kind == TokenKind::Special {
            self.autoplay = false;
            self.say(format!(
                "autoplay stopped at {}",
                report.committed.token.text
            ));
        }
        self.selected = 0;
        self.last_step = Some(report);
    }

    /// A reply arrived: the engine is free. A settings change that waited is sent now.
    fn finish(&mut self) -> Vec<Command> {
        self.busy = Busy::Idle;
        if self.settings_dirty {
            return self.send_settings();
        }
        vec![]
    }
}
