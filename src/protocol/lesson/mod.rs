//! A lesson as plain data: the file format, what an `expect` claims, the questions a step asks and what
//! a step did. The lesson runner (the `lesson` module) fills these in on the engine thread; the TUI holds
//! and shows them; nothing here touches the engine.

pub mod expect;
pub mod format;
pub mod question;
pub mod report;

pub use expect::{AttentionExpect, Check, Expect};
pub use format::{Action, At, Lesson, Panel, PanelSpec, Step};
pub use question::{Answer, Given, ModelAnswer, Question, QuestionKind};
pub use report::{Outcome, Status, StepRun, TuiAction};
