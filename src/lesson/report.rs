//! What running a lesson step did, as plain data: the TUI shows it in the narration panel and the
//! headless checker prints it. Nothing here touches the engine, so it crosses the channel as it is.

use super::format::PanelSpec;

/// Something only the TUI does.
#[derive(Debug, Clone, PartialEq)]
pub enum TuiAction {
    Panel(PanelSpec),
    /// A predict-then-reveal question: hide the distribution until the class has guessed.
    Ask(String),
}

/// How one action went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Done on the session.
    Done,
    /// Left to the TUI.
    TuiOnly,
    /// An `expect` check that held.
    Passed,
    /// An `expect` check that did not hold, or an action the session refused.
    Failed,
}

/// One line of a step's report: an action (or one check of an `expect`) and what was observed.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The line of the action in the lesson file.
    pub line: usize,
    pub what: String,
    pub observed: String,
    pub status: Status,
}

/// What running one lesson step did.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRun {
    /// 0-based step index.
    pub index: usize,
    pub outcomes: Vec<Outcome>,
    pub tui: Vec<TuiAction>,
}

impl StepRun {
    /// The first check that failed, or the action the session refused.
    pub fn failure(&self) -> Option<&Outcome> {
        self.outcomes.iter().find(|o| o.status == Status::Failed)
    }
}
