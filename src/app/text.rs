//! Text input in `App`: opening a text box, typing and pasting into it, and what Enter does in each
//! mode (force a search hit, teacher-force typed text, read a new prompt, switch branch).

use super::keymap::Mode;
use super::{App, SEARCH_LIMIT};
use crate::protocol::Command;

impl App {
    pub(super) fn open_text(&mut self, mode: Mode, input: String) {
        self.mode = mode;
        self.input.text = input;
        self.input.hits.clear();
        self.input.preview.clear();
        self.input.selected = 0;
    }

    /// After the typed text changed: a search asks again, and forced text asks how it will tokenise.
    /// Neither runs a forward pass, so neither holds the app busy.
    pub(super) fn after_edit(&mut self) -> Vec<Command> {
        let text = self.input.text.clone();
        match self.mode {
            Mode::Search if text.is_empty() => self.input.hits.clear(),
            Mode::Search => {
                return vec![Command::Search {
                    query: text,
                    limit: SEARCH_LIMIT,
                }]
            }
            Mode::ForceText if text.is_empty() => self.input.preview.clear(),
            Mode::ForceText => return vec![Command::Tokenize { text }],
            _ => {}
        }
        vec![]
    }

    pub(super) fn submit(&mut self) -> Vec<Command> {
        let mode = self.mode;
        if self.is_busy() && mode != Mode::Branches {
            // Keep what was typed: Enter again once the model is free.
            let key = super::keymap::hint_key(mode, super::Action::Submit);
            self.say(format!("busy: wait for the model, then press {key} again"));
            return vec![];
        }
        let text = std::mem::take(&mut self.input.text);
        self.mode = Mode::Normal;
        match mode {
            Mode::Search => match self.input.hits.get(self.input.selected) {
                Some(hit) => {
                    let token_id = hit.token.id;
                    self.input.hits.clear();
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
            Mode::Prompt if !text.is_empty() => self.new_prompt(text, self.prompt.chat),
            Mode::Branches => {
                let id = self
                    .session
                    .as_ref()
                    .and_then(|s| s.branches.get(self.selection.branch))
                    .map(|b| b.id);
                match id {
                    Some(id) => self.request(Command::SwitchBranch { id }, "switching branch"),
                    None => vec![],
                }
            }
            _ => vec![],
        }
    }

    /// Pasted text goes into the box as one edit. A prompt keeps its line breaks (few-shot prompts are
    /// lines); a search or a forced text is one line.
    pub(super) fn paste(&mut self, text: &str) -> Vec<Command> {
        let keep_newlines = self.mode == Mode::Prompt;
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.input.text.extend(
            text.chars()
                .filter(|&c| !c.is_control() || (keep_newlines && c == '\n')),
        );
        self.after_edit()
    }
}
