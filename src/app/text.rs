//! Text input in `App`: opening a text box, typing, moving the cursor and pasting in it (through
//! [`Editor`]), and what Enter does in each mode (force a search hit or, while a guess is awaited,
//! send the guess to be scored; teacher-force typed text, read a new prompt, switch branch).

use super::editor::Editor;
use super::keymap::{Action, Mode};
use super::{App, SEARCH_LIMIT};
use crate::protocol::{Candidate, Command};

impl App {
    pub(super) fn open_text(&mut self, mode: Mode, input: String) {
        self.mode = mode;
        self.input.editor = Editor::new(input);
        self.input.hits.clear();
        self.input.preview.clear();
        self.input.selected = 0;
        self.input.picked = false;
    }

    /// The search hits in the order the box lists them: by match, or by probability when asked for
    /// (`tab`), but never while a guess is awaited (the order would give the answer away).
    pub fn search_hits(&self) -> Vec<&Candidate> {
        let by_prob = self.input.by_prob && !self.awaiting_guess();
        self.input.hits_in_order(by_prob)
    }

    /// The highlighted hit, as the box lists it.
    pub fn selected_hit(&self) -> Option<&Candidate> {
        self.search_hits().get(self.input.selected).copied()
    }

    /// An editing key in a text box. Only a change to the text asks the engine anything; a cursor move
    /// does not.
    pub(super) fn edit(&mut self, action: Action) -> Vec<Command> {
        let e = &mut self.input.editor;
        let changed = match action {
            Action::CursorLeft => {
                e.left();
                false
            }
            Action::CursorRight => {
                e.right();
                false
            }
            Action::LineStart => {
                e.home();
                false
            }
            Action::LineEnd => {
                e.end();
                false
            }
            Action::DeleteChar => e.backspace(),
            Action::DeleteForward => e.delete(),
            Action::DeleteToLineStart => e.delete_to_line_start(),
            Action::DeleteWordBack => e.delete_word_back(),
            Action::NewLine => {
                e.insert('\n');
                true
            }
            _ => false,
        };
        if changed {
            self.after_edit()
        } else {
            vec![]
        }
    }

    /// A typed character goes in at the cursor.
    pub(super) fn type_char(&mut self, c: char) -> Vec<Command> {
        self.input.editor.insert(c);
        self.after_edit()
    }

    /// After the typed text changed: a search asks again, and forced text asks how it will tokenise.
    /// Neither runs a forward pass, so neither holds the app busy.
    pub(super) fn after_edit(&mut self) -> Vec<Command> {
        // A hit picked for the old text is not one for the new.
        self.input.picked = false;
        let text = self.input.text().to_string();
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
        let text = self.input.editor.take();
        self.mode = Mode::Normal;
        match mode {
            // A guess for predict-then-reveal: scored, then revealed; never forced.
            Mode::Search if self.awaiting_guess() => self.guess(&text),
            Mode::Search => match self.selected_hit().cloned() {
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
            Mode::Answer => self.submit_answer(text),
            Mode::Reference if !text.is_empty() => {
                self.lab.reference = true;
                self.request(Command::Reference { text }, "teacher-forcing the reference")
            }
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
            // An empty box had closed without a word, as if the Enter had been taken.
            Mode::Prompt | Mode::ForceText | Mode::Reference => {
                self.say("nothing typed, so nothing changed: type some text before Enter");
                vec![]
            }
            _ => vec![],
        }
    }

    /// Pasted text goes into the box at the cursor as one edit. A prompt keeps its line breaks (few-shot
    /// prompts are lines); a search or a forced text is one line.
    pub(super) fn paste(&mut self, text: &str) -> Vec<Command> {
        let keep_newlines = self.mode == Mode::Prompt;
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let text: String = text
            .chars()
            .filter(|&c| !c.is_control() || (keep_newlines && c == '\n'))
            .collect();
        self.input.editor.insert_str(&text);
        self.after_edit()
    }
}
