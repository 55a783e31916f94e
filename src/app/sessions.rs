//! Sessions in the TUI: `--load FILE` asks the engine for the saved session instead of the first
//! prefill, and `S` saves the session (with the class's answers) to a file named after the prompt and
//! the time.

use super::App;
use crate::protocol::Command;
use std::path::PathBuf;

/// A session to open at start, and what saving needs to name files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionFiles {
    /// `--load FILE`.
    pub load: Option<PathBuf>,
    /// `--ignore-model-mismatch`.
    pub ignore_model_mismatch: bool,
    /// Wall-clock seconds (Unix) when the app started: `Msg::Tick`'s clock counts from there.
    pub started_unix_s: u64,
    /// Saves asked for so far.
    pub saves: usize,
    /// The last file name asked for (a second save in the same second gets a suffix).
    pub last_save: Option<PathBuf>,
}

impl App {
    /// Opens `path` (a saved session) once the model is loaded, instead of reading the prompt.
    pub fn with_session_files(mut self, files: SessionFiles) -> App {
        self.session_files = files;
        self
    }

    /// The first request once the model is loaded: the saved session, or the prompt.
    pub(super) fn first_request(&mut self) -> Vec<Command> {
        match self.session_files.load.clone() {
            Some(path) => {
                let label = format!("opening the session {}", path.display());
                if self.session_files.ignore_model_mismatch {
                    self.say(format!(
                        "warning: --ignore-model-mismatch: {} opens even if it was saved with another model",
                        path.display()
                    ));
                }
                let cmd = Command::Load {
                    path,
                    ignore_model_mismatch: self.session_files.ignore_model_mismatch,
                };
                self.request(cmd, &label)
            }
            None => {
                let cmd = Command::Prefill {
                    prompt: self.prompt.text.clone(),
                    chat: self.prompt.chat,
                };
                self.request(cmd, super::requests::READING_PROMPT)
            }
        }
    }

    /// `S`: saves the session to a new file in the current folder.
    pub(super) fn save_session(&mut self) -> Vec<Command> {
        if self.session.is_none() {
            self.say("nothing to save yet");
            return vec![];
        }
        let path = self.save_file_name();
        let save = Command::Save {
            path: path.clone(),
            answers: self.predict.answers.clone(),
        };
        let cmds = self.request(save, "saving the session");
        if !cmds.is_empty() {
            self.session_files.saves += 1;
            self.session_files.last_save = Some(path);
        }
        cmds
    }

    /// `nexttoken-<first words of the prompt>-<unix seconds>.json`.
    pub fn save_file_name(&self) -> PathBuf {
        let words: Vec<String> = self
            .prompt
            .text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .take(4)
            .map(|w| w.to_lowercase().chars().take(12).collect())
            .collect();
        let slug = if words.is_empty() {
            "session".to_string()
        } else {
            words.join("-")
        };
        let secs = self.session_files.started_unix_s + self.now_ms / 1000;
        let name = PathBuf::from(format!("nexttoken-{slug}-{secs}.json"));
        if self.session_files.last_save.as_ref() == Some(&name) {
            return PathBuf::from(format!(
                "nexttoken-{slug}-{secs}-{}.json",
                self.session_files.saves + 1
            ));
        }
        name
    }
}
