//! Folding the engine's replies (`Event`s) into the app: loaded, progress, synced, stepped, search hits,
//! failures. A closing event (see `protocol`) frees the app for the next command.

use super::keymap::Mode;
use super::{App, Busy};
use crate::protocol::{Command, Event, Failure, ModelInfo, StepReport, TokenKind};

impl App {
    pub(super) fn on_event(&mut self, event: Event) -> Vec<Command> {
        let closing = event.is_closing();
        // A new path while the lens or the head map is open: they look again once the engine is free.
        let moved = matches!(
            event,
            Event::Synced(_)
                | Event::Stepped(_)
                | Event::Rounded { .. }
                | Event::Compared { view: Some(_), .. }
                | Event::LessonStep(_)
        );
        let mut lesson_compare = false;
        match event {
            Event::Loading(what) => self.busy = Busy::Loading(what),
            // For class mode's room (the terminal loop hands it over): nothing of the app's.
            Event::Vocabulary(_) => return vec![],
            Event::Loaded(info) => return self.on_loaded(info),
            Event::Prefilling { done, total } => self.on_prefilling(done, total),
            Event::Forcing { done, total } => {
                self.busy = Busy::Working(format!("teacher-forcing: {done} of {total} tokens"))
            }
            Event::Synced(view) => self.adopt(view),
            Event::Compared { comparison, view } => {
                if let Some(view) = view {
                    self.adopt(view);
                }
                self.on_compared(*comparison);
            }
            Event::Stepped(report) => self.on_stepped(report),
            Event::Rounded { round, view } => self.on_rounded(*round, *view),
            Event::LessonStep(step) => lesson_compare = self.on_lesson_step(*step),
            Event::Tokenized { text, tokens } => {
                if self.mode == Mode::ForceText && text == self.input.text() {
                    self.input.preview = tokens;
                }
                return vec![];
            }
            Event::SearchResults { query, hits } => {
                if self.mode == Mode::Search && query == self.input.text() {
                    self.input.hits = hits;
                    self.input.selected = 0;
                }
                // A search is not a request: it never held the app busy.
                return vec![];
            }
            Event::GuessScored(score) => self.on_guess_scored(*score),
            Event::TokensRanked(ranks) => self.on_ranked(*ranks),
            Event::Inspected(ins) => self.on_inspected(*ins),
            Event::Saved { path, bytes } => self.say(format!(
                "saved the session to {} ({:.1} KB)",
                path.display(),
                bytes as f64 / 1024.0
            )),
            Event::Failed { what, reason } => {
                self.on_failed(what, reason);
                if what == Failure::Search {
                    return vec![];
                }
            }
        }
        if closing {
            return self.after_closing(moved, lesson_compare);
        }
        vec![]
    }

    /// Handles the model loaded: says so, then opens the lesson or asks for the first prompt.
    fn on_loaded(&mut self, info: ModelInfo) -> Vec<Command> {
        self.say(format!("loaded {} in {:.0} ms", info.name, info.load_ms));
        if self.prompt.chat && !info.has_chat_template {
            // A base model has no turns to wrap the prompt in: reading it as plain text beats a
            // screen stuck on an error that `c` could not turn off.
            self.prompt.chat = false;
            self.say_error(
                "--chat ignored: this base model has no chat template, so the prompt is read as plain text"
                    .into(),
            );
        }
        self.model = Some(info);
        self.busy = Busy::Idle;
        if let Some(cmds) = self.open_lesson() {
            return cmds;
        }
        self.first_request()
    }

    /// Handles progress in reading a prompt: `done` of `total` tokens, since the read began.
    fn on_prefilling(&mut self, done: usize, total: usize) {
        let since_ms = match self.busy {
            Busy::Reading { since_ms, .. } => since_ms,
            _ => self.now_ms,
        };
        self.busy = Busy::Reading {
            done,
            total,
            since_ms,
        };
    }

    /// Handles one step: folds it into the session, back to the newest line, and autoplay stops at a
    /// special token.
    fn on_stepped(&mut self, report: StepReport) {
        if let Some(s) = self.session.as_mut() {
            s.apply(&report);
        }
        self.past_end_confirmed = false;
        // A new token is what the user wants to see: back to the newest line.
        self.screen.scroll_back = 0;
        if self.autoplay.on && report.committed.token.kind == TokenKind::Special {
            self.autoplay.on = false;
            self.say(format!(
                "autoplay stopped at {}",
                report.committed.token.text
            ));
        }
        self.selection.candidate = 0;
        self.pause_when_unsure();
    }

