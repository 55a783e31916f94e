//! Asking the engine for work: one command in flight at a time, a few step presses queued while one
//! runs, and a second press to confirm what would throw work away or step past the end of a turn.

use super::keymap::{self, Action, Mode};
use super::{App, Busy};
use crate::protocol::Command;

/// Step presses kept while a step runs (more are refused with a word).
pub const MAX_QUEUED_STEPS: usize = 3;

/// What the spinner says while a prompt is read, before the engine's first progress event.
pub const READING_PROMPT: &str = "reading the prompt";

impl App {
    /// Whether a prompt is being read: until it is, the path and candidates on screen are the old
    /// prompt's (or none).
    pub fn reading_prompt(&self) -> bool {
        match &self.busy {
            Busy::Reading { .. } => true,
            Busy::Working(label) => label == READING_PROMPT,
            _ => false,
        }
    }

    /// While a prompt is read, the keys that act on the path on screen (step, pick, rewind, search,
    /// compare, look inside, lesson steps) are refused with a word why: the screen is the old
    /// prompt's, and a step queued now would step the new one. Returns whether `action` was refused.
    pub(super) fn refused_while_reading(&mut self, action: Action) -> bool {
        use Action as A;
        if !self.reading_prompt() {
            return false;
        }
        let on_path = match action {
            A::Up | A::Down => matches!(self.mode, Mode::Normal | Mode::Branches),
            A::Submit => self.mode == Mode::Branches,
            A::Step
            | A::ToggleAutoplay
            | A::Accept
            | A::Pick(_)
            | A::OpenSearch
            | A::OpenForceText
            | A::OpenReference
            | A::Rewind
            | A::RewindToFork
            | A::RewindTo(_)
            | A::OpenBranches
            | A::CompareBranch
            | A::OpenCompare
            | A::SaveSession
            | A::ToggleKvCache
            | A::ToggleChat
            | A::OpenLens
            | A::OpenHeadMap
            | A::Reinspect
            | A::NextLessonStep
            | A::PrevLessonStep
            | A::BackToLesson => true,
            _ => false,
        };
        if on_path {
            let esc = keymap::hint_key(Mode::Normal, Action::Cancel);
            self.say(if action == A::Step {
                format!(
                    "reading the new prompt: no step queued; step when it is read ({esc} stops it)"
                )
            } else {
                format!(
                    "reading the new prompt: the screen shows the old one; wait, or {esc} stops it"
                )
            });
        }
        on_path
    }

    /// One step, unless the model has just ended its turn: stepping past an end-of-sequence token is a
    /// deliberate choice, so the first press says so and the second one steps. A press while a step
    /// runs is queued (up to `MAX_QUEUED_STEPS`) and sent when the reply comes.
    pub(super) fn step(&mut self) -> Vec<Command> {
        if let Some(end) = self.ended_with().map(str::to_string) {
            if !self.past_end_confirmed {
                self.past_end_confirmed = true;
                self.say(format!(
                    "the model ended its turn with {end}; press {} again to make it go on anyway",
                    keymap::hint_key(Mode::Normal, Action::Step)
                ));
                return vec![];
            }
        }
        if self.model.is_some() && self.is_busy() && self.session.is_some() {
            if self.queued_steps < MAX_QUEUED_STEPS {
                self.queued_steps += 1;
                self.say(format!(
                    "{} more queued",
                    crate::protocol::words::count(self.queued_steps, "step")
                ));
            } else {
                self.say(format!(
                    "busy: {MAX_QUEUED_STEPS} steps already queued; wait for the model"
                ));
            }
            return vec![];
        }
        self.past_end_confirmed = false;
        let (cmd, label) = self.step_command();
        self.request(cmd, label)
    }

    /// Sends a command that needs a reply, unless one is already in flight.
    pub(super) fn request(&mut self, cmd: Command, label: &str) -> Vec<Command> {
        if self.model.is_none() {
            self.say("no model loaded yet");
            return vec![];
        }
        if self.is_busy() {
            self.say("busy: one command at a time; wait for the model");
            return vec![];
        }
        self.busy = Busy::Working(label.to_string());
        vec![cmd]
    }

    pub(super) fn force_candidate(&mut self, i: usize) -> Vec<Command> {
        let Some(token_id) = self.candidates().get(i).map(|c| c.token.id) else {
            self.say("no such candidate");
            return vec![];
        };
        self.selection.candidate = i;
        self.request(Command::Force { token_id }, "forcing")
    }

    /// What a new prompt would drop: the branches with generated tokens, and the longest one's length.
    fn work_at_stake(&self) -> (usize, usize) {
        let Some(s) = self.session.as_ref() else {
            return (0, 0);
        };
        let branches = s.branches.iter().filter(|b| b.len > 0);
        (
            branches.clone().count(),
            branches.map(|b| b.len).max().unwrap_or(0),
        )
    }

    /// Whether `action` (a key of `mode`) may go ahead now: when it would drop generated work, the first press says what
    /// and the second (the same action) confirms; any other key cancels (see `on_key`). While a text box
    /// is open the status line shows this warning in place of the box's line (`ui/status.rs`).
    fn confirmed(&mut self, mode: Mode, action: Action, what: &str) -> bool {
        let (branches, longest) = self.work_at_stake();
        if branches == 0 || self.confirm == Some(action) {
            self.confirm = None;
            return true;
        }
        self.confirm = Some(action);
        // The key of the mode the action is pressed in (the editor has closed by now).
        let key = keymap::hint_key(mode, action);
        // Fits 80 columns, the key to press included (the status line is one line); any other key
        // then says "kept as it was".
        let noun = if branches == 1 { "branch" } else { "branches" };
        self.say(format!(
            "{what} drops {branches} {noun} (longest {longest} tokens): press {key} again to go ahead"
        ));
        false
    }

    /// Reads `text` as a new prompt (a new tree), after a confirming second press if work would go.
    pub(super) fn new_prompt(&mut self, text: String, chat: bool) -> Vec<Command> {
        if !self.confirmed(Mode::Prompt, Action::Submit, "new prompt") {
            // Stay in the editor with the text, so the second Enter confirms it.
            self.mode = Mode::Prompt;
            self.input.editor = super::editor::Editor::new(text);
            return vec![];
        }
        self.read_prompt(text, chat)
    }

    fn read_prompt(&mut self, text: String, chat: bool) -> Vec<Command> {
        let cmd = Command::Prefill {
            prompt: text.clone(),
            chat,
        };
        let cmds = self.request(cmd, READING_PROMPT);
        if !cmds.is_empty() {
            self.prompt.text = text;
            self.prompt.chat = chat;
        }
        cmds
    }

    pub(super) fn toggle_chat(&mut self) -> Vec<Command> {
        // Turning chat off is always allowed; on, only where the model has a template.
        if !self.prompt.chat && self.model.as_ref().is_some_and(|m| !m.has_chat_template) {
            self.say_error("this model has no chat template: a base model continues text, it does not take turns".into());
            return vec![];
        }
        let chat_switch = if self.prompt.chat {
            "chat off"
        } else {
            "chat on"
        };
        if !self.confirmed(Mode::Normal, Action::ToggleChat, chat_switch) {
            return vec![];
        }
        self.read_prompt(self.prompt.text.clone(), !self.prompt.chat)
    }
}
