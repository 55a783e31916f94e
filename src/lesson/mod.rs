//! Lessons as plain files: guided, repeatable demos that check their own teaching claims.
//!
//! The lesson as data (the format, `expect` claims, questions, what a step did) is in
//! [`crate::protocol::lesson`], so the TUI can hold it without this module; here is what runs it.
//!
//! | file | owns |
//! |---|---|
//! | `parse.rs` | TOML into a `Lesson`; [`LessonError`] names the file, line, column and field |
//! | `builtin.rs` | the nine built-in lessons, compiled in from `assets/lessons/` |
//! | `play.rs` | stepping with the stop rules (end of text, `autoplay`'s conditions), an action as a report line |
//! | `run.rs` | the [`Runner`]: a step's actions as calls on the engine's `Session` (shared with the TUI) |
//! | `track.rs` | a lesson open in the TUI, on the engine thread: the next step, or a replay to any step |
//! | `measure.rs` | what a number question measures: the prefill speed-up, token counts, the loop, entropy, divergence |
//! | `answer.rs` | the model's answer to a question (`ask`), measured on the session |
//! | `expect/` | evaluating an `expect` on the real model, with the value observed |
//! | `lint.rs` | a narration that makes a claim (a number, a quoted token, a trend) must carry an `expect` |
//! | `told.rs` | a question whose answer the class can read before it answers (title, narration above `---`) |
//! | `written_for.rs` | whether the model loaded is one the lesson was written for (its `models`) |
//! | `check.rs` | `nexttoken lesson list` and `nexttoken lesson check NAME\|PATH` |
//!
//! The format is documented in docs/LESSONS.md.

pub mod answer;
mod builtin;
pub mod check;
pub mod expect;
pub mod lint;
mod locate;
pub mod measure;
mod parse;
mod play;
pub mod run;
mod told;
pub mod track;
pub mod written_for;

pub use crate::protocol::lesson::{
    Action, At, Expect, Given, Lesson, ModelAnswer, Outcome, Panel, PanelSpec, Question,
    QuestionKind, Status, Step, StepRun, TuiAction,
};
pub use builtin::{builtin, BUILTINS};
pub use parse::{parse, LessonError};
pub use run::Runner;
pub use track::Track;

/// A lesson by built-in name, or else by path to a TOML file.
pub fn load(name_or_path: &str) -> Result<Lesson, LessonError> {
    if let Some(l) = builtin(name_or_path) {
        return l;
    }
    let path = std::path::Path::new(name_or_path);
    let text = std::fs::read_to_string(path).map_err(|e| LessonError {
        file: name_or_path.to_string(),
        line: None,
        col: None,
        field: None,
        step: None,
        message: if path.extension().is_none() && !path.exists() {
            let names: Vec<&str> = BUILTINS.iter().map(|(n, _)| *n).collect();
            format!(
                "no built-in lesson by this name and no such file (built-ins: {})",
                names.join(", ")
            )
        } else if e.kind() == std::io::ErrorKind::NotFound {
            "no such file: check the path, or give a built-in lesson's name (`nexttoken lesson list`)"
                .to_string()
        } else {
            format!("cannot read the file: {e}")
        },
    })?;
    let name = path.file_stem().map_or(name_or_path.to_string(), |s| {
        s.to_string_lossy().into_owned()
    });
    parse(&name, name_or_path, &text)
}