    /// Handles a failed command: says why and stops autoplay and queued steps; a failed search leaves
    /// a waiting settings change waiting.
    fn on_failed(&mut self, what: Failure, reason: String) {
        self.say_error(format!("{}: {reason}", what.headline()));
        self.autoplay.on = false;
        self.queued_steps = 0;
        if what != Failure::Search {
            self.sampler.dirty = false;
        }
        if what == Failure::Guess {
            self.class_rank_failed();
        }
    }

    /// Handles the end of a closing reply: what waited goes out, else the comparison a lesson step
    /// asked for, else a fresh look for the lens or the head map when the path moved.
    fn after_closing(&mut self, moved: bool, lesson_compare: bool) -> Vec<Command> {
        let cmds = self.finish();
        if cmds.is_empty() && lesson_compare {
            return self.compare_with_left();
        }
        if cmds.is_empty() && moved {
            return self.refresh_inspection();
        }
        cmds
    }

    /// A closing reply arrived: the engine is free. A settings change that waited is sent now, then a
    /// queued step.
    fn finish(&mut self) -> Vec<Command> {
        self.busy = Busy::Idle;
        if self.sampler.dirty {
            return self.send_settings();
        }
        if self.queued_steps > 0 {
            self.queued_steps -= 1;
            return self.step();
        }
        vec![]
    }
}

impl App {
    /// Replaces the app's copy of the session with the engine's whole view.
    pub(super) fn adopt(&mut self, view: crate::protocol::SessionView) {
        if !self.sampler.dirty {
            self.sampler.settings = view.settings.clone();
        }
        // A loaded session or a lesson read its own prompt: the prompt box starts from it.
        if let Some((text, chat)) = &view.typed_prompt {
            self.prompt.text = text.clone();
            self.prompt.chat = *chat;
        }
        let sel = &mut self.selection;
        sel.candidate = sel
            .candidate
            .min(view.next.candidates.len().saturating_sub(1));
        sel.branch = sel.branch.min(view.branches.len().saturating_sub(1));
        self.focus.layer = self
            .focus
            .layer
            .min(view.attention.n_layer.saturating_sub(1));
        // The first view with model B beside it opens the A/B panel: that is what --model-b asked for.
        if self.session.is_none() && view.ab.is_some() {
            self.screen.side = super::SidePanel::ModelB;
        }
        // A new prompt is a new text: the speculative rounds added up so far were on another one
        // (the speculative lesson's "fewer than 7 in 10 kept here" had stood beside a tally that
        // still held the counting rounds, all kept).
        fn prompt(v: &crate::protocol::SessionView) -> impl Iterator<Item = u32> + '_ {
            v.tokens.iter().take(v.prompt_len).map(|t| t.token.id)
        }
        if self
            .session
            .as_ref()
            .is_some_and(|old| !prompt(old).eq(prompt(&view)))
        {
            self.speculative.tally = Default::default();
        }
        // A draft loaded with the model (`--draft`) does nothing until `d`: the first view says so.
        if let (None, None, Some(d)) = (&self.session, &self.lesson, &view.draft) {
            let key =
                super::keymap::hint_key(super::keymap::Mode::Normal, super::Action::ToggleDraft);
            self.say(format!(
                "draft {} loaded: {key} turns speculative rounds on, then {} runs one",
                d.label,
                super::keymap::hint_key(super::keymap::Mode::Normal, super::Action::Step)
            ));
        }
        self.take_saved_answers(&view);
        // A view carries the count of passes at its last text pass; the lens and the head map ran
        // some since (`on_inspected`): a sampler change's view had taken the status bar's passes
        // back from 5 to 3. The engine's count only grows.
        let mut view = view;
        if let Some(old) = &self.session {
            let seen = old.last_pass.forward_passes;
            view.last_pass.forward_passes = view.last_pass.forward_passes.max(seen);
        }
        self.session = Some(view);
        self.screen.scroll_back = 0;
    }
}
